/* CPython, as a runtime of src/interp/interp.h: finds interpreter binaries among the mapped
 * files, tells the eBPF walk (bpf/interp/python/walk.h) where their eval loop is and how their
 * structures are laid out, tells it where each process's runtime is, and turns the (code
 * object, instruction offset, cookie) frames it emits into function, file and line by reading
 * the process's memory.
 *
 * Versions: CPython 3.6 to 3.14 on x86-64 and arm64 (LP64, glibc: the same layouts; the TSD
 * slot per architecture, ../glibc_tsd.h), default (GIL) builds. Layouts come from a table per
 * minor version (measured, docs in ../shared/docs/reference/runtimes.md §3.2) and, for 3.13
 * and 3.14, from the _Py_DebugOffsets at the start of _PyRuntime, read from the file itself
 * (initialised data: the same bytes every process starts with). 3.6 has no _PyRuntime: its
 * interpreter list and gilstate key are file-static (interp_head, autoTLSkey), found in
 * .symtab. Layouts are checked against each process once its interpreter is initialised
 * (thread list, TSD slot, code object type); a process that fails the check gets native
 * frames only. Other Pythons (2.7, free-threaded builds, 3.15...) get a marker frame above
 * their eval loop.
 *
 * Invariants: the code cache holds PYTHON_CODE_CACHE_CAP entries (../common/symbol_cache.h),
 * keyed by (pid, attach generation, code address); an entry is re-read when the eBPF cookie
 * disagrees with it (code object freed and its address reused). Each attach gets a new
 * generation, so a process that exec'd another Python never hits its old entries.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "formats/elf_file.h"
#include "interp/common/glibc_tsd.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "interp/common/symbol_cache.h"
#include "interp/python/python_lines.h"
#include "proc/executable.h"
#include "formats/eh_frame.h"

#define PYTHON_CODE_CACHE_CAP 4096
/* What the cached code objects may hold in all (names, line indexes): a process that makes
 * thousands of code objects with huge line tables costs the profiler this much, not more.
 */
#define PYTHON_CODE_CACHE_BYTES (8u << 20)
/* A code object's line index: at most this many runs of one line (8 bytes each; the largest
 * function of the standard library has ~2,000); past it, lines read as unknown (counted).
 */
#define LINE_RANGES_MAX 32768

#define NO PY_NO_OFFSET
#define VERIFY_INTERVAL_NS (100 * 1000 * 1000ULL)
#define VERIFY_TRIES 100 /* 10 s for an interpreter to finish initialising */
/* An interpreter checked while it initialises (its thread state made, its TSD slot not set yet)
 * looks like a wrong layout for a moment: checked again for 1 s before the process is rejected.
 * A check that early happens when the process's mappings came from eBPF at exec (no /proc
 * read to wait for): 2 of 6 py3.12 recordings lost every Python frame before.
 */
#define VERIFY_INCONSISTENT_TRIES 10
#define MAX_THREADS_CHECKED 64
#define STR_MAX 1024
#define LINETABLE_MAX (1u << 20)
#define CODE_READ_SZ 160

/* Everything known about one minor version's layout (x86-64). */
struct py_layout {
	uint8_t major, minor;
	struct py_offsets bpf;
	uint16_t rt_interp_head;  /* _PyRuntime.interpreters.head (NO: 3.6's interp_head) */
	uint16_t rt_tss;          /* _PyRuntime's autoTSSkey (NO: 3.6's autoTLSkey) */
	uint16_t is_threads_head; /* PyInterpreterState's first thread state */
	uint16_t ts_next;
	uint16_t ts_thread_id; /* pthread_t: glibc's struct pthread address */
	uint16_t co_filename, co_name, co_qualname, co_linetable;
	uint16_t str_ascii_data;   /* compact ASCII str: sizeof(PyASCIIObject) */
	uint16_t str_compact_data; /* compact non-ASCII: sizeof(PyCompactUnicodeObject) */
	enum python_line_format lines;
};

/* runtimes.md §3.2 (measured with gdb on pyenv DWARF, walked live on pyenv and Debian; 3.14
 * from the _Py_DebugOffsets of Debian's 3.14.10, walked live); one version per block, kept as
 * measured rather than one field per line. Tail: rt_interp_head, rt_tss, is_threads_head,
 * ts_next, ts_thread_id, co_filename, co_name, co_qualname, co_linetable, str_ascii_data,
 * str_compact_data, lines.
 */
/* clang-format off */
static const struct py_layout layouts[] = {
	{ 3, 6,
	  { .ts_interp = 16, .ts_frame = 24, .cframe_frame = NO,
	    .fr_back = 24, .fr_code = 32, .fr_instr = 120, .fr_entry = NO, .fr_read_sz = 124,
	    .co_argcount = 16, .co_firstlineno = 36, .co_code = 0,
	    .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EACH,
	    .tstate_kind = PY_TSTATE_KEY },
	  NO, NO, 8, 8, 152, 96, 104, NO, 112, 48, 72, PYTHON_LINES_LNOTAB },
	{ 3, 7,
	  { .ts_interp = 16, .ts_frame = 24, .cframe_frame = NO,
	    .fr_back = 24, .fr_code = 32, .fr_instr = 104, .fr_entry = NO, .fr_read_sz = 112,
	    .co_argcount = 16, .co_firstlineno = 36, .co_code = 0,
	    .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EACH },
	  24, 1504, 8, 8, 176, 96, 104, NO, 112, 48, 72, PYTHON_LINES_LNOTAB },
	{ 3, 8,
	  { .ts_interp = 16, .ts_frame = 24, .cframe_frame = NO,
	    .fr_back = 24, .fr_code = 32, .fr_instr = 104, .fr_entry = NO, .fr_read_sz = 112,
	    .co_argcount = 16, .co_firstlineno = 40, .co_code = 0,
	    .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EACH },
	  32, 1392, 8, 8, 176, 104, 112, NO, 120, 48, 72, PYTHON_LINES_LNOTAB },
	{ 3, 9,
	  { .ts_interp = 16, .ts_frame = 24, .cframe_frame = NO,
	    .fr_back = 24, .fr_code = 32, .fr_instr = 104, .fr_entry = NO, .fr_read_sz = 112,
	    .co_argcount = 16, .co_firstlineno = 40, .co_code = 0,
	    .instr_kind = PY_INSTR_LASTI_BYTES, .entry_kind = PY_ENTRY_EACH },
	  32, 584, 8, 8, 176, 104, 112, NO, 120, 48, 72, PYTHON_LINES_LNOTAB },
	{ 3, 10,
	  { .ts_interp = 16, .ts_frame = 24, .cframe_frame = NO,
	    .fr_back = 24, .fr_code = 32, .fr_instr = 96, .fr_entry = NO, .fr_read_sz = 112,
	    .co_argcount = 16, .co_firstlineno = 40, .co_code = 0,
	    .instr_kind = PY_INSTR_LASTI_UNITS, .entry_kind = PY_ENTRY_EACH },
	  32, 584, 8, 8, 176, 104, 112, NO, 120, 48, 72, PYTHON_LINES_LINETABLE },
	{ 3, 11,
	  { .ts_interp = 16, .ts_frame = 56, .cframe_frame = 8,
	    .fr_back = 48, .fr_code = 32, .fr_instr = 56, .fr_entry = 68, .fr_read_sz = 72,
	    .co_argcount = 56, .co_firstlineno = 72, .co_code = 184,
	    .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_FLAG },
	  40, 592, 16, 8, 152, 112, 120, 128, 136, 48, 72, PYTHON_LINES_LOCATIONS },
	{ 3, 12,
	  { .ts_interp = 16, .ts_frame = 56, .cframe_frame = 0,
	    .fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_entry = 70, .fr_read_sz = 72,
	    .co_argcount = 52, .co_firstlineno = 68, .co_code = 192,
	    .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_SHIM },
	  40, 1544, 72, 8, 136, 112, 120, 128, 136, 40, 56, PYTHON_LINES_LOCATIONS },
	{ 3, 13,
	  { .ts_interp = 16, .ts_frame = 72, .cframe_frame = NO,
	    .fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_entry = 70, .fr_read_sz = 72,
	    .co_argcount = 52, .co_firstlineno = 68, .co_code = 200,
	    .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_SHIM },
	  632, 2160, 7344, 8, 152, 112, 120, 128, 136, 40, 56, PYTHON_LINES_LOCATIONS },
	{ 3, 14,
	  { .ts_interp = 16, .ts_frame = 72, .cframe_frame = NO,
	    .fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_entry = 74, .fr_read_sz = 80,
	    .co_argcount = 52, .co_firstlineno = 68, .co_code = 208,
	    .instr_kind = PY_INSTR_POINTER, .entry_kind = PY_ENTRY_SHIM, .fr_code_tags = 3 },
	  808, 2336, 7344, 8, 152, 112, 120, 128, 136, 40, 56, PYTHON_LINES_LOCATIONS },
};
/* clang-format on */

struct py_file {
	struct interp_file_base base;
	struct interp_file bpf;     /* what detect() found: ranges, version, offsets */
	struct py_layout layout;    /* valid when bpf.supported */
	uint64_t interp_head_vaddr; /* the first interpreter's pointer */
	uint64_t tss_vaddr;         /* the gilstate key (layout.bpf.tstate_kind) */
	uint64_t code_type_vaddr;   /* PyCode_Type */
};

enum py_proc_state {
	PY_PROC_PENDING = 0, /* attached, interpreter not initialised yet: checked again later */
	PY_PROC_VERIFIED,
	PY_PROC_REJECTED, /* layout check failed */
};

struct py_proc {
	struct interp_proc_base base;
	struct py_file *file;
	uint64_t interp_head, tss; /* absolute: py_file's */
	uint64_t code_type;        /* absolute PyCode_Type */
	uint64_t main_tp;          /* the main thread's thread pointer (0: not found yet) */
	enum py_proc_state state;
	unsigned int tries;
	uint64_t next_check_ns;
};

struct code_entry {
	struct symbol_cache_key key; /* addr: the code object */
	int firstlineno;
	char *name;
	char *filename;
	struct python_line_index lines;
};

/* Our own counters (python_runtime.stat_names). */
#define PY_STATS(X)                                             \
	/* layouts checked against the live interpreter */      \
	X(PY_STAT_VERIFIED, "layouts verified")                 \
	/* code objects read from process memory */             \
	X(PY_STAT_CODE_READS, "code objects read")              \
	/* frames whose code object could not be read */        \
	X(PY_STAT_UNREADABLE, "code objects unreadable")        \
	/* cookie mismatch: code object freed and reused */     \
	X(PY_STAT_STALE, "code objects stale")                  \
	/* not read: the process's read budget spent */         \
	X(PY_STAT_OVER_BUDGET, "reads over budget")             \
	/* dropped to keep the cache in its bytes */            \
	X(PY_STAT_EVICTED, "code objects evicted for room")     \
	/* line tables past LINE_RANGES_MAX or LINETABLE_MAX */ \
	X(PY_STAT_LINES_TRUNCATED, "line tables truncated")

enum py_stat { PY_STATS(INTERP_LIST_ENUM) PY_STAT_CNT };

struct python {
	struct symbol_cache codes;
	uint64_t stats[PY_STAT_CNT];
};

static void code_entry__clear(void *ctx, void *entry)
{
	struct code_entry *e = entry;

	(void)ctx;
	free(e->name);
	free(e->filename);
	python_lines__index_free(&e->lines);
}

/* What the cache counts (stats[]) and the markers it gives. */
static const struct symbol_cache_report cache_report = {
	PY_STAT_CODE_READS, PY_STAT_UNREADABLE,       PY_STAT_STALE,       PY_STAT_OVER_BUDGET,
	PY_STAT_EVICTED,    "code object unreadable", "code object reused"
};

static int py_init(void *rt)
{
	struct python *py = rt;
	int err = symbol_cache__init(&py->codes, PYTHON_CODE_CACHE_CAP, sizeof(struct code_entry),
				     true, code_entry__clear, NULL, &cache_report, py->stats);

	py->codes.bytes_max = PYTHON_CODE_CACHE_BYTES;
	return err;
}

static void py_fini(void *rt)
{
	symbol_cache__free(&((struct python *)rt)->codes);
}

/* ---- ELF: symbols by name, bytes at an address ---- */

/* The symbols detection looks up (interp_elf__symbols): X(ID, "name") entries that make the
 * enum and sym_names (INTERP_LIST_ENUM / INTERP_LIST_TEXT).
 */
#define PY_SYMS(X)                                                   \
	X(SYM_RUNTIME, "_PyRuntime")                                 \
	X(SYM_EVAL, "_PyEval_EvalFrameDefault")                      \
	X(SYM_EVAL_COLD, "_PyEval_EvalFrameDefault.cold")            \
	X(SYM_VERSION, "Py_Version")                                 \
	X(SYM_CODE_TYPE, "PyCode_Type")                              \
	/* 3.6 (no _PyRuntime): pystate.c's statics, .symtab only */ \
	X(SYM_INTERP_HEAD, "interp_head")                            \
	X(SYM_AUTO_TLS_KEY, "autoTLSkey")                            \
	/* 2.x's eval loop: only for its marker */                   \
	X(SYM_EVAL_2, "PyEval_EvalFrameEx")

enum py_sym { PY_SYMS(INTERP_LIST_ENUM) SYM_CNT };

static const char *const sym_names[SYM_CNT] = { PY_SYMS(INTERP_LIST_TEXT) };

/* ---- the cold part of the eval loop ---- */

#define COLD_TARGETS_MAX 4096

struct cold_search {
	uint64_t targets[COLD_TARGETS_MAX];
	size_t cnt;
	uint64_t best_start, best_end;
	size_t best_hits;
};

static int cold_fde(void *ctx, const struct cfi_fde *fde)
{
	struct cold_search *cs = ctx;
	size_t i, hits = 0;

	for (i = 0; i < cs->cnt; i++)
		hits += cs->targets[i] >= fde->pc_begin && cs->targets[i] < fde->pc_end;
	if (hits > cs->best_hits) {
		cs->best_hits = hits;
		cs->best_start = fde->pc_begin;
		cs->best_end = fde->pc_end;
	}
	return 0;
}

/* The compiler-split cold part of [start, end): the FDE that most near jumps leaving the
 * function land in (or the FDE of the ".cold" symbol when there is one). Jumps are found by
 * their opcodes (jcc rel32: 0f 80-8f, jmp rel32: e9) without decoding: a false match only adds
 * a stray target, which does not win the vote.
 */
static void find_cold(struct elf_file *ef, uint64_t start, uint64_t end,
		      const struct interp_sym *cold, uint64_t *cold_start, uint64_t *cold_end)
{
	struct cold_search *cs = calloc(1, sizeof(*cs));
	const uint8_t *code = interp_elf__bytes(ef, start, end - start);
	uint64_t i;

	*cold_start = *cold_end = 0;
	if (!cs)
		goto cleanup;
	if (cold->found) {
		cs->targets[cs->cnt++] = cold->addr;
	} else if (code) {
		for (i = 0; i + 6 <= end - start && cs->cnt < COLD_TARGETS_MAX; i++) {
			int32_t rel;
			uint64_t next, target;

			if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80) {
				memcpy(&rel, code + i + 2, 4);
				next = start + i + 6;
			} else if (code[i] == 0xe9) {
				memcpy(&rel, code + i + 1, 4);
				next = start + i + 5;
			} else {
				continue;
			}
			target = next + (int64_t)rel;
			if (target < start || target >= end)
				cs->targets[cs->cnt++] = target;
		}
	}
	if (!cs->cnt)
		goto cleanup;
	if (interp_elf__walk_fdes(ef, cold_fde, cs))
		goto cleanup;
	/* A real split part gets many jumps (Debian 3.11: 314); the .cold symbol is enough. */
	if ((cs->best_hits >= 8 || (cold->found && cs->best_hits)) &&
	    (cs->best_end <= start || cs->best_start >= end)) {
		*cold_start = cs->best_start;
		*cold_end = cs->best_end;
	}
cleanup:
	free(cs);
}

/* ---- detection ---- */

static bool name_is_python(const char *path, int *major, int *minor)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython", 9))
		p = base + 9;
	else if (!strncmp(base, "python", 6))
		p = base + 6;
	else
		return false;
	*major = *minor = -1;
	if (p[0] >= '2' && p[0] <= '9' && p[1] == '.' && p[2] >= '0' && p[2] <= '9') {
		*major = p[0] - '0';
		*minor = p[2] - '0';
		if (p[3] >= '0' && p[3] <= '9')
			*minor = *minor * 10 + (p[3] - '0');
	}
	return true;
}

/* The layouts above are x86-64's. On AArch64 glibc's pthread_mutex_t is 48 bytes (40 on
 * x86-64): up to 3.11, _PyRuntime.ceval.gil holds two of them (mutex, switch_mutex) before
 * gilstate, so autoTSSkey is 16 bytes further (Debian 12's arm64 python3.11: 0x260, x86-64's
 * 0x250, as PyGILState_GetThisThreadState reads it). By the interpreter file's machine, not
 * the build's: tests/unit/test_python_arm64.c checks Debian's arm64 file on any host. 3.12 and
 * 3.13 on AArch64 are not measured: the per-process check rejects a wrong layout (native
 * frames only).
 */
static void layout_for_arch(struct py_layout *l, const struct elf_file *ef)
{
	if (elf_file__machine(ef) == EM_AARCH64 && l->major == 3 && l->minor <= 11 &&
	    l->rt_tss != NO)
		l->rt_tss += 16;
}

static const struct py_layout *layout_for(int major, int minor)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/* The fields of _Py_DebugOffsets we use, as indices of its uint64_t words (the cookie is word
 * 0), per version: the struct grew in 3.14 (interpreter_state.threads_main,
 * .code_object_generation, .tlbc_generation; interpreter_frame.stackpointer, .tlbc_index;
 * code_object.co_tlbc; set objects), so the later sections moved. From
 * Include/internal/pycore_debug_offsets.h of 3.13 and 3.14, checked against the words of
 * pyenv's 3.13.0, Debian's 3.13.5 and 3.14.10.
 */
#define DEBUG_FIELDS(X)                                                     \
	X(DBG_VERSION, 1, 1)                                                \
	X(DBG_FREE_THREADED, 2, 2)                                          \
	X(DBG_INTERP_HEAD, 5, 5)      /* runtime_state.interpreters_head */ \
	X(DBG_THREADS_HEAD, 9, 9)     /* interpreter_state.threads_head */  \
	X(DBG_TS_NEXT, 21, 24)        /* thread_state.next */               \
	X(DBG_TS_INTERP, 22, 25)      /* .interp */                         \
	X(DBG_TS_FRAME, 23, 26)       /* .current_frame */                  \
	X(DBG_TS_THREAD_ID, 24, 27)   /* .thread_id */                      \
	X(DBG_FR_BACK, 29, 32)        /* interpreter_frame.previous */      \
	X(DBG_FR_CODE, 30, 33)        /* .executable */                     \
	X(DBG_FR_INSTR, 31, 34)       /* .instr_ptr */                      \
	X(DBG_FR_OWNER, 33, 36)       /* .owner */                          \
	X(DBG_CO_FILENAME, 35, 40)    /* code_object.filename */            \
	X(DBG_CO_NAME, 36, 41)        /* .name */                           \
	X(DBG_CO_QUALNAME, 37, 42)    /* .qualname */                       \
	X(DBG_CO_LINETABLE, 38, 43)   /* .linetable */                      \
	X(DBG_CO_FIRSTLINENO, 39, 44) /* .firstlineno */                    \
	X(DBG_CO_ARGCOUNT, 40, 45)    /* .argcount */                       \
	X(DBG_CO_CODE, 43, 48)        /* .co_code_adaptive */               \
	X(DBG_BYTES_SIZE, 65, 75)     /* bytes_object.ob_size */            \
	X(DBG_BYTES_DATA, 66, 76)     /* .ob_sval */                        \
	X(DBG_STR_STATE, 68, 78)      /* unicode_object.state */            \
	X(DBG_STR_LENGTH, 69, 79)     /* .length */                         \
	X(DBG_STR_ASCII_DATA, 70, 80) /* .asciiobject_size */

#define DEBUG_ENUM(id, i313, i314) id,
#define DEBUG_313(id, i313, i314) i313,
#define DEBUG_314(id, i313, i314) i314,

enum debug_field { DEBUG_FIELDS(DEBUG_ENUM) DBG_CNT };

static const uint8_t debug_index_313[DBG_CNT] = { DEBUG_FIELDS(DEBUG_313) };
static const uint8_t debug_index_314[DBG_CNT] = { DEBUG_FIELDS(DEBUG_314) };

#define DEBUG_WORDS 81 /* the words read: past the last index above */

/* 3.13 and 3.14: take the layout from the file's _Py_DebugOffsets (its minor version's
 * struct), over the measured table entry in l. 0; -ENOTSUP for a free-threaded build (other
 * object headers: not walked); -ENOENT when the file's copy is missing, is not of that
 * version, or disagrees with what the walk takes as fixed (str and bytes headers, a frame
 * that fits PY_FRAME_READ_MAX).
 */
static int debug_offsets(struct elf_file *ef, uint64_t runtime, struct py_layout *l)
{
	const uint8_t *b = interp_elf__bytes(ef, runtime, DEBUG_WORDS * 8);
	const uint8_t *idx = l->minor == 13 ? debug_index_313 : debug_index_314;
	uint64_t q[DEBUG_WORDS], v[DBG_CNT];
	uint16_t read_sz;
	size_t i;

	if (!b || memcmp(b, "xdebugpy", 8) || l->major != 3 || l->minor < 13 || l->minor > 14)
		return -ENOENT;
	memcpy(q, b, sizeof(q));
	for (i = 0; i < DBG_CNT; i++)
		v[i] = q[idx[i]];
	if ((v[DBG_VERSION] >> 16) != (3u << 8 | l->minor))
		return -ENOENT;
	if (v[DBG_FREE_THREADED])
		return -ENOTSUP;
	for (i = DBG_INTERP_HEAD; i < DBG_CNT; i++)
		if (v[i] > 0xfff0)
			return -ENOENT;
	if (v[DBG_BYTES_SIZE] != 16 || v[DBG_BYTES_DATA] != 32 || v[DBG_STR_STATE] != 32 ||
	    v[DBG_STR_LENGTH] != 16)
		return -ENOENT; /* read_str() and read_code() take them as fixed */
	read_sz = (uint16_t)v[DBG_FR_OWNER] + 1;
	for (i = DBG_FR_BACK; i <= DBG_FR_INSTR; i++)
		if (v[i] + 8 > read_sz)
			read_sz = (uint16_t)v[i] + 8;
	read_sz = (read_sz + 7) & ~7u;
	if (read_sz >= PY_FRAME_READ_MAX)
		return -ENOENT;
	l->rt_interp_head = (uint16_t)v[DBG_INTERP_HEAD];
	l->is_threads_head = (uint16_t)v[DBG_THREADS_HEAD];
	l->ts_next = (uint16_t)v[DBG_TS_NEXT];
	l->bpf.ts_interp = (uint16_t)v[DBG_TS_INTERP];
	l->bpf.ts_frame = (uint16_t)v[DBG_TS_FRAME];
	l->ts_thread_id = (uint16_t)v[DBG_TS_THREAD_ID];
	l->bpf.fr_back = (uint16_t)v[DBG_FR_BACK];
	l->bpf.fr_code = (uint16_t)v[DBG_FR_CODE];
	l->bpf.fr_instr = (uint16_t)v[DBG_FR_INSTR];
	l->bpf.fr_entry = (uint16_t)v[DBG_FR_OWNER];
	l->bpf.fr_read_sz = read_sz;
	l->co_filename = (uint16_t)v[DBG_CO_FILENAME];
	l->co_name = (uint16_t)v[DBG_CO_NAME];
	l->co_qualname = (uint16_t)v[DBG_CO_QUALNAME];
	l->co_linetable = (uint16_t)v[DBG_CO_LINETABLE];
	l->bpf.co_firstlineno = (uint16_t)v[DBG_CO_FIRSTLINENO];
	l->bpf.co_argcount = (uint16_t)v[DBG_CO_ARGCOUNT];
	l->bpf.co_code = (uint16_t)v[DBG_CO_CODE];
	l->str_ascii_data = (uint16_t)v[DBG_STR_ASCII_DATA];
	return 0;
}

/* The layout of a version we know, and where its interpreter list and gilstate key are in the
 * file; false when something it needs is missing (a 3.6 without .symtab...).
 */
static bool layout_file(struct py_file *f, const struct executable *exe,
			const struct interp_sym *syms)
{
	const struct py_layout *known = layout_for(f->bpf.major, f->bpf.minor);
	uint64_t runtime = syms[SYM_RUNTIME].addr;

	if (!known || !syms[SYM_CODE_TYPE].found)
		return false;
	f->layout = *known;
	if (known->rt_interp_head == NO) {
		/* 3.6 */
		if (!syms[SYM_INTERP_HEAD].found || !syms[SYM_AUTO_TLS_KEY].found)
			return false;
		f->interp_head_vaddr = syms[SYM_INTERP_HEAD].addr;
		f->tss_vaddr = syms[SYM_AUTO_TLS_KEY].addr;
	} else if (!syms[SYM_RUNTIME].found) {
		return false;
	}
	if (known->minor >= 13) {
		int err = debug_offsets(exe->elf, runtime, &f->layout);

		if (err == -ENOTSUP) {
			pr_debug("%s: a free-threaded build: not walked\n", exe->path);
			return false;
		}
		if (err) {
			pr_debug("%s: no usable _Py_DebugOffsets: measured 3.%u layout\n",
				 exe->path, known->minor);
			f->layout = *known;
		} else if (memcmp(&f->layout, known, sizeof(*known))) {
			pr_debug("%s: _Py_DebugOffsets differ from the measured 3.%u layout\n",
				 exe->path, known->minor);
		}
	}
	layout_for_arch(&f->layout, exe->elf);
	if (known->rt_interp_head != NO) {
		f->interp_head_vaddr = runtime + f->layout.rt_interp_head;
		f->tss_vaddr = runtime + f->layout.rt_tss;
	}
	f->code_type_vaddr = syms[SYM_CODE_TYPE].addr;
	return true;
}

static int detect(const struct executable *exe, struct py_file *f)
{
	struct interp_sym syms[SYM_CNT];
	const struct interp_sym *eval;
	int major, minor;

	if (!exe->elf || !name_is_python(exe->path, &major, &minor))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, SYM_CNT, syms);
	/* A python binary linked against libpython imports these: the library is the one. 2.x
	 * (PyEval_EvalFrameEx, which 3.x keeps as a wrapper) is found for its marker only.
	 */
	eval = &syms[SYM_EVAL];
	if (!eval->found && major == 2)
		eval = &syms[SYM_EVAL_2];
	if (!eval->found || !eval->size)
		return -ENOENT;
	if (syms[SYM_VERSION].found) {
		const uint8_t *v = interp_elf__bytes(exe->elf, syms[SYM_VERSION].addr, 4);
		uint32_t hex;

		if (v) {
			memcpy(&hex, v, 4);
			major = (int)(hex >> 24);
			minor = (int)((hex >> 16) & 0xff);
		}
	}
	f->bpf.major = (uint8_t)(major < 0 ? 0 : major);
	f->bpf.minor = (uint8_t)(minor < 0 ? 0 : minor);
	f->bpf.range_start[0] = eval->addr;
	f->bpf.range_end[0] = eval->addr + eval->size;
	{
		uint64_t cs, ce;

		find_cold(exe->elf, f->bpf.range_start[0], f->bpf.range_end[0],
			  &syms[SYM_EVAL_COLD], &cs, &ce);
		f->bpf.range_start[1] = cs;
		f->bpf.range_end[1] = ce;
	}
	f->bpf.supported = 0;
	if (layout_file(f, exe, syms)) {
		f->bpf.supported = 1;
		f->bpf.py.off = f->layout.bpf;
	}
	return 0;
}

/* The eval loop's compiler-split part, unnamed in a stripped build (Debian's 3.14 runs its
 * whole loop there: the named part is 1,184 bytes), as the function it belongs to.
 */
static const char *py_code_name(void *rt, void *file_state, uint64_t vaddr)
{
	const struct py_file *f = file_state;

	(void)rt;
	if (f->bpf.range_end[1] > f->bpf.range_start[1] && vaddr >= f->bpf.range_start[1] &&
	    vaddr < f->bpf.range_end[1])
		return "_PyEval_EvalFrameDefault";
	return NULL;
}

static int py_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	struct py_file *f = file_state;

	(void)rt;
	if (detect(exe, f))
		return -ENOENT;
	if (f->bpf.supported)
		pr_debug("python: %s: CPython %u.%u, eval loop %#llx-%#llx, cold %#llx-%#llx\n",
			 f->base.path, f->bpf.major, f->bpf.minor,
			 (unsigned long long)f->bpf.range_start[0],
			 (unsigned long long)f->bpf.range_end[0],
			 (unsigned long long)f->bpf.range_start[1],
			 (unsigned long long)f->bpf.range_end[1]);
	*bpf = f->bpf;
	return 0;
}

/* ---- per-process attach and layout check ---- */

/* The gilstate pthread key at pp->tss into *key: 1 set, 0 not set yet, -EINVAL not a key. */
static int proc_key(const struct py_proc *pp, uint32_t *key)
{
	uint32_t tss[2];

	if (interp__read_mem(pp->base.pid, pp->tss, tss, sizeof(tss)))
		return -EFAULT;
	if (pp->file->layout.bpf.tstate_kind == PY_TSTATE_KEY) {
		*key = tss[0]; /* an int, -1 until created */
		if (*key == UINT32_MAX)
			return 0;
	} else {
		*key = tss[1]; /* Py_tss_t { int initialized; key } */
		if (!tss[0])
			return 0;
		if (tss[0] != 1)
			return -EINVAL;
	}
	return *key < 1024 ? 1 : -EINVAL;
}

/* Check the layout against the live interpreter: every thread state belongs to the runtime's
 * interpreter, its libc TSD slot (the gilstate key) points back at it, and the newest frame of
 * a thread holds a PyCode_Type object. 1 verified, 0 not initialised yet, < 0 wrong layout.
 */
static int proc_check(struct py_proc *pp)
{
	const struct py_layout *l = &pp->file->layout;
	uint32_t key;
	uint64_t interp, ts, v, frame, self;
	int threads = 0, tsd_ok = 0, code_ok = 0, set;
	pid_t tid;

	set = proc_key(pp, &key);
	if (set < 0)
		return set;
	if (interp__read_u64(pp->base.pid, pp->interp_head, &interp))
		return -EFAULT;
	if (!set || !interp)
		return 0;
	if (interp__read_u64(pp->base.pid, interp + l->is_threads_head, &ts))
		return -EFAULT;
	if (!ts)
		return 0;
	while (ts && threads < MAX_THREADS_CHECKED) {
		threads++;
		if (interp__read_u64(pp->base.pid, ts + l->bpf.ts_interp, &v) || v != interp)
			return -EINVAL;
		if (key < 32 && !interp__read_u64(pp->base.pid, ts + l->ts_thread_id, &self) &&
		    self &&
		    !interp__read_u64(pp->base.pid, self + GLIBC_TSD_FROM_PTHREAD + 16 * key, &v) &&
		    v == ts) {
			tsd_ok++;
			if (!interp__read_mem(pp->base.pid, self + GLIBC_TID_FROM_PTHREAD, &tid,
					      sizeof(tid)) &&
			    tid == pp->base.pid)
				pp->main_tp = self - GLIBC_PTHREAD_FROM_TP;
		}
		if (!interp__read_u64(pp->base.pid, ts + l->bpf.ts_frame, &frame) && frame &&
		    (l->bpf.cframe_frame == NO ||
		     !interp__read_u64(pp->base.pid, frame + l->bpf.cframe_frame, &frame))) {
			uint8_t owner = 0;

			if (l->bpf.fr_entry != NO && l->bpf.entry_kind == PY_ENTRY_SHIM)
				interp__read_mem(pp->base.pid, frame + l->bpf.fr_entry, &owner, 1);
			if (frame && owner < PY_OWNER_ENTRY &&
			    !interp__read_u64(pp->base.pid, frame + l->bpf.fr_code, &v) &&
			    (v &= ~(uint64_t)l->bpf.fr_code_tags) &&
			    !interp__read_u64(pp->base.pid, v + 8 /* ob_type */, &v)) {
				if (v != pp->code_type)
					return -EINVAL;
				code_ok++;
			}
		}
		if (interp__read_u64(pp->base.pid, ts + l->ts_next, &ts))
			return -EFAULT;
	}
	if (!tsd_ok)
		return key < 32 ? -EINVAL : -ENOTSUP;
	return code_ok ? 1 : 0;
}

/* 0: keep (verified, or not initialised yet and checked again later), < 0: reject. */
static int proc_verify(struct python *py, struct py_proc *pp, uint64_t now_ns)
{
	int r = proc_check(pp);

	if (r > 0) {
		pp->state = PY_PROC_VERIFIED;
		py->stats[PY_STAT_VERIFIED]++;
		pr_debug("python: pid %d: layout verified\n", (int)pp->base.pid);
		return 0;
	}
	if ((r == 0 && ++pp->tries < VERIFY_TRIES) ||
	    (r == -EINVAL && ++pp->tries < VERIFY_INCONSISTENT_TRIES)) {
		pp->next_check_ns = now_ns + VERIFY_INTERVAL_NS;
		return 0;
	}
	if (r == -EFAULT || r == -ESRCH)
		return 0; /* gone, or memory unreadable right now: eBPF checks every sample anyway */
	pp->state = PY_PROC_REJECTED;
	pr_warn("python: pid %d (%s): interpreter layout check failed (%s): native frames only\n",
		(int)pp->base.pid, pp->file->base.path, r ? strerror(-r) : "never initialised");
	return -EINVAL;
}

static int py_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	struct py_file *f = file_state;
	struct py_proc *pp = proc_state;

	(void)rt;
	pp->file = f;
	pp->interp_head = bias + f->interp_head_vaddr;
	pp->tss = bias + f->tss_vaddr;
	pp->code_type = bias + f->code_type_vaddr;
	pp->state = PY_PROC_PENDING;
	pp->next_check_ns = now_ns;
	bpf->py.interp_head = pp->interp_head;
	bpf->py.tss = pp->tss;
	bpf->py.tsd_off = GLIBC_TSD_FROM_TP;
	pr_debug("python: pid %d: %s, interpreters at %#llx, gilstate key at %#llx\n",
		 (int)pp->base.pid, f->base.path, (unsigned long long)pp->interp_head,
		 (unsigned long long)pp->tss);
	return 0;
}

static int py_proc_tick(void *rt, void *proc_state, uint64_t now_ns)
{
	struct py_proc *pp = proc_state;

	if (pp->state == PY_PROC_REJECTED)
		return -EINVAL;
	if (pp->state == PY_PROC_PENDING && pp->next_check_ns <= now_ns)
		return proc_verify(rt, pp, now_ns);
	return 0;
}

/* Verified or rejected: nothing left for a fast tick to look for (pending: its interpreter is
 * checked every VERIFY_INTERVAL_NS until it is initialised).
 */
static bool py_proc_settled(const void *proc_state)
{
	const struct py_proc *pp = proc_state;

	return pp->state != PY_PROC_PENDING;
}

/* The main thread's thread pointer for eBPF (bpf_abi.h, main_tp) once the check found it
 * (after proc_tick, which runs first): its glibc thread is the one whose tid is the pid.
 */
static int py_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			   struct interp_code_range *code)
{
	struct py_proc *pp = proc_state;

	(void)rt;
	(void)now_ns;
	(void)code;
	if (!pp->main_tp || bpf->py.main_tp == pp->main_tp)
		return 0;
	bpf->py.main_tp = pp->main_tp;
	return 1;
}

/* ---- symbolization ---- */

/* A str object as UTF-8 (malloc'ed), or NULL. */
static char *read_str(pid_t pid, uint64_t addr, const struct py_layout *l)
{
	uint8_t head[40];
	uint64_t len;
	uint32_t state, kind, i;
	uint8_t *raw = NULL;
	char *out = NULL;
	size_t n = 0;

	if (!addr || interp__read_mem(pid, addr, head, sizeof(head)))
		return NULL;
	memcpy(&len, head + 16, 8);
	memcpy(&state, head + 32, 4);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return NULL; /* not compact: legacy strings are not used for code names */
	if (len > STR_MAX)
		len = STR_MAX;
	raw = malloc(len * kind + 1);
	out = malloc(len * 4 + 1);
	if (!raw || !out)
		goto fail;
	if (len &&
	    interp__read_mem(pid,
			     addr + ((state & (1u << 6)) ? l->str_ascii_data : l->str_compact_data),
			     raw, len * kind))
		goto fail;
	for (i = 0; i < len; i++) {
		uint32_t c;

		if (kind == 1)
			c = raw[i];
		else if (kind == 2)
			c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&c, raw + 4 * i, 4);
		if (c < 0x80) {
			out[n++] = (char)c;
		} else if (c < 0x800) {
			out[n++] = (char)(0xc0 | c >> 6);
			out[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			out[n++] = (char)(0xe0 | c >> 12);
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x110000) {
			out[n++] = (char)(0xf0 | c >> 18);
			out[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[n++] = '?';
		}
	}
	interp__scrub(out, n); /* control characters: ASCII, encoded as themselves */
	free(raw);
	return out;
fail:
	free(raw);
	free(out);
	return NULL;
}

/* What read_code needs: the layout, and the counters it bumps. */
struct code_read {
	const struct py_layout *layout;
	uint64_t *stats;
};

/* The line table of the bytes object at `table` decoded into e->lines: at most LINETABLE_MAX
 * bytes of it (a prefix still answers the offsets it covers), at most LINE_RANGES_MAX runs.
 * No table, or one unreadable, is decoded as an empty one (as CPython would read it).
 */
static void read_lines(const struct code_read *r, pid_t pid, uint64_t table, int firstlineno,
		       struct code_entry *e)
{
	uint64_t table_sz = 0;
	uint8_t *raw = NULL;

	if (table && !interp__read_u64(pid, table + 16, &table_sz)) {
		if (table_sz > LINETABLE_MAX) {
			table_sz = LINETABLE_MAX;
			r->stats[PY_STAT_LINES_TRUNCATED]++;
		}
		raw = malloc(table_sz ? table_sz : 1);
		if (raw && interp__read_mem(pid, table + 32, raw, table_sz)) {
			free(raw);
			raw = NULL;
		}
	}
	if (!python_lines__index(r->layout->lines, raw, raw ? table_sz : 0, firstlineno,
				 LINE_RANGES_MAX, &e->lines) &&
	    e->lines.truncated)
		r->stats[PY_STAT_LINES_TRUNCATED]++;
	free(raw);
}

/* Read a code object into entry (symbol_cache_read_fn; ctx: a struct code_read); 0 or -errno. */
static int read_code(const void *ctx, pid_t pid, uint64_t code, void *entry)
{
	const struct code_read *r = ctx;
	const struct py_layout *l = r->layout;
	struct code_entry *e = entry;
	uint8_t obj[CODE_READ_SZ];
	uint64_t name, file, table;
	int32_t firstlineno, argcount;
	uint16_t name_off = l->co_qualname != NO ? l->co_qualname : l->co_name;

	if (interp__read_mem(pid, code, obj, sizeof(obj)))
		return -EFAULT;
	memcpy(&argcount, obj + l->bpf.co_argcount, 4);
	memcpy(&firstlineno, obj + l->bpf.co_firstlineno, 4);
	memcpy(&name, obj + name_off, 8);
	memcpy(&file, obj + l->co_filename, 8);
	memcpy(&table, obj + l->co_linetable, 8);
	e->key.cookie = (uint32_t)firstlineno + ((uint32_t)argcount << 24);
	e->firstlineno = firstlineno;
	e->name = read_str(pid, name, l);
	e->filename = read_str(pid, file, l);
	if (!e->name)
		return -EFAULT;
	read_lines(r, pid, table, firstlineno, e);
	e->key.bytes =
		(uint32_t)(strlen(e->name) + 1 + (e->filename ? strlen(e->filename) + 1 : 0) +
			   python_lines__index_bytes(&e->lines));
	return 0;
}

static const struct interp_marker_text marker_texts[] = {
	{ PY_MARKER_UNSUPPORTED, "unsupported version" },
	{ PY_MARKER_TRUNCATED, "more frames truncated" },
	{ PY_MARKER_READ_FAILED, "frame unreadable" },
};

static void py_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			 struct interp_symbol *out)
{
	uint32_t cookie = (uint32_t)uf->file_id, offset = (uint32_t)(uf->file_id >> 32);
	struct python *py = rt;
	struct py_proc *pp = proc_state;
	struct code_read r;
	const struct code_entry *e;

	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id);
	r = (struct code_read){ &pp->file->layout, py->stats };
	e = symbol_cache__get(&py->codes, &pp->base, reader, uf->addr, cookie, 0, read_code, &r,
			      out, NULL);
	if (!e)
		return;
	*out = (struct interp_symbol){
		.function = e->name,
		.file = e->filename,
		.line = python_lines__lookup(&e->lines, offset),
		.memo = e->key.serial, /* names, lines: what this read gave; offset: file_id's */
	};
	if (out->line < 0)
		out->line = 0;
}

const struct interp_runtime python_runtime = {
	.name = "python",
	.frame_type = "cpython", /* the reference agent's value for CPython frames */
	.frame_kind = FRAME_KIND_CPYTHON,
	INTERP_RUNTIME_COUNTERS(PY_COUNTERS, PY_COUNTER_CNT, PY_STATS, struct python),
	.init = py_init,
	.fini = py_fini,
	.file_state_sz = sizeof(struct py_file),
	.file_detect = py_file_detect,
	.code_name = py_code_name,
	.proc_state_sz = sizeof(struct py_proc),
	.proc_attach = py_proc_attach,
	.proc_tick = py_proc_tick,
	.proc_settled = py_proc_settled,
	.proc_refresh = py_proc_refresh,
	.symbolize = py_symbolize,
};
