/* Perl 5, as a runtime of src/interp/interp.h: finds Perl interpreters among the mapped files
 * (/usr/bin/perl, which embeds the interpreter, or libperl.so.*), tells the eBPF walk
 * (bpf/interp/perl/walk.h) where Perl_runops_standard is and how the interpreter's structures
 * are laid out, tells it where each process keeps PL_thr_key (the pthread key whose slot holds
 * a thread's interpreter), and turns the (glob or CV, COP) frames it emits into `Pkg::sub`,
 * `main::__ANON__`, `BEGIN`, `main`, file and line by reading the process's memory.
 *
 * Versions: Perl 5.32, 5.36, 5.40 and 5.42, threaded builds (useithreads, multiplicity: the only
 * kind Debian ships) on x86-64, and 5.36 on arm64 (Debian 12's: the same LP64 tables). The
 * version is the binary's PL_revision and PL_version bytes (Perl keeps its binary interface
 * within a maintenance series: 5.40.0 and 5.40.1 are one layout); each version's offsets are
 * a table (layouts[], each saying where its numbers come from). They are checked against
 * every process: PL_op_name must name the table's op numbers, and once its interpreter
 * exists PL_curinterp's default stash must be the "main" stash read
 * through the HV/HEK offsets, its current stackinfo and COP plausible, PL_thr_key a first-level
 * TSD key. A process that fails gets native frames and a marker frame; a version without a
 * table or a non-threaded build gets "[perl: unsupported version]" frames.
 *
 * Invariants: two caches of PERL_CACHE_CAP entries each: frame names (../common/symbol_cache.h)
 * keyed by (pid, attach generation, glob or CV address and cookie), statements (a
 * set-associative table, base/lru_sets.h) keyed by (pid, attach generation, COP address) and
 * checked against the COP (line and file pointer) when used COP_RECHECK_NS after its last check,
 * else against eBPF's 16 bits of its line.
 * A COP whose line no longer matches the one eBPF read is not used (its op tree was freed: an
 * eval string that finished): the frame keeps eBPF's line, without a file. Each attach gets a
 * new generation. Every read of the process (names, statements) is on the process's read
 * budget (../common/symbol_cache.h): a sub's name it cannot afford is the cache's "over the
 * process's read budget" marker, a statement it cannot afford keeps eBPF's line without a file
 * (or the cached one unchecked), counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/lru_sets.h"
#include "base/u64_map.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/common/glibc_tsd.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "proc/executable.h"

#define PERL_CACHE_CAP 4096
#define PERL_NAME_MAX 512 /* bytes of a package, sub or file name kept */
#define PERL_TSD_KEYS 32
#define CHECK_INTERVAL_NS (100 * 1000 * 1000ULL)
#define CHECK_INTERVAL_IDLE_NS (1000 * 1000 * 1000ULL) /* after CHECK_FAST_TRIES */
#define CHECK_FAST_TRIES 100
#define PERL_SVT_PVGV 9
#define PERL_SVT_PVHV 12
#define PERL_SVF_OOK 0x02000000u /* an HV with its aux part (a stash has its name there) */
#define PERL_CXMAX_SANE (1 << 24)
#define PERL_HVMAX_SANE (1ull << 32) /* HvMAX + 1: buckets of a hash (a power of two) */
#define PERL_OP_NAME_MAX 16
/* A cached statement whose line still agrees with eBPF's is used without reading it again for
 * this long (the agent reads its samples every 250 ms): a deep stack would otherwise cost two
 * reads per frame of every sample.
 */
#define COP_RECHECK_NS (250 * 1000 * 1000ULL)

/* Everything known about one version's layout (x86-64, threaded). */
struct perl_layout {
	uint8_t major, minor; /* PL_revision, PL_version */
	struct perl_offsets bpf;
	uint16_t interp_defstash; /* PerlInterpreter.Idefstash (PL_defstash, the main:: stash) */
	uint16_t xcv_stash;       /* XPVCV.xcv_stash (CvSTASH) */
	uint16_t xpvgv_namehek;   /* XPVGV.xiv_u.xivu_namehek (GvNAME_HEK) */
	uint16_t xpvgv_stash;     /* XPVGV.xnv_u.xgv_stash (GvSTASH) */
	uint16_t xpvhv_aux;       /* struct xpvhv_with_aux.xhv_aux (HvAUX, since 5.36) */
	bool aux_after_array;     /* before 5.36: HvAUX follows the buckets, HvARRAY[HvMAX + 1] */
	uint16_t sv_u;            /* sv.sv_u (HvARRAY: the buckets) */
	uint16_t xhv_max;         /* XPVHV.xhv_max (HvMAX: buckets - 1) */
	uint16_t aux_name;        /* struct xpvhv_aux.xhv_name_u */
	uint16_t aux_name_count;  /* .xhv_name_count (I32) */
	uint16_t hek_len, hek_key;
	uint16_t cop_file; /* COP.cop_file (char *, threaded builds) */
};

/* The layouts, one per version. Every number is what tests/data/perl_layout.c printed when
 * compiled against the CORE headers Debian's build of that version ships (libperl5.xx's
 * /usr/lib/x86_64-linux-gnu/perl/5.xx/CORE, with that build's config.h: intrpvar.h for the
 * interpreter struct, cop.h for PERL_SI, PERL_CONTEXT and COP, sv.h / cv.h / gv.h / hv.h for
 * the SV bodies, opnames.h for the op numbers). 5.32 and 5.36 also agree with the otel
 * profiler's tables (Icurcop 224 / 208, Icurstackinfo 240 / 224, si_cxix 32, si_type 44,
 * sizeof(PERL_CONTEXT) 104, blk_oldcop 16, blk_sub.cv 72, cop_line 36, cop_file 48, xhv_max
 * 24). Between them: 5.34 repacked the start of the interpreter struct (16 bytes less before
 * PL_defstash); 5.36 moved HvAUX into the HV's body; 5.38 and 5.42 added ops; 5.42 added two
 * stackinfo types. Perl's constants the walk uses are the same in all four (bpf_abi.h).
 */
static const struct perl_layout layouts[] = {
	/* 5.32: Debian 11's 5.32.1 (libperl5.32 5.32.1-4+deb11u3). */
	{
		.major = 5,
		.minor = 32,
		.bpf = {
			.interp_curcop = 224,
			.interp_curstackinfo = 240,
			.si_cxstack = 8,
			.si_prev = 16,
			.si_cxix = 32,
			.si_cxmax = 36,
			.si_type = 44,
			.cx_size = 104,
			.cx_type = 0,
			.cx_u16 = 2,
			.cx_oldcop = 16,
			.cx_retop = 48,
			.cx_sub_cv = 72,
			.sv_flags = 12,
			.xcv_gv = 56,
			.xcv_flags = 92,
			.cop_line = 36,
			.op_enter_eval = 345,
			.op_require = 342,
			.op_dofile = 343,
			.si_type_max = 11,
		},
		.interp_defstash = 208,
		.xcv_stash = 32,
		.xpvgv_namehek = 32,
		.xpvgv_stash = 40,
		.aux_after_array = true,
		.sv_u = 16,
		.xhv_max = 24,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
		.cop_file = 48,
	},
	/* 5.36: Debian 12's 5.36.0 (libperl5.36 5.36.0-7+deb12u3; the host's, deb12u4, the same). */
	{
		.major = 5,
		.minor = 36,
		.bpf = {
			.interp_curcop = 208,
			.interp_curstackinfo = 224,
			.si_cxstack = 8,
			.si_prev = 16,
			.si_cxix = 32,
			.si_cxmax = 36,
			.si_type = 44,
			.cx_size = 104,
			.cx_type = 0,
			.cx_u16 = 2,
			.cx_oldcop = 16,
			.cx_retop = 48,
			.cx_sub_cv = 72,
			.sv_flags = 12,
			.xcv_gv = 56,
			.xcv_flags = 92,
			.cop_line = 36,
			.op_enter_eval = 345,
			.op_require = 342,
			.op_dofile = 343,
			.si_type_max = 11,
		},
		.interp_defstash = 192,
		.xcv_stash = 32,
		.xpvgv_namehek = 32,
		.xpvgv_stash = 40,
		.xpvhv_aux = 32,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
		.cop_file = 48,
	},
	/* 5.40: Debian 13's 5.40.1 (libperl5.40 5.40.1-6+deb13u1). As 5.36 but the op numbers. */
	{
		.major = 5,
		.minor = 40,
		.bpf = {
			.interp_curcop = 208,
			.interp_curstackinfo = 224,
			.si_cxstack = 8,
			.si_prev = 16,
			.si_cxix = 32,
			.si_cxmax = 36,
			.si_type = 44,
			.cx_size = 104,
			.cx_type = 0,
			.cx_u16 = 2,
			.cx_oldcop = 16,
			.cx_retop = 48,
			.cx_sub_cv = 72,
			.sv_flags = 12,
			.xcv_gv = 56,
			.xcv_flags = 92,
			.cop_line = 36,
			.op_enter_eval = 348,
			.op_require = 345,
			.op_dofile = 346,
			.si_type_max = 11,
		},
		.interp_defstash = 192,
		.xcv_stash = 32,
		.xpvgv_namehek = 32,
		.xpvgv_stash = 40,
		.xpvhv_aux = 32,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
		.cop_file = 48, /* a char * still: the string of a shared RCPV since 5.38 */
	},
	/* 5.42: Debian unstable's 5.42.3 (libperl5.42 5.42.3-1). As 5.40 but the op numbers, and
	 * PERLSI_SMARTMATCH 12, PERLSI_CONSTRUCTOR 13.
	 */
	{
		.major = 5,
		.minor = 42,
		.bpf = {
			.interp_curcop = 208,
			.interp_curstackinfo = 224,
			.si_cxstack = 8,
			.si_prev = 16,
			.si_cxix = 32,
			.si_cxmax = 36,
			.si_type = 44,
			.cx_size = 104,
			.cx_type = 0,
			.cx_u16 = 2,
			.cx_oldcop = 16,
			.cx_retop = 48,
			.cx_sub_cv = 72,
			.sv_flags = 12,
			.xcv_gv = 56,
			.xcv_flags = 92,
			.cop_line = 36,
			.op_enter_eval = 352,
			.op_require = 349,
			.op_dofile = 350,
			.si_type_max = 13,
		},
		.interp_defstash = 192,
		.xcv_stash = 32,
		.xpvgv_namehek = 32,
		.xpvgv_stash = 40,
		.xpvhv_aux = 32,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
		.cop_file = 48,
	},
};

struct perl_file {
	struct interp_file_base base;
	struct interp_file bpf; /* range, version, offsets */
	struct perl_layout layout;
	uint64_t thr_key_vaddr;   /* PL_thr_key */
	uint64_t curinterp_vaddr; /* PL_curinterp: the first interpreter */
	uint64_t op_name_vaddr;   /* PL_op_name: the ops' names by number */
	uint64_t op_name_sz;
};

enum perl_proc_state {
	PERL_PROC_PENDING = 0, /* no interpreter yet (a process that has just exec'd perl) */
	PERL_PROC_VERIFIED,
	PERL_PROC_REJECTED,
};

struct perl_proc {
	struct interp_proc_base base;
	struct perl_file *file;
	uint64_t thr_key, curinterp; /* absolute addresses of PL_thr_key, PL_curinterp */
	uint64_t op_name;            /* and of PL_op_name */
	enum perl_proc_state state;
	unsigned int tries;
	uint64_t next_check_ns;
};

struct name_entry {
	struct symbol_cache_key key; /* addr: the frame's, type and glob / HEK; cookie 0 */
	char *name;
};

struct cop_entry {
	pid_t pid; /* 0: empty slot */
	uint32_t gen;
	uint64_t cop;
	int line;            /* cop_line */
	uint64_t file_ptr;   /* cop_file, as read with file */
	uint64_t checked_ns; /* when line and file_ptr were last read from the COP */
	char *file;
};

/* Our own counters (perl_runtime.stat_names). */
#define PERL_STATS(X)                                                      \
	/* layouts checked against a live interpreter */                   \
	X(PERL_STAT_VERIFIED, "layouts verified")                          \
	/* layouts that did not check out (marker in eBPF) */              \
	X(PERL_STAT_REJECTED, "layouts rejected")                          \
	/* globs / CVs read from process memory */                         \
	X(PERL_STAT_NAME_READS, "names read")                              \
	/* frames whose name could not be read */                          \
	X(PERL_STAT_UNREADABLE, "names unreadable")                        \
	/* COPs read (every frame: a cached file is checked) */            \
	X(PERL_STAT_COP_READS, "statements read")                          \
	/* COPs freed or reused: file unknown, eBPF's line kept */         \
	X(PERL_STAT_COP_STALE, "statements gone")                          \
	/* unreadable (the process exited): the cached one used */         \
	X(PERL_STAT_COP_AFTER_EXIT, "statements after exit")               \
	/* names / statements not read: the process's read budget spent */ \
	X(PERL_STAT_OVER_BUDGET, "reads over budget")

enum perl_stat { PERL_STATS(INTERP_LIST_ENUM) PERL_STAT_CNT };

struct perl {
	struct symbol_cache names;
	struct cop_entry *cops;
	struct lru_sets cop_slots; /* which entry of cops holds an address */
	uint64_t stats[PERL_STAT_CNT];
};

static void name_entry__clear(void *ctx, void *entry)
{
	struct name_entry *e = entry;

	(void)ctx;
	free(e->name);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = { PERL_STAT_NAME_READS,
							 PERL_STAT_UNREADABLE,
							 -1,
							 PERL_STAT_OVER_BUDGET,
							 -1,
							 "sub unreadable",
							 NULL };

static int perl_init(void *rt)
{
	struct perl *pl = rt;
	int err = symbol_cache__init(&pl->names, PERL_CACHE_CAP, sizeof(struct name_entry), false,
				     name_entry__clear, NULL, &cache_report, pl->stats);

	if (err)
		return err;
	pl->cops = calloc(PERL_CACHE_CAP, sizeof(*pl->cops));
	return pl->cops && !lru_sets__init(&pl->cop_slots, PERL_CACHE_CAP) ? 0 : -ENOMEM;
}

static void perl_fini(void *rt)
{
	struct perl *pl = rt;
	size_t i;

	for (i = 0; pl->cops && i < PERL_CACHE_CAP; i++)
		free(pl->cops[i].file);
	free(pl->cops);
	lru_sets__free(&pl->cop_slots);
	symbol_cache__free(&pl->names);
}

/* ---- detection ---- */

/* The symbols detection looks up (interp_elf__symbols): X(ID, "name") entries that make the
 * enum and sym_names (INTERP_LIST_ENUM / INTERP_LIST_TEXT).
 */
#define PERL_SYMS(X)                          \
	X(SYM_RUNOPS, "Perl_runops_standard") \
	X(SYM_THR_KEY, "PL_thr_key")          \
	X(SYM_CURINTERP, "PL_curinterp")      \
	X(SYM_OP_NAME, "PL_op_name")          \
	X(SYM_REVISION, "PL_revision")        \
	X(SYM_VERSION, "PL_version")          \
	X(SYM_SUBVERSION, "PL_subversion")

enum perl_sym { PERL_SYMS(INTERP_LIST_ENUM) SYM_CNT };

static const char *const sym_names[SYM_CNT] = { PERL_SYMS(INTERP_LIST_TEXT) };

static bool name_is_perl(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "perl", 4) || !strncmp(base, "libperl.so", 10);
}

/* One version byte (PL_revision...: const U8 in .rodata), or -1. */
static int version_byte(struct elf_file *ef, const struct interp_sym *sym)
{
	const uint8_t *b;

	if (!sym->found || sym->size != 1)
		return -1;
	b = interp_elf__bytes(ef, sym->addr, 1);
	return b ? *b : -1;
}

/* The layout of Perl revision.version (PL_revision, PL_version), or NULL. */
static const struct perl_layout *layout_find(int revision, int version)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == revision && layouts[i].minor == version)
			return &layouts[i];
	return NULL;
}

static int detect(const struct executable *exe, struct perl_file *f)
{
	struct interp_sym syms[SYM_CNT] = { 0 };
	const struct perl_layout *l;
	int revision, version, subversion;

	if (!exe->elf || !name_is_perl(exe->path))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, SYM_CNT, syms);
	if (!syms[SYM_RUNOPS].found || !syms[SYM_RUNOPS].size)
		return -ENOENT; /* perl linked to libperl.so: the library is the interpreter */
	revision = version_byte(exe->elf, &syms[SYM_REVISION]);
	version = version_byte(exe->elf, &syms[SYM_VERSION]);
	subversion = version_byte(exe->elf, &syms[SYM_SUBVERSION]);
	f->bpf.range_start[0] = syms[SYM_RUNOPS].addr;
	f->bpf.range_end[0] = syms[SYM_RUNOPS].addr + syms[SYM_RUNOPS].size;
	/* interp_file's version bytes: 5.36 is (major 5, minor 36). */
	f->bpf.major = revision > 0 ? (uint8_t)revision : 0;
	f->bpf.minor = version > 0 ? (uint8_t)version : 0;
	f->thr_key_vaddr = syms[SYM_THR_KEY].found ? syms[SYM_THR_KEY].addr : 0;
	f->curinterp_vaddr = syms[SYM_CURINTERP].found ? syms[SYM_CURINTERP].addr : 0;
	f->op_name_vaddr = syms[SYM_OP_NAME].found ? syms[SYM_OP_NAME].addr : 0;
	f->op_name_sz = syms[SYM_OP_NAME].found ? syms[SYM_OP_NAME].size : 0;
	f->bpf.supported = 0;
	l = layout_find(revision, version);
	if (l && f->thr_key_vaddr && f->curinterp_vaddr && f->op_name_vaddr) {
		f->layout = *l;
		f->bpf.supported = 1;
		f->bpf.perl.off = f->layout.bpf;
	}
	pr_debug("perl: %s: Perl %d.%d.%d%s%s, runops %#llx-%#llx\n", exe->path, revision, version,
		 subversion, f->thr_key_vaddr ? "" : " (not threaded)",
		 l ? "" : " (no layout for this version)",
		 (unsigned long long)f->bpf.range_start[0],
		 (unsigned long long)f->bpf.range_end[0]);
	return 0;
}

static int perl_file_detect(void *rt, const struct executable *exe, void *file_state,
			    struct interp_file *bpf)
{
	struct perl_file *f = file_state;

	(void)rt;
	if (detect(exe, f))
		return -ENOENT;
	*bpf = f->bpf;
	return 0;
}

/* ---- reading Perl's structures ---- */

/* A HEK's key (malloc'ed, printable), or NULL. */
static char *read_hek(pid_t pid, uint64_t hek, const struct perl_layout *l)
{
	int32_t len;

	if (!hek || interp__read_mem(pid, hek + l->hek_len, &len, sizeof(len)) || len < 0)
		return NULL;
	return interp__read_text(pid, hek + l->hek_key,
				 len > PERL_NAME_MAX ? PERL_NAME_MAX : (size_t)len);
}

/* sv_any and the type byte of the SV at sv; 0 or -errno. */
static int read_sv_head(pid_t pid, uint64_t sv, const struct perl_layout *l, uint64_t *any,
			uint32_t *flags)
{
	if (!sv || interp__read_u64(pid, sv, any) ||
	    interp__read_mem(pid, sv + l->bpf.sv_flags, flags, sizeof(*flags)))
		return -EFAULT;
	return 0;
}

/* The address of the aux part (HvAUX) of the HV at hv whose body is at any; 0 or -EFAULT. */
static int read_hv_aux(pid_t pid, uint64_t hv, uint64_t any, const struct perl_layout *l,
		       uint64_t *aux)
{
	uint64_t array, max;

	if (!l->aux_after_array) {
		*aux = any + l->xpvhv_aux;
		return 0;
	}
	/* Before 5.36: right after the bucket array, whose size is a power of two. */
	if (interp__read_u64(pid, hv + l->sv_u, &array) || !array ||
	    interp__read_u64(pid, any + l->xhv_max, &max) || max >= PERL_HVMAX_SANE ||
	    (max & (max + 1)))
		return -EFAULT;
	*aux = array + (max + 1) * sizeof(uint64_t);
	return 0;
}

/* A stash's name (HvNAME), malloc'ed, or NULL (not a named stash). */
static char *read_stash_name(pid_t pid, uint64_t hv, const struct perl_layout *l)
{
	uint64_t any, aux, name;
	uint32_t flags;
	int32_t count;

	/* SVf_OOK on an HV: it has its aux part (SVphv_HasAUX since 5.38, the same bit). */
	if (read_sv_head(pid, hv, l, &any, &flags) || (flags & 0xff) != PERL_SVT_PVHV ||
	    !(flags & PERL_SVF_OOK) || !any || read_hv_aux(pid, hv, any, l, &aux) ||
	    interp__read_u64(pid, aux + l->aux_name, &name) ||
	    interp__read_mem(pid, aux + l->aux_name_count, &count, sizeof(count)))
		return NULL;
	/* Several names (a stash aliased or renamed): name points at an array of HEKs whose
	 * first is the name (HvNAME_HEK_NN).
	 */
	if (count && (!name || interp__read_u64(pid, name, &name)))
		return NULL;
	return read_hek(pid, name, l);
}

static bool is_special_block(const char *name)
{
	static const char *const blocks[] = { "BEGIN", "END", "INIT", "CHECK", "UNITCHECK" };
	size_t i;

	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (!strcmp(name, blocks[i]))
			return true;
	return false;
}

/* `pkg::name` from a sub's package stash and its name (both consumed; BEGIN and the other
 * special blocks without their package), or NULL.
 */
static char *qualify(pid_t pid, uint64_t stash, char *name, const struct perl_layout *l)
{
	char *pkg, *full;
	size_t n;

	if (!name || is_special_block(name))
		return name;
	pkg = stash ? read_stash_name(pid, stash, l) : NULL;
	if (!pkg)
		return name;
	n = strlen(pkg) + strlen(name) + 3;
	full = malloc(n);
	if (full)
		snprintf(full, n, "%s::%s", pkg, name);
	free(pkg);
	free(name);
	return full;
}

/* A glob's `Pkg::name`, or NULL. */
static char *read_gv_name(pid_t pid, uint64_t gv, const struct perl_layout *l)
{
	uint64_t any, hek, stash;
	uint32_t flags;

	if (read_sv_head(pid, gv, l, &any, &flags) || (flags & 0xff) != PERL_SVT_PVGV || !any ||
	    interp__read_u64(pid, any + l->xpvgv_namehek, &hek) ||
	    interp__read_u64(pid, any + l->xpvgv_stash, &stash))
		return NULL;
	return qualify(pid, stash, read_hek(pid, hek, l), l);
}

/* The `Pkg::name` of a sub without a glob (CvNAMED: name HEK and stash in the CV) whose name
 * HEK's address has the cookie eBPF saw, or NULL.
 */
static char *read_cv_name(pid_t pid, uint64_t cv, uint8_t cookie, const struct perl_layout *l)
{
	uint64_t any, hek, stash;
	uint32_t flags;

	if (read_sv_head(pid, cv, l, &any, &flags) || (flags & 0xff) != PERL_SVT_PVCV || !any ||
	    interp__read_mem(pid, any + l->bpf.xcv_flags, &flags, sizeof(flags)) ||
	    !(flags & PERL_CVF_NAMED) || interp__read_u64(pid, any + l->bpf.xcv_gv, &hek) ||
	    ((hek >> 3) & 0xff) != cookie || interp__read_u64(pid, any + l->xcv_stash, &stash))
		return NULL;
	return qualify(pid, stash, read_hek(pid, hek, l), l);
}

/* The name of the sub a frame's addr holds (a glob, or a CV without one), or NULL. */
static char *read_sub_name(pid_t pid, uint64_t addr, const struct perl_layout *l)
{
	if (addr >> PERL_FRAME_TYPE_SHIFT == PERL_FRAME_SUB)
		return read_gv_name(pid, addr & PERL_FRAME_PTR_MASK, l);
	return read_cv_name(pid, addr & PERL_FRAME_ADDR_MASK,
			    (uint8_t)(addr >> PERL_FRAME_COOKIE_SHIFT), l);
}

/* ---- per-process attach and layout check ---- */

/* Whether the interpreter's own PL_op_name calls op number op name: 0, -EINVAL (it does not:
 * the table's op numbers are another version's) or -EFAULT (unreadable).
 */
static int check_op_name(const struct perl_proc *pp, uint16_t op, const char *name)
{
	uint64_t str;
	char *have;
	int err;

	if ((op + 1ull) * sizeof(uint64_t) > pp->file->op_name_sz)
		return -EINVAL;
	if (interp__read_u64(pp->base.pid, pp->op_name + op * sizeof(uint64_t), &str))
		return -EFAULT;
	have = interp__read_cstr(pp->base.pid, str, PERL_OP_NAME_MAX);
	err = !have ? -EFAULT : strcmp(have, name) ? -EINVAL : 0;
	free(have);
	return err;
}

/* The interpreter as the layout describes it: PL_op_name names the ops the walk looks for by
 * number, PL_defstash is the stash named "main", the current stackinfo and COP plausible,
 * PL_thr_key a key eBPF can read. 1 verified, 0 no interpreter yet (or unreadable right now),
 * < 0 wrong layout, *why saying what did not check out.
 */
static int proc_check(struct perl_proc *pp, const char **why)
{
	const struct perl_layout *l = &pp->file->layout;
	const struct perl_offsets *o = &l->bpf;
	uint64_t interp, defstash, si, cop, cxstack;
	int32_t cxix, cxmax, type;
	uint32_t key;
	uint64_t any;
	uint32_t flags;
	char *main_name;
	bool main_ok;
	int err;

	*why = "op numbers";
	if ((err = check_op_name(pp, o->op_enter_eval, "entereval")) ||
	    (err = check_op_name(pp, o->op_require, "require")) ||
	    (err = check_op_name(pp, o->op_dofile, "dofile")))
		return err;
	if (interp__read_u64(pp->base.pid, pp->curinterp, &interp) ||
	    interp__read_mem(pp->base.pid, pp->thr_key, &key, sizeof(key)))
		return -EFAULT;
	if (!interp)
		return 0;
	if (interp__read_u64(pp->base.pid, interp + l->interp_defstash, &defstash) ||
	    interp__read_u64(pp->base.pid, interp + o->interp_curstackinfo, &si) ||
	    interp__read_u64(pp->base.pid, interp + o->interp_curcop, &cop))
		return -EFAULT;
	if (!defstash || !si || !cop)
		return 0; /* perl_construct has not run yet */
	*why = "main stash";
	/* perl_construct names the stash after making it (hv_name_set gives it its aux part): a
	 * hash without one yet is one caught in between (microseconds; under an emulator a check
	 * landed there), "not yet" for the fast tries; anything else not named "main" is wrong
	 */
	if (!read_sv_head(pp->base.pid, defstash, l, &any, &flags) &&
	    (flags & 0xff) == PERL_SVT_PVHV && !(flags & PERL_SVF_OOK) &&
	    pp->tries < CHECK_FAST_TRIES)
		return 0;
	main_name = read_stash_name(pp->base.pid, defstash, l);
	main_ok = main_name && !strcmp(main_name, "main");
	free(main_name);
	if (!main_ok)
		return -EINVAL;
	*why = "current stackinfo";
	if (interp__read_u64(pp->base.pid, si + o->si_cxstack, &cxstack) ||
	    interp__read_mem(pp->base.pid, si + o->si_cxix, &cxix, sizeof(cxix)) ||
	    interp__read_mem(pp->base.pid, si + o->si_cxmax, &cxmax, sizeof(cxmax)) ||
	    interp__read_mem(pp->base.pid, si + o->si_type, &type, sizeof(type)))
		return -EFAULT;
	if (!cxstack || type < PERL_SI_MAIN || type > o->si_type_max || cxmax <= 0 ||
	    cxmax > PERL_CXMAX_SANE || cxix < -1 || cxix > cxmax)
		return -EINVAL;
	*why = "PL_thr_key beyond the first TSD block";
	if (key >= PERL_TSD_KEYS)
		return -ENOTSUP;
	return 1;
}

static int proc_verify(struct perl *pl, struct perl_proc *pp, uint64_t now_ns)
{
	const char *why = NULL;
	int r = proc_check(pp, &why);

	if (r > 0) {
		pp->state = PERL_PROC_VERIFIED;
		pl->stats[PERL_STAT_VERIFIED]++;
		pr_debug("perl: pid %d: layout verified\n", (int)pp->base.pid);
		return 0;
	}
	if (r == -EINVAL || r == -ENOTSUP) {
		/* Kept attached: proc_refresh flags its eBPF entry, so its samples show a marker. */
		pp->state = PERL_PROC_REJECTED;
		pl->stats[PERL_STAT_REJECTED]++;
		pr_warn("perl: pid %d (%s): interpreter layout check failed (%s): native frames only\n",
			(int)pp->base.pid, pp->file->base.path, why);
		return 0;
	}
	/* No interpreter yet, or unreadable right now (exiting): eBPF checks every context it
	 * reads anyway. Checked again, less often after a while.
	 */
	pp->tries++;
	pp->next_check_ns = now_ns + (pp->tries < CHECK_FAST_TRIES ? CHECK_INTERVAL_NS
								   : CHECK_INTERVAL_IDLE_NS);
	return 0;
}

static int perl_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			    void *proc_state, struct interp_proc *bpf)
{
	struct perl_file *f = file_state;
	struct perl_proc *pp = proc_state;

	(void)rt;
	if (!f->bpf.supported)
		return -ENOTSUP;
	pp->file = f;
	pp->thr_key = bias + f->thr_key_vaddr;
	pp->curinterp = bias + f->curinterp_vaddr;
	pp->op_name = bias + f->op_name_vaddr;
	pp->next_check_ns = now_ns;
	bpf->perl.thr_key = pp->thr_key;
	bpf->perl.tsd_off = GLIBC_TSD_FROM_TP;
	pr_debug("perl: pid %d: %s, PL_thr_key at %#llx\n", (int)pp->base.pid, f->base.path,
		 (unsigned long long)pp->thr_key);
	return 0;
}

static int perl_proc_tick(void *rt, void *proc_state, uint64_t now_ns)
{
	struct perl_proc *pp = proc_state;

	if (pp->state == PERL_PROC_PENDING && pp->next_check_ns <= now_ns)
		return proc_verify(rt, pp, now_ns);
	return 0;
}

/* A rejected process stays attached with its eBPF entry flagged: its samples get
 * "[perl: layout check failed]" where the Perl frames would be, counted.
 */
static int perl_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			     struct interp_code_range *code)
{
	struct perl_proc *pp = proc_state;

	(void)rt, (void)now_ns, (void)code;
	if (pp->state != PERL_PROC_REJECTED || bpf->perl.rejected)
		return 0;
	bpf->perl.rejected = 1;
	return 1;
}

/* ---- symbolization ---- */

static const struct interp_marker_text marker_texts[] = {
	{ PERL_MARKER_UNSUPPORTED, "unsupported version" },
	{ PERL_MARKER_TRUNCATED, "more frames truncated" },
	{ PERL_MARKER_READ_FAILED, "context unreadable" },
	{ PERL_MARKER_BAD_FRAME, "bad context" },
	{ PERL_MARKER_MIXED, "another interpreter in the stack" },
	{ PERL_MARKER_REJECTED, "layout check failed" },
};

/* The name of a sub's frame (symbol_cache_read_fn; ctx: the layout). */
static int read_name(const void *ctx, pid_t pid, uint64_t addr, void *entry)
{
	struct name_entry *e = entry;

	e->name = read_sub_name(pid, addr, ctx);
	if (!e->name)
		return -EFAULT;
	e->key.bytes = (uint32_t)strlen(e->name) + 1; /* in the cache's byte cap */
	return 0;
}

/* The name of a frame of a sub (its glob, or its CV) from reader, else from the process
 * whose state it is; NULL with a marker in *out when unreadable.
 */
static const char *frame_name(struct perl *pl, struct perl_proc *pp, pid_t reader, uint64_t addr,
			      struct interp_symbol *out)
{
	const struct name_entry *e = symbol_cache__get(&pl->names, &pp->base, reader, addr, 0, 0,
						       read_name, &pp->file->layout, out, NULL);

	return e ? e->name : NULL;
}

/* The statement of a frame: file and full line when the COP is still the one eBPF saw (its
 * line agrees with the sample's), read from reader, else from the process whose state it is.
 * A cached entry is used while its line agrees with eBPF's 16 bits, checked against the COP
 * (line and file pointer) again once COP_RECHECK_NS have passed; the code of an eval STRING is
 * never cached ("(eval 8)" and "(eval 9)" are compiled at the same addresses, one after the
 * other). Reads are on the process's budget: without it, the cached entry unchecked or NULL.
 */
static const struct cop_entry *frame_cop(struct perl *pl, struct perl_proc *pp, pid_t reader,
					 uint64_t cop, uint32_t line16)
{
	const struct perl_layout *l = &pp->file->layout;
	uint64_t slot = lru_sets__slot(
		&pl->cop_slots,
		u64_hash(cop ^ u64_hash((uint64_t)pp->base.pid << 32 | pp->base.gen)));
	struct cop_entry *e = &pl->cops[slot], *found = NULL;
	bool cached = e->pid == pp->base.pid && e->gen == pp->base.gen && e->cop == cop &&
		      (uint32_t)(e->line & 0xffff) == line16;
	pid_t from = reader;
	uint64_t file, now;
	uint32_t line;
	int tries;
	bool readable = false;

	if (!symbol_cache__budget_begin(&pp->base, &now)) {
		if (cached && now - e->checked_ns < COP_RECHECK_NS)
			return e;
		pl->stats[PERL_STAT_OVER_BUDGET]++;
		return cached ? e : NULL;
	}
	if (cached && now - e->checked_ns < COP_RECHECK_NS)
		return e;
	for (tries = 0; tries < 2 && !found; tries++, from = pp->base.pid) {
		if (tries && reader == pp->base.pid)
			break;
		pl->stats[PERL_STAT_COP_READS]++;
		if (interp__read_mem(from, cop + l->bpf.cop_line, &line, sizeof(line)))
			continue;
		readable = true;
		if ((line & 0xffff) != line16 || interp__read_u64(from, cop + l->cop_file, &file))
			continue;
		found = e;
		if (e->pid == pp->base.pid && e->gen == pp->base.gen && e->cop == cop &&
		    e->line == (int)line && e->file_ptr == file) {
			e->checked_ns = now;
			break;
		}
		free(e->file);
		*e = (struct cop_entry){ .pid = pp->base.pid,
					 .gen = pp->base.gen,
					 .cop = cop,
					 .line = (int)line,
					 .file_ptr = file,
					 .checked_ns = now,
					 .file = interp__read_cstr(from, file, PERL_NAME_MAX) };
		if (e->file && !strncmp(e->file, "(eval ", 6))
			e->pid = 0; /* returned now, never found again */
	}
	symbol_cache__budget_end(&pp->base, now);
	if (found)
		return found;
	/* Nothing readable: the process has exited (a sample read after its end: the agent reads
	 * its samples every 250 ms). Its memory can no longer change, so the statement cached for
	 * this COP at this line is still the one the sample saw.
	 */
	if (!readable && cached) {
		pl->stats[PERL_STAT_COP_AFTER_EXIT]++;
		return e;
	}
	pl->stats[PERL_STAT_COP_STALE]++;
	return NULL;
}

static void perl_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			   struct interp_symbol *out)
{
	uint64_t type = uf->addr >> PERL_FRAME_TYPE_SHIFT;
	uint64_t cop = uf->file_id & PERL_FRAME_ADDR_MASK;
	uint32_t line16 = (uint32_t)(uf->file_id >> PERL_FRAME_LINE_SHIFT);
	const struct cop_entry *c = NULL;
	struct perl *pl = rt;
	struct perl_proc *pp = proc_state;
	const char *name;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	switch (type) {
	case PERL_FRAME_SUB:
	case PERL_FRAME_NAMED:
		name = frame_name(pl, pp, reader, uf->addr, out);
		if (!name)
			return;
		break;
	case PERL_FRAME_EVAL:
		name = "(eval)";
		break;
	case PERL_FRAME_FILE:
		name = "(require)";
		break;
	case PERL_FRAME_MAIN:
		name = "main";
		break;
	case PERL_FRAME_SORT:
		name = "(sort block)";
		break;
	default:
		return interp__marker(out, "?");
	}
	if (cop)
		c = frame_cop(pl, pp, reader, cop, line16);
	*out = (struct interp_symbol){
		.function = name,
		.file = c ? c->file : NULL,
		.line = c ? c->line : (line16 == 0xffff ? 0 : (int)line16),
	};
}

const struct interp_runtime perl_runtime = {
	.name = "perl",
	.frame_type = "perl", /* the reference agent's value for Perl frames */
	.frame_kind = FRAME_KIND_PERL,
	INTERP_RUNTIME_COUNTERS(PERL_COUNTERS, PERL_COUNTER_CNT, PERL_STATS, struct perl),
	.init = perl_init,
	.fini = perl_fini,
	.file_state_sz = sizeof(struct perl_file),
	.file_detect = perl_file_detect,
	.proc_state_sz = sizeof(struct perl_proc),
	.proc_attach = perl_proc_attach,
	.proc_tick = perl_proc_tick,
	.proc_refresh = perl_proc_refresh,
	.symbolize = perl_symbolize,
};
