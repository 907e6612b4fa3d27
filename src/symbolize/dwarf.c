/* DWARF source lines and inline chains through libdw. See dwarf.h for the contract.
 *
 * Lookup: a sorted array of compile-unit address ranges (built once, lazily) finds the unit;
 * libdw's dwarf_getsrc_die() gives the line table row and dwarf_getscopes() the nesting of
 * subprogram / inlined_subroutine DIEs at the address. The chain is then read the way
 * eu-addr2line reads it (re-walking the DIE parents of the innermost scope, since
 * dwarf_getscopes() also appends the abstract origin's scopes), so both tools agree.
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
#include <unistd.h>

#include "elf/elf_file.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf.h"
#include "symbolize/elf_symbols.h"

#define DWARF_DEFAULT_CACHE_CAP 4096
#define DWARF_MAX_CACHE_CAP ((size_t)1 << 24)
#define DWARF_MAX_UNIT_RANGES ((size_t)1 << 24)
/* Overlapping unit ranges are rare (LTO partitions); look this far back for a cover. */
#define DWARF_OVERLAP_SCAN 8

struct unit_range {
	uint64_t lo, hi;  /* [lo, hi) */
	Dwarf_Off cu_off; /* offset of the unit's DIE */
};

struct cache_slot {
	uint64_t addr;
	struct dwarf_line *lines; /* one block: cnt lines then their strings; NULL if cnt <= 0 */
	size_t block_sz;
	int cnt;   /* > 0 lines, < 0 cached -errno, 0 empty slot */
};

struct dwarf_file {
	int fd;         /* -1 for an in-memory image */
	void *image;    /* owned copy, or NULL */
	size_t image_sz;
	char *path;     /* for the symbol fallback; NULL for an image */
	Elf *elf;
	Dwarf *dbg;     /* NULL: no usable DWARF */
	struct elf_file *ef;      /* opened on the first symbol fallback */
	struct elf_symbols *syms;
	bool syms_tried;
	struct unit_range *units;
	size_t unit_cnt, unit_cap;
	bool units_built;
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

struct dwarf_file *dwarf_file__open(const char *path, const struct dwarf_opts *opts)
{
	struct dwarf_file *df = dwarf_file__alloc(opts);
	int err;

	if (!df)
		return NULL;
	df->path = strdup(path);
	if (!df->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	df->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (df->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	elf_version(EV_CURRENT);
	df->elf = elf_begin(df->fd, ELF_C_READ_MMAP, NULL);
	if (!df->elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = dwarf_file__attach(df);
cleanup:
	if (err) {
		dwarf_file__free(df);
		errno = -err;
		return NULL;
	}
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
	elf_version(EV_CURRENT);
	df->elf = elf_memory(df->image, size);
	if (!df->elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = dwarf_file__attach(df);
cleanup:
	if (err) {
		dwarf_file__free(df);
		errno = -err;
		return NULL;
	}
	return df;
}

static void cache_slot__clear(struct cache_slot *s)
{
	free(s->lines);
	memset(s, 0, sizeof(*s));
}

void dwarf_file__free(struct dwarf_file *df)
{
	size_t i;

	if (!df)
		return;
	for (i = 0; df->cache && i < df->cache_cap; i++)
		cache_slot__clear(&df->cache[i]);
	free(df->cache);
	free(df->units);
	elf_symbols__free(df->syms);
	elf_file__free(df->ef);
	if (df->dbg)
		dwarf_end(df->dbg);
	if (df->elf)
		elf_end(df->elf);
	if (df->fd >= 0)
		close(df->fd);
	free(df->image);
	free(df->path);
	free(df);
}

static int unit_range__cmp(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int dwarf_file__add_range(struct dwarf_file *df, uint64_t lo, uint64_t hi, Dwarf_Off off)
{
	struct unit_range *tmp;
	size_t cap;

	if (df->unit_cnt == df->unit_cap) {
		if (df->unit_cap >= DWARF_MAX_UNIT_RANGES)
			return -E2BIG;
		cap = df->unit_cap ? df->unit_cap * 2 : 64;
		tmp = realloc(df->units, cap * sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
		df->units = tmp;
		df->unit_cap = cap;
	}
	df->units[df->unit_cnt++] = (struct unit_range){ .lo = lo, .hi = hi, .cu_off = off };
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
	int err = 0, rc;

	df->units_built = true;
	if (!df->dbg)
		return 0;
	while ((rc = dwarf_get_units(df->dbg, cu, &next, &version, &unit_type, &cudie, NULL)) == 0) {
		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
			continue;
		off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			/* lo == 0: code dropped by the linker (--gc-sections) keeps address 0 */
			if (hi <= lo || lo == 0)
				continue;
			err = dwarf_file__add_range(df, lo, hi, dwarf_dieoffset(&cudie));
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
static const struct unit_range *dwarf_file__find_unit(const struct dwarf_file *df,
						      uint64_t vaddr)
{
	size_t lo = 0, hi = df->unit_cnt, mid, n;

	/* first range with lo > vaddr */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (df->units[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
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
		df->ef = df->path ? elf_file__open(df->path)
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
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &val) == 0)
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

/* Computes the chain for vaddr into c; 0 or -ENOENT / -ENOEXEC. */
static int dwarf_file__resolve(struct dwarf_file *df, uint64_t vaddr, struct chain *c)
{
	const struct unit_range *u = NULL;
	Dwarf_Die cudie, *scopes = NULL, inner;
	Dwarf_Line *row = NULL;
	const char *file = NULL, *name = NULL;
	bool have_function = false, have_inner = false;
	uint32_t line = 0;
	int lineno, n, i, err = 0;

	if (!df->units_built) {
		err = dwarf_file__build_units(df);
		if (err)
			return err;
	}
	if (df->dbg)
		u = dwarf_file__find_unit(df, vaddr);
	if (u && !dwarf_offdie(df->dbg, u->cu_off, &cudie)) {
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
		n = dwarf_getscopes(&cudie, vaddr, &scopes);
		if (n < 0)
			df->stats.errors++;
		for (i = 0; i < n; i++) {
			if (tag_is_function(dwarf_tag(&scopes[i]))) {
				name = die_function_name(&scopes[i]);
				have_function = name != NULL;
				break;
			}
		}
		if (n > 0 && dwarf_offdie(df->dbg, dwarf_dieoffset(&scopes[0]), &inner))
			have_inner = true;
		free(scopes);
	}
	if (!have_function)
		name = dwarf_file__symbol(df, vaddr);
	if (!name && !file) {
		err = -ENOENT;
		goto cleanup;
	}
	chain__push(c, &df->opts, name, file, file ? line : 0);
	if (have_function && have_inner)
		err = dwarf_file__inline_chain(df, &cudie, &inner, c);
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
	struct cache_slot *s = &df->cache[(vaddr * 0x9e3779b97f4a7c15ULL >> 20) & (df->cache_cap - 1)];
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
	out->index_sz = df->unit_cap * sizeof(*df->units);
	out->cache_sz = df->stats.cache_sz + df->cache_cap * sizeof(*df->cache);
}
