/* DWARF source lines and inline chains through libdw. See dwarf.h for the contract.
 *
 * Lookup: a sorted array of compile-unit address ranges (built once, lazily) finds the unit;
 * libdw's dwarf_getsrc_die() gives the line table row. The nesting of subprogram /
 * inlined_subroutine DIEs at the address is what dwarf_getscopes() would find (eu-addr2line
 * uses it, so both tools agree), but read from a scope index of the unit instead of walking
 * the unit's DIE tree at every address:
 *  - on the first lookup in a unit, one walk of its DIEs, the same walk as libdw's scope
 *    visitor (children of the scope-holding tags), records every DIE with address ranges
 *    below DIEs that all have ranges (a scope entry: DIE offset, parent entry, kind), then
 *    cuts the unit's addresses into intervals, each holding the innermost entry that
 *    dwarf_getscopes() picks there (first child in DIE order that contains the address, at
 *    every level). A lookup is a binary search, then parent links.
 *  - what dwarf_getscopes() returns also depends on the abstract origin of the deepest
 *    inlined scope (unreadable: -1, not met in its unit's walk: 0); each entry keeps that
 *    outcome. An origin in another unit is left to libdw for that address.
 *  - a unit whose walk fails (corrupt DWARF, an imported partial unit, too deep, too many
 *    overlapping ranges) is looked up the old way, with dwarf_getscopes() at every address,
 *    so answers and errors stay those of libdw.
 *  - indexes share a byte budget (DWARF_INDEX_BUDGET): building one past it drops the least
 *    recently used others; a unit whose index alone exceeds it is looked up the old way.
 * The chain is then read from the entries' DIEs the way eu-addr2line reads it.
 *
 * Every result is packed into one allocation (lines then strings) owned by its cache slot.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/cmp.h"
#include "base/file_map.h"
#include "base/safe_open.h"
#include "formats/elf_file.h"
#include "formats/demangle.h"
#include "formats/dwarf.h"
#include "formats/elf_symbols.h"

#define DWARF_DEFAULT_CACHE_CAP 4096
#define DWARF_MAX_CACHE_CAP ((size_t)1 << 24)
#define DWARF_MAX_UNIT_RANGES ((size_t)1 << 24)
/* Overlapping unit ranges are rare (LTO partitions); look this far back for a cover. */
#define DWARF_OVERLAP_SCAN 8
/* Bytes of scope indexes held at once, over all units of a file. */
#define DWARF_INDEX_BUDGET ((size_t)256 << 20)
/* DIE nesting a unit's walk follows; deeper units are looked up without an index. */
#define DWARF_MAX_SCOPE_DEPTH 1024
/* Ranges covering one address at once while a unit's intervals are cut (linker-dropped
 * functions all start at 0); more and the unit is looked up without an index.
 */
#define DWARF_MAX_ACTIVE_SCOPES ((size_t)1 << 15)

struct unit_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint32_t unit;   /* index in dwarf_file.units_idx */
};

enum scope_kind {
	SCOPE_FUNCTION = 1, /* subprogram, inlined_subroutine or entry_point */
	SCOPE_INLINED = 2,  /* inlined_subroutine */
};

/* What dwarf_getscopes() answers at an address whose innermost scope is a given entry; set
 * by the deepest inlined_subroutine at or above the entry.
 */
enum scope_status {
	SCOPES_FOUND,   /* the scopes (> 0) */
	SCOPES_NONE,    /* 0: that inlined scope's abstract origin is not met in its unit's walk */
	SCOPES_ERROR,   /* -1: that abstract origin is unreadable */
	SCOPES_FOREIGN, /* the origin is in another unit: libdw decides, at that address */
};

/* A DIE with address ranges whose every enclosing DIE (below the unit) has ranges too. */
struct scope_entry {
	Dwarf_Off off;  /* of the DIE */
	int32_t parent; /* entry of the enclosing DIE, -1 below the unit DIE */
	uint8_t kind;   /* enum scope_kind bits */
	uint8_t status; /* enum scope_status */
};

enum unit_state {
	UNIT_UNINDEXED, /* no index yet (or evicted) */
	UNIT_INDEXED,
	UNIT_SLOW, /* looked up through dwarf_getscopes() at every address */
};

/* The scope index of one compile unit. Entries are in DIE order (a parent before its
 * children); interval i is [iv_lo[i], iv_lo[i + 1]) and the last one holds no entry.
 */
struct unit_index {
	Dwarf_Off cu_off; /* offset of the unit's DIE */
	enum unit_state state;
	struct scope_entry *entries;
	uint64_t *iv_lo;  /* ascending */
	int32_t *iv_leaf; /* innermost entry on the interval, -1: none */
	size_t entry_cnt, iv_cnt;
	size_t index_sz;   /* bytes of the three arrays */
	uint64_t last_use; /* dwarf_file.use_clock at the last lookup */
};

struct cache_slot {
	uint64_t addr;
	struct dwarf_line *lines; /* one block: cnt lines then their strings; NULL if cnt <= 0 */
	size_t block_sz;
	int cnt; /* > 0 lines, < 0 cached -errno, 0 empty slot */
};

struct dwarf_file {
	int fd;       /* -1 for an in-memory image */
	void *mapped; /* guarded private mapping of fd (base/file_map.h), or NULL */
	size_t mapped_sz;
	void *image; /* owned copy, or NULL */
	size_t image_sz;
	char *path; /* for the symbol fallback; NULL for an image */
	Elf *elf;
	Dwarf *dbg;          /* NULL: no usable DWARF */
	struct elf_file *ef; /* opened on the first symbol fallback */
	struct elf_symbols *syms;
	bool syms_tried;
	struct unit_range *units;
	size_t unit_cnt, unit_cap;
	bool units_built;
	struct unit_index *units_idx; /* one per compile unit with ranges */
	size_t units_idx_cnt, units_idx_cap;
	size_t scope_index_sz; /* bytes of the built scope indexes, <= DWARF_INDEX_BUDGET */
	uint64_t use_clock;
	struct cache_slot *cache;
	size_t cache_cap; /* power of two */
	struct dwarf_opts opts;
	struct dwarf_stats stats;
};

/* One chain being built: names are borrowed from libdw/symbols or owned (demangled). */
struct chain {
	struct dwarf_line lines[DWARF_MAX_LINES];
	char *owned[DWARF_MAX_LINES];
	int cnt;
	char file_buf[4096]; /* the innermost file made absolute; lives until packing */
};

static size_t pow2_at_least(size_t n)
{
	size_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static struct dwarf_file *dwarf_file__alloc(const struct dwarf_opts *opts)
{
	struct dwarf_file *df = calloc(1, sizeof(*df));
	size_t cap = opts && opts->cache_cap ? opts->cache_cap : DWARF_DEFAULT_CACHE_CAP;

	if (!df)
		return NULL;
	df->fd = -1;
	if (opts)
		df->opts = *opts;
	if (cap > DWARF_MAX_CACHE_CAP)
		cap = DWARF_MAX_CACHE_CAP;
	df->cache_cap = pow2_at_least(cap);
	df->cache = calloc(df->cache_cap, sizeof(*df->cache));
	if (!df->cache) {
		free(df);
		errno = ENOMEM;
		return NULL;
	}
	return df;
}

/* Common tail of both constructors: df->elf is set; attach libdw if there is DWARF. */
static int dwarf_file__attach(struct dwarf_file *df)
{
	if (elf_kind(df->elf) != ELF_K_ELF)
		return -ENOEXEC;
	/* No DWARF (or unreadable DWARF) is not an error: symbols may still answer. */
	df->dbg = dwarf_begin_elf(df->elf, DWARF_C_READ, NULL);
	return 0;
}

/* The end of every open: unless err, reads the ELF image (size bytes at image, held by df)
 * and its debug sections into df. df, or NULL with errno and df freed.
 */
static struct dwarf_file *dwarf_file__load(struct dwarf_file *df, char *image, size_t size, int err)
{
	if (!err) {
		elf_version(EV_CURRENT);
		df->elf = elf_memory(image, size);
		err = df->elf ? dwarf_file__attach(df) : -ENOEXEC;
	}
	if (err) {
		dwarf_file__free(df);
		errno = -err;
		return NULL;
	}
	return df;
}

struct dwarf_file *dwarf_file__open_fd(int fd, const char *path, const struct dwarf_opts *opts)
{
	struct dwarf_file *df = dwarf_file__alloc(opts);
	struct stat st;
	int err;

	if (!df)
		return NULL;
	df->path = strdup(path ? path : "");
	if (!df->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	df->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (df->fd < 0 || fstat(df->fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	/* Mapped by us, guarded (base/file_map.h), not by libelf: a debug file truncated while
	 * we read it must not raise SIGBUS.
	 */
	df->mapped = file_map__open_private(df->fd, st.st_size, true); /* libelf writes to it */
	if (!df->mapped) {
		err = -errno;
		goto cleanup;
	}
	df->mapped_sz = st.st_size;
	err = 0;
cleanup:
	return dwarf_file__load(df, (char *)df->mapped, df->mapped_sz, err);
}

struct dwarf_file *dwarf_file__open(const char *path, const struct dwarf_opts *opts)
{
	struct dwarf_file *df;
	int fd = safe_open(path);

	if (fd < 0) {
		errno = fd == -EINVAL ? ENOEXEC : -fd;
		return NULL;
	}
	df = dwarf_file__open_fd(fd, path, opts);
	close(fd);
	return df;
}

struct dwarf_file *dwarf_file__open_mem(const void *image, size_t size,
					const struct dwarf_opts *opts)
{
	struct dwarf_file *df = dwarf_file__alloc(opts);
	int err;

	if (!df)
		return NULL;
	df->image = malloc(size ? size : 1);
	if (!df->image) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(df->image, image, size);
	df->image_sz = size;
	err = 0;
cleanup:
	return dwarf_file__load(df, df->image, size, err);
}

static void cache_slot__clear(struct cache_slot *s)
{
	free(s->lines);
	memset(s, 0, sizeof(*s));
}

static void unit_index__clear(struct unit_index *ui)
{
	free(ui->entries);
	free(ui->iv_lo);
	free(ui->iv_leaf);
	ui->entries = NULL;
	ui->iv_lo = NULL;
	ui->iv_leaf = NULL;
	ui->entry_cnt = ui->iv_cnt = ui->index_sz = 0;
}

void dwarf_file__free(struct dwarf_file *df)
{
	size_t i;

	if (!df)
		return;
	for (i = 0; df->cache && i < df->cache_cap; i++)
		cache_slot__clear(&df->cache[i]);
	free(df->cache);
	for (i = 0; i < df->units_idx_cnt; i++)
		unit_index__clear(&df->units_idx[i]);
	free(df->units_idx);
	free(df->units);
	elf_symbols__free(df->syms);
	elf_file__free(df->ef);
	if (df->dbg)
		dwarf_end(df->dbg);
	if (df->elf)
		elf_end(df->elf);
	file_map__close(df->mapped, df->mapped_sz);
	if (df->fd >= 0)
		close(df->fd);
	free(df->image);
	free(df->path);
	free(df);
}

static int unit_range__cmp(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	return cmp_u64(x->lo, y->lo) ?: cmp_u64(x->hi, y->hi);
}

static int dwarf_file__add_range(struct dwarf_file *df, uint64_t lo, uint64_t hi, uint32_t unit)
{
	int err = array__reserve_bounded((void **)&df->units, &df->unit_cap, df->unit_cnt + 1,
					 sizeof(*df->units), 64, DWARF_MAX_UNIT_RANGES);

	if (err)
		return err;
	df->units[df->unit_cnt++] = (struct unit_range){ .lo = lo, .hi = hi, .unit = unit };
	return 0;
}

/* Collects the address ranges of every compile unit. A unit whose ranges are unreadable is
 * skipped (counted); the index is built once even if it is partial.
 */
static int dwarf_file__build_units(struct dwarf_file *df)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off;
	size_t unit;
	int err = 0, rc;

	df->units_built = true;
	if (!df->dbg)
		return 0;
	while ((rc = dwarf_get_units(df->dbg, cu, &next, &version, &unit_type, &cudie, NULL)) ==
	       0) {
		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
			continue;
		off = 0;
		unit = df->units_idx_cnt;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			/* lo == 0: code dropped by the linker (--gc-sections) keeps address 0 */
			if (hi <= lo || lo == 0)
				continue;
			if (unit == df->units_idx_cnt) {
				/* the first range of this unit: its (empty) index record */
				err = array__reserve((void **)&df->units_idx, &df->units_idx_cap,
						     unit + 1, sizeof(*df->units_idx));
				if (err)
					goto cleanup;
				df->units_idx[df->units_idx_cnt++] = (struct unit_index){
					.cu_off = dwarf_dieoffset(&cudie),
				};
			}
			err = dwarf_file__add_range(df, lo, hi, (uint32_t)unit);
			if (err)
				goto cleanup;
		}
		if (off < 0)
			df->stats.errors++;
	}
	if (rc < 0)
		df->stats.errors++;
cleanup:
	if (df->unit_cnt)
		qsort(df->units, df->unit_cnt, sizeof(*df->units), unit_range__cmp);
	return err;
}

/* The unit containing vaddr, or NULL. */
static const struct unit_range *dwarf_file__find_unit(const struct dwarf_file *df, uint64_t vaddr)
{
	/* first range with lo > vaddr */
	size_t lo = upper_bound_u64(df->units, df->unit_cnt, sizeof(*df->units),
				    offsetof(struct unit_range, lo), vaddr);
	size_t n;

	for (n = 0; lo > 0 && n < DWARF_OVERLAP_SCAN; n++, lo--) {
		if (vaddr < df->units[lo - 1].hi)
			return &df->units[lo - 1];
	}
	return NULL;
}

/* The name of a function DIE, following abstract origins and specifications: a mangled
 * (C++, Rust) linkage name, which demangles to the qualified name eu-addr2line shows; else
 * DW_AT_name, because a C "linkage name" is only an assembler alias (glibc's
 * __GI___qsort_r for __qsort_r) and says less than the name written in the source.
 */
static const char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *linkage, *name;

	linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (linkage && (!strncmp(linkage, "_Z", 2) || !strncmp(linkage, "_R", 2)))
		return linkage;
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name ? name : linkage;
}

static bool tag_is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

static void chain__release(struct chain *c)
{
	int i;

	for (i = 0; i < c->cnt; i++)
		free(c->owned[i]);
}

/* Appends a line; the name is demangled into an owned copy when asked to. Drops lines past
 * DWARF_MAX_LINES (the outermost ones).
 */
static void chain__push(struct chain *c, const struct dwarf_opts *opts, const char *function,
			const char *file, uint32_t line)
{
	char *demangled = NULL;

	if (c->cnt >= DWARF_MAX_LINES)
		return;
	if (!function)
		function = "??";
	if (opts->demangle)
		demangled = demangle__symbol(function);
	c->owned[c->cnt] = demangled;
	c->lines[c->cnt] = (struct dwarf_line){
		.function = demangled ? demangled : function,
		.file = file,
		.line = line,
	};
	c->cnt++;
}

/* Name from the symbol tables for vaddr, or NULL. Loads them on first use. */
static const char *dwarf_file__symbol(struct dwarf_file *df, uint64_t vaddr)
{
	if (!df->syms_tried) {
		df->syms_tried = true;
		df->ef = df->fd >= 0 ? elf_file__open_fd(df->fd)
				     : elf_file__open_mem(df->image, df->image_sz);
		if (df->ef)
			df->syms = elf_symbols__load(df->ef);
	}
	return df->syms ? elf_symbols__lookup(df->syms, vaddr, NULL) : NULL;
}

/* The inline frames above the innermost scope, as eu-addr2line -i prints them. */
static int dwarf_file__inline_chain(struct dwarf_file *df, Dwarf_Die *cudie, Dwarf_Die *inner,
				    struct chain *c)
{
	Dwarf_Die *scopes = NULL, *parent;
	Dwarf_Attribute attr;
	Dwarf_Files *files = NULL;
	Dwarf_Word val;
	const char *file, *name;
	uint32_t line;
	int n, i, j, err = 0;

	n = dwarf_getscopes_die(inner, &scopes);
	if (n <= 1)
		goto cleanup;
	if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (i = 0; i < n - 1 && c->cnt < DWARF_MAX_LINES; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		/* the parent function may sit above lexical blocks */
		name = NULL;
		for (j = i + 1; j < n; j++) {
			parent = &scopes[j];
			if (tag_is_function(dwarf_tag(parent))) {
				name = die_function_name(parent);
				break;
			}
		}
		file = NULL;
		line = 0;
		if (files &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &val) == 0)
			file = dwarf_filesrc(files, val, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &val) == 0)
			line = val > UINT32_MAX ? 0 : (uint32_t)val;
		chain__push(c, &df->opts, name, file, file ? line : 0);
	}
cleanup:
	free(scopes);
	return err;
}

/* The line table's file for a row, made absolute with the unit's DW_AT_comp_dir when it is
 * relative (as eu-addr2line prints it). Returns a borrowed name, or one in buf.
 */
static const char *row_file(Dwarf_Die *cudie, Dwarf_Line *row, char *buf, size_t cap)
{
	const char *file = dwarf_linesrc(row, NULL, NULL), *dir;
	Dwarf_Attribute attr;
	int n;

	if (!file || file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	if (!dir || !dir[0])
		return file;
	n = snprintf(buf, cap, "%s/%s", dir, file);
	return n > 0 && (size_t)n < cap ? buf : file;
}

/* The tags under which libdw's scope visitor looks for more scopes (libdw_visit_scopes.c). */
static bool tag_may_have_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
		return true;
	default:
		return false;
	}
}

struct scope_range {
	uint64_t lo, hi; /* [lo, hi), lo < hi */
	int32_t entry;
};

/* An inlined entry whose abstract origin is in the same unit, to look for in the walk. */
struct origin_ref {
	int32_t entry;
	uintptr_t addr; /* of the origin DIE's data, as libdw compares them */
};

/* One level of the walk: a DIE and the entry of its parent. */
struct walk_frame {
	Dwarf_Die die;
	int32_t parent; /* -1: the unit DIE, or no entry (then ranged is false) */
	bool ranged;    /* every DIE above die (below the unit) has ranges */
};

/* Scratch state of one unit's index build; everything but entries is freed after it. */
struct scope_build {
	struct scope_entry *entries;
	size_t entry_cnt, entry_cap;
	struct scope_range *ranges;
	size_t range_cnt, range_cap;
	struct origin_ref *origins;
	size_t origin_cnt, origin_cap;
	uintptr_t *seen; /* data addresses of the DIEs the walk met, ascending */
	size_t seen_cnt, seen_cap;
	struct walk_frame *stack; /* up to DWARF_MAX_SCOPE_DEPTH frames */
	size_t stack_cap;
	uint64_t *iv_lo;
	int32_t *iv_leaf;
	size_t iv_cnt, iv_cap, iv_leaf_cap;
};

static void scope_build__free(struct scope_build *b)
{
	free(b->entries);
	free(b->ranges);
	free(b->origins);
	free(b->seen);
	free(b->stack);
	free(b->iv_lo);
	free(b->iv_leaf);
}

/* Records die as an entry if it has address ranges. 0 (recorded or not, *entry = -1 if not),
 * -ENOEXEC on unreadable ranges, -ENOMEM, -E2BIG.
 */
static int scope_build__add(struct scope_build *b, Dwarf_Die *die, int tag, int32_t parent,
			    int32_t *entry)
{
	size_t first = b->range_cnt;
	Dwarf_Addr base, lo, hi;
	Dwarf_Attribute attr;
	struct scope_entry *e;
	Dwarf_Die origin;
	ptrdiff_t off = 0;
	int err;

	*entry = -1;
	if (b->entry_cnt >= INT32_MAX)
		return -E2BIG;
	/* the ranges dwarf_haspc() tests */
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		err = array__reserve((void **)&b->ranges, &b->range_cap, b->range_cnt + 1,
				     sizeof(*b->ranges));
		if (err)
			return err;
		b->ranges[b->range_cnt++] = (struct scope_range){
			.lo = lo,
			.hi = hi,
			.entry = (int32_t)b->entry_cnt,
		};
	}
	if (off < 0)
		return -ENOEXEC;
	if (b->range_cnt == first)
		return 0;
	err = array__reserve((void **)&b->entries, &b->entry_cap, b->entry_cnt + 1,
			     sizeof(*b->entries));
	if (err)
		return err;
	e = &b->entries[b->entry_cnt];
	*e = (struct scope_entry){ .off = dwarf_dieoffset(die), .parent = parent };
	if (tag_is_function(tag))
		e->kind |= SCOPE_FUNCTION;
	if (tag == DW_TAG_inlined_subroutine) {
		e->kind |= SCOPE_INLINED;
		/* as dwarf_getscopes() reads the origin; libdw compares DIEs by data address */
		if (!dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr), &origin)) {
			e->status = SCOPES_ERROR;
		} else if (origin.cu != die->cu) {
			e->status = SCOPES_FOREIGN;
		} else {
			e->status = SCOPES_NONE; /* until the walk meets the origin */
			err = array__reserve((void **)&b->origins, &b->origin_cap,
					     b->origin_cnt + 1, sizeof(*b->origins));
			if (err)
				return err;
			b->origins[b->origin_cnt++] = (struct origin_ref){
				.entry = (int32_t)b->entry_cnt,
				.addr = (uintptr_t)origin.addr,
			};
		}
	}
	*entry = (int32_t)b->entry_cnt++;
	return 0;
}

/* Walks the unit's DIEs as libdw's scope visitor does (into the children of scope-holding
 * tags), recording entries, the origins to find and every DIE met. 0, -ENOEXEC (corrupt),
 * -ENOTSUP (an imported unit: libdw splices it in), -E2BIG (too deep), -ENOMEM.
 */
static int scope_build__walk(struct scope_build *b, Dwarf_Die *cudie)
{
	struct walk_frame *f;
	size_t depth = 1;
	int32_t entry;
	int rc, tag, err;

	err = array__reserve((void **)&b->stack, &b->stack_cap, 1, sizeof(*b->stack));
	if (err)
		return err;
	rc = dwarf_child(cudie, &b->stack[0].die);
	if (rc)
		return rc < 0 ? -ENOEXEC : 0;
	b->stack[0].parent = -1;
	b->stack[0].ranged = true;
	while (depth > 0) {
		f = &b->stack[depth - 1];
		tag = dwarf_tag(&f->die);
		if (tag == DW_TAG_imported_unit)
			return -ENOTSUP;
		/* DIEs come in ascending order, or the tree is corrupt (and may loop) */
		if (b->seen_cnt && (uintptr_t)f->die.addr <= b->seen[b->seen_cnt - 1])
			return -ENOEXEC;
		err = array__reserve((void **)&b->seen, &b->seen_cap, b->seen_cnt + 1,
				     sizeof(*b->seen));
		if (err)
			return err;
		b->seen[b->seen_cnt++] = (uintptr_t)f->die.addr;
		entry = -1;
		if (f->ranged) {
			err = scope_build__add(b, &f->die, tag, f->parent, &entry);
			if (err)
				return err;
		}
		if (tag_may_have_scopes(tag) && dwarf_haschildren(&f->die)) {
			if (depth >= DWARF_MAX_SCOPE_DEPTH)
				return -E2BIG;
			err = array__reserve((void **)&b->stack, &b->stack_cap, depth + 1,
					     sizeof(*b->stack));
			if (err)
				return err;
			f = &b->stack[depth - 1];
			rc = dwarf_child(&f->die, &b->stack[depth].die);
			if (rc < 0)
				return -ENOEXEC;
			if (rc == 0) {
				b->stack[depth].parent = entry;
				b->stack[depth].ranged = f->ranged && entry >= 0;
				depth++;
				continue;
			}
		}
		/* the next sibling, climbing out of finished levels */
		while (depth > 0) {
			rc = dwarf_siblingof(&b->stack[depth - 1].die, &b->stack[depth - 1].die);
			if (rc < 0)
				return -ENOEXEC;
			if (rc == 0)
				break;
			depth--;
		}
	}
	return 0;
}

static int uintptr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Settles each entry's status: its inlined origins against the DIEs met, then downwards. */
static void scope_build__statuses(struct scope_build *b)
{
	struct scope_entry *e;
	size_t i;

	for (i = 0; i < b->origin_cnt; i++) {
		if (bsearch(&b->origins[i].addr, b->seen, b->seen_cnt, sizeof(*b->seen),
			    uintptr_cmp))
			b->entries[b->origins[i].entry].status = SCOPES_FOUND;
	}
	for (i = 0; i < b->entry_cnt; i++) {
		e = &b->entries[i];
		if (!(e->kind & SCOPE_INLINED))
			e->status = e->parent >= 0 ? b->entries[e->parent].status : SCOPES_FOUND;
	}
}

static int scope_range__cmp_lo(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int scope_range__cmp_hi(const void *a, const void *b)
{
	const struct scope_range *x = a, *y = b;

	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Position of the first active entry >= e (active is ascending). */
static size_t active_pos(const int32_t *active, size_t cnt, int32_t e)
{
	size_t lo = 0, hi = cnt, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (active[mid] < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The innermost scope dwarf_getscopes() reaches among the active entries (ascending, that is
 * in DIE order): from the unit down, the first child containing the address at every level.
 */
static int32_t active_leaf(const struct scope_entry *entries, const int32_t *active, size_t cnt)
{
	int32_t cur = -1;
	size_t i;

	for (i = 0; i < cnt; i++) {
		if (entries[active[i]].parent == cur)
			cur = active[i];
	}
	return cur;
}

static int scope_build__add_interval(struct scope_build *b, uint64_t lo, int32_t leaf)
{
	int err;

	err = array__reserve((void **)&b->iv_lo, &b->iv_cap, b->iv_cnt + 1, sizeof(*b->iv_lo));
	if (!err)
		err = array__reserve((void **)&b->iv_leaf, &b->iv_leaf_cap, b->iv_cnt + 1,
				     sizeof(*b->iv_leaf));
	if (err)
		return err;
	b->iv_lo[b->iv_cnt] = lo;
	b->iv_leaf[b->iv_cnt++] = leaf;
	return 0;
}

/* Cuts the unit's addresses at every range bound and keeps the innermost entry of each
 * piece (merging neighbours with the same one). 0, -E2BIG, -ENOMEM.
 */
static int scope_build__intervals(struct scope_build *b)
{
	struct scope_range *by_hi = NULL;
	size_t n = b->range_cnt, i = 0, j = 0, active_cnt = 0, active_cap = 0, pos;
	int32_t *active = NULL, leaf, last = INT32_MIN;
	uint64_t at;
	int err = 0;

	if (!n)
		return 0;
	by_hi = malloc(n * sizeof(*by_hi)); /* n ranges were allocated already */
	if (!by_hi) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(by_hi, b->ranges, n * sizeof(*by_hi));
	qsort(b->ranges, n, sizeof(*b->ranges), scope_range__cmp_lo);
	qsort(by_hi, n, sizeof(*by_hi), scope_range__cmp_hi);
	/* every range ends after it starts, so ends remain while anything is active */
	while (j < n) {
		at = by_hi[j].hi;
		if (i < n && b->ranges[i].lo < at)
			at = b->ranges[i].lo;
		for (; j < n && by_hi[j].hi == at; j++) {
			pos = active_pos(active, active_cnt, by_hi[j].entry);
			memmove(&active[pos], &active[pos + 1],
				(active_cnt - pos - 1) * sizeof(*active));
			active_cnt--;
		}
		for (; i < n && b->ranges[i].lo == at; i++) {
			if (active_cnt == DWARF_MAX_ACTIVE_SCOPES) {
				err = -E2BIG;
				goto cleanup;
			}
			err = array__reserve((void **)&active, &active_cap, active_cnt + 1,
					     sizeof(*active));
			if (err)
				goto cleanup;
			pos = active_pos(active, active_cnt, b->ranges[i].entry);
			memmove(&active[pos + 1], &active[pos],
				(active_cnt - pos) * sizeof(*active));
			active[pos] = b->ranges[i].entry;
			active_cnt++;
		}
		leaf = active_leaf(b->entries, active, active_cnt);
		if (leaf != last) {
			err = scope_build__add_interval(b, at, leaf);
			if (err)
				goto cleanup;
			last = leaf;
		}
	}
cleanup:
	free(by_hi);
	free(active);
	return err;
}

/* Shrinks an array to its count (keeps it if realloc fails). */
static void *array_fit(void *arr, size_t cnt, size_t elem_sz)
{
	void *tmp = cnt ? realloc(arr, cnt * elem_sz) : NULL;

	if (!cnt) {
		free(arr);
		return NULL;
	}
	return tmp ? tmp : arr;
}

/* Builds ui's index from the unit at cudie. 0, or -ENOEXEC / -ENOTSUP / -E2BIG (this unit
 * cannot have one), -ENOMEM.
 */
static int unit_index__build(struct unit_index *ui, Dwarf_Die *cudie)
{
	struct scope_build b = { 0 };
	int err;

	err = scope_build__walk(&b, cudie);
	if (err)
		goto cleanup;
	scope_build__statuses(&b);
	err = scope_build__intervals(&b);
	if (err)
		goto cleanup;
	ui->entries = array_fit(b.entries, b.entry_cnt, sizeof(*b.entries));
	ui->entry_cnt = b.entry_cnt;
	ui->iv_lo = array_fit(b.iv_lo, b.iv_cnt, sizeof(*b.iv_lo));
	ui->iv_leaf = array_fit(b.iv_leaf, b.iv_cnt, sizeof(*b.iv_leaf));
	ui->iv_cnt = b.iv_cnt;
	ui->index_sz = b.entry_cnt * sizeof(*b.entries) +
		       b.iv_cnt * (sizeof(*b.iv_lo) + sizeof(*b.iv_leaf));
	b.entries = NULL;
	b.iv_lo = NULL;
	b.iv_leaf = NULL;
cleanup:
	scope_build__free(&b);
	return err;
}

/* The innermost entry at vaddr, or -1. */
static int32_t unit_index__leaf(const struct unit_index *ui, uint64_t vaddr)
{
	/* first interval starting after vaddr */
	size_t lo = upper_bound_u64(ui->iv_lo, ui->iv_cnt, sizeof(*ui->iv_lo), 0, vaddr);

	return lo ? ui->iv_leaf[lo - 1] : -1;
}

/* Drops the least recently used built index other than keep; false if there is none. */
static bool dwarf_file__evict_index(struct dwarf_file *df, const struct unit_index *keep)
{
	struct unit_index *oldest = NULL, *ui;
	size_t i;

	for (i = 0; i < df->units_idx_cnt; i++) {
		ui = &df->units_idx[i];
		if (ui != keep && ui->state == UNIT_INDEXED &&
		    (!oldest || ui->last_use < oldest->last_use))
			oldest = ui;
	}
	if (!oldest)
		return false;
	df->scope_index_sz -= oldest->index_sz;
	unit_index__clear(oldest);
	oldest->state = UNIT_UNINDEXED;
	return true;
}

/* The scope index of a unit, built on first use; NULL: look the unit up through libdw. */
static struct unit_index *dwarf_file__unit_index(struct dwarf_file *df, uint32_t unit,
						 Dwarf_Die *cudie)
{
	struct unit_index *ui = &df->units_idx[unit];
	int err;

	if (ui->state == UNIT_SLOW)
		return NULL;
	if (ui->state == UNIT_UNINDEXED) {
		err = unit_index__build(ui, cudie);
		if (err == -ENOMEM)
			return NULL; /* may work later */
		if (!err && ui->index_sz > DWARF_INDEX_BUDGET) {
			unit_index__clear(ui);
			err = -E2BIG;
		}
		if (err) {
			ui->state = UNIT_SLOW;
			return NULL;
		}
		while (df->scope_index_sz + ui->index_sz > DWARF_INDEX_BUDGET &&
		       dwarf_file__evict_index(df, ui))
			;
		df->scope_index_sz += ui->index_sz;
		ui->state = UNIT_INDEXED;
	}
	ui->last_use = ++df->use_clock;
	return ui;
}

/* The inline frames above entry leaf, as dwarf_file__inline_chain() reads them from the DIE
 * parents of the innermost scope (here the entries' parent links).
 */
static void dwarf_file__index_chain(struct dwarf_file *df, Dwarf_Die *cudie,
				    const struct unit_index *ui, int32_t leaf, struct chain *c)
{
	const struct scope_entry *entries = ui->entries;
	Dwarf_Files *files = NULL;
	Dwarf_Attribute attr;
	Dwarf_Die die;
	Dwarf_Word val;
	const char *file, *name;
	uint32_t line;
	int32_t e, p;

	if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (e = leaf; e >= 0 && c->cnt < DWARF_MAX_LINES; e = entries[e].parent) {
		if (!(entries[e].kind & SCOPE_INLINED))
			continue;
		/* the parent function may sit above lexical blocks */
		name = NULL;
		for (p = entries[e].parent; p >= 0; p = entries[p].parent) {
			if (entries[p].kind & SCOPE_FUNCTION) {
				if (dwarf_offdie(df->dbg, entries[p].off, &die))
					name = die_function_name(&die);
				break;
			}
		}
		file = NULL;
		line = 0;
		if (dwarf_offdie(df->dbg, entries[e].off, &die)) {
			if (files &&
			    dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &attr), &val) == 0)
				file = dwarf_filesrc(files, val, NULL, NULL);
			if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &attr), &val) == 0)
				line = val > UINT32_MAX ? 0 : (uint32_t)val;
		}
		chain__push(c, &df->opts, name, file, file ? line : 0);
	}
}

/* The function at vaddr and the innermost scope there, as dwarf_getscopes() finds them:
 * *name is the innermost function's name (NULL: none, or unnamed); *inner is set when
 * there is a scope. Through the unit's index when it has one (*leaf is then the innermost
 * entry, else -1), else through libdw.
 */
static void dwarf_file__scopes(struct dwarf_file *df, Dwarf_Die *cudie, uint32_t unit,
			       uint64_t vaddr, const char **name, Dwarf_Die *inner,
			       bool *have_inner, const struct unit_index **index, int32_t *leaf)
{
	const struct unit_index *ui = dwarf_file__unit_index(df, unit, cudie);
	Dwarf_Die *scopes = NULL, die;
	int n = -1, i;
	int32_t e = -1;

	if (ui) {
		e = unit_index__leaf(ui, vaddr);
		if (e >= 0 && ui->entries[e].status == SCOPES_FOREIGN)
			ui = NULL;
	}
	if (ui) {
		*index = ui;
		*leaf = e;
		if (e < 0 || ui->entries[e].status == SCOPES_NONE)
			return;
		if (ui->entries[e].status == SCOPES_ERROR) {
			df->stats.errors++;
			return;
		}
		for (i = e; i >= 0; i = ui->entries[i].parent) {
			if (ui->entries[i].kind & SCOPE_FUNCTION) {
				if (dwarf_offdie(df->dbg, ui->entries[i].off, &die))
					*name = die_function_name(&die);
				break;
			}
		}
		*have_inner = dwarf_offdie(df->dbg, ui->entries[e].off, inner) != NULL;
		return;
	}
	n = dwarf_getscopes(cudie, vaddr, &scopes);
	if (n < 0)
		df->stats.errors++;
	for (i = 0; i < n; i++) {
		if (tag_is_function(dwarf_tag(&scopes[i]))) {
			*name = die_function_name(&scopes[i]);
			break;
		}
	}
	if (n > 0 && dwarf_offdie(df->dbg, dwarf_dieoffset(&scopes[0]), inner))
		*have_inner = true;
	free(scopes);
}

/* Computes the chain for vaddr into c; 0 or -ENOENT / -ENOEXEC. */
static int dwarf_file__resolve(struct dwarf_file *df, uint64_t vaddr, struct chain *c)
{
	const struct unit_range *u = NULL;
	const struct unit_index *ui = NULL;
	Dwarf_Die cudie, inner;
	Dwarf_Line *row = NULL;
	const char *file = NULL, *name = NULL;
	bool have_function = false, have_inner = false;
	uint32_t line = 0;
	int32_t leaf = -1;
	int lineno, err = 0;

	if (!df->units_built) {
		err = dwarf_file__build_units(df);
		if (err)
			return err;
	}
	if (df->dbg)
		u = dwarf_file__find_unit(df, vaddr);
	if (u && !dwarf_offdie(df->dbg, df->units_idx[u->unit].cu_off, &cudie)) {
		df->stats.errors++;
		u = NULL;
	}
	if (u) {
		row = dwarf_getsrc_die(&cudie, vaddr);
		if (row) {
			file = row_file(&cudie, row, c->file_buf, sizeof(c->file_buf));
			if (file && dwarf_lineno(row, &lineno) == 0 && lineno > 0)
				line = (uint32_t)lineno;
		}
		dwarf_file__scopes(df, &cudie, u->unit, vaddr, &name, &inner, &have_inner, &ui,
				   &leaf);
		have_function = name != NULL;
	}
	if (!have_function)
		name = dwarf_file__symbol(df, vaddr);
	if (!name && !file) {
		err = -ENOENT;
		goto cleanup;
	}
	chain__push(c, &df->opts, name, file, file ? line : 0);
	if (have_function && have_inner) {
		if (ui)
			dwarf_file__index_chain(df, &cudie, ui, leaf, c);
		else
			err = dwarf_file__inline_chain(df, &cudie, &inner, c);
	}
cleanup:
	return err;
}

/* Packs c into one block: lines, then every string once per line. */
static struct dwarf_line *chain__pack(const struct chain *c, size_t *block_sz)
{
	size_t sz = (size_t)c->cnt * sizeof(struct dwarf_line), len;
	struct dwarf_line *out;
	char *p;
	int i;

	for (i = 0; i < c->cnt; i++) {
		sz += strlen(c->lines[i].function) + 1;
		if (c->lines[i].file)
			sz += strlen(c->lines[i].file) + 1;
	}
	out = malloc(sz);
	if (!out)
		return NULL;
	p = (char *)(out + c->cnt);
	for (i = 0; i < c->cnt; i++) {
		out[i] = c->lines[i];
		len = strlen(c->lines[i].function) + 1;
		memcpy(p, c->lines[i].function, len);
		out[i].function = p;
		p += len;
		if (c->lines[i].file) {
			len = strlen(c->lines[i].file) + 1;
			memcpy(p, c->lines[i].file, len);
			out[i].file = p;
			p += len;
		}
	}
	*block_sz = sz;
	return out;
}

int dwarf_file__lookup(struct dwarf_file *df, uint64_t vaddr, const struct dwarf_line **lines)
{
	struct cache_slot *s =
		&df->cache[(vaddr * 0x9e3779b97f4a7c15ULL >> 20) & (df->cache_cap - 1)];
	struct chain c;
	int err;

	df->stats.lookups++;
	if (s->cnt && s->addr == vaddr) {
		df->stats.cache_hits++;
		*lines = s->lines;
		return s->cnt;
	}
	c.cnt = 0;
	err = dwarf_file__resolve(df, vaddr, &c);
	if (s->cnt) {
		df->stats.evictions++;
		df->stats.cache_sz -= s->block_sz;
		cache_slot__clear(s);
	}
	if (err == -ENOENT)
		df->stats.not_found++;
	else if (err == -ENOEXEC)
		df->stats.errors++;
	if (!err) {
		s->lines = chain__pack(&c, &s->block_sz);
		err = s->lines ? 0 : -ENOMEM;
	}
	chain__release(&c);
	if (err == -ENOMEM)
		return err;
	s->addr = vaddr;
	s->cnt = err ? err : c.cnt;
	df->stats.cache_sz += s->block_sz;
	*lines = s->lines;
	return s->cnt;
}

bool dwarf_file__has_dwarf(struct dwarf_file *df)
{
	if (!df->units_built)
		dwarf_file__build_units(df);
	return df->unit_cnt > 0;
}

void dwarf_file__stats(const struct dwarf_file *df, struct dwarf_stats *out)
{
	*out = df->stats;
	out->unit_cnt = df->unit_cnt;
	out->index_sz = df->unit_cap * sizeof(*df->units) +
			df->units_idx_cap * sizeof(*df->units_idx) + df->scope_index_sz;
	out->cache_sz = df->stats.cache_sz + df->cache_cap * sizeof(*df->cache);
}
