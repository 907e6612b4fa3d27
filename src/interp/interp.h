/* The runtime interface: what every high-level language runtime (CPython, HotSpot, V8, CRuby,
 * PHP, Perl, Go) implements to put its frames into the native stacks, and the registry that
 * runs them all.
 *
 * A runtime lives in its own folder (src/interp/<runtime>/) with its eBPF walk in
 * bpf/interp/<runtime>/walk.h and its ABI types in bpf/interp/<runtime>/bpf_abi.h. It provides one
 * `struct interp_runtime` (below), <name>_runtime, and is one line of INTERP_RUNTIMES in
 * bpf/abi.h (its frame kind, its ABI members, its place in the registry) and, with a walk, one
 * of INTERP_WALKS in bpf/interp/dispatch.h. A runtime folder holds only what is its own
 * (detect, attach and tick, symbolize, lines); what they all need is in src/interp/common/:
 * process-memory and string reads (proc_memory.h), the bounded cache of what was read with its
 * checks (symbol_cache.h), ELF lookups (interp_elf.h). The registry
 * owns:
 *  - every runtime's state (state_sz bytes it allocates, zeroed, before init);
 *  - per-file state: a mapped file a runtime recognises as its interpreter (file_state_sz
 *    bytes, zeroed, its path set), kept while the registry lives (late samples symbolize from
 *    it), at most INTERP_FILE_CAP files;
 *  - per-process state: (pid, runtime) -> the runtime's state for that process (proc_state_sz
 *    bytes, zeroed, pid and attach generation set), created when a scan shows the process
 *    mapping an interpreter file, dropped at exec (a new image), kept INTERP_EXITED_GRACE_NS
 *    after exit for samples still in flight, then freed; at most INTERP_PROC_CAP processes;
 *  - the BPF map writes ("interp_files", "interp_procs"), and each runtime's slice of the
 *    eBPF counters.
 * Markers: a runtime shows frames it cannot read as "[<name>: <reason>]" (interp__marker gives
 * the reason, interp_runtime__symbolize the rest).
 * Not thread-safe: one owner (the session).
 */
#ifndef STACKSCOPE_INTERP_H
#define STACKSCOPE_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

#define INTERP_FILE_CAP 256                         /* as the "interp_files" map */
#define INTERP_PROC_CAP 16384                       /* as the "interp_procs" map */
#define INTERP_EXITED_GRACE_NS (10 * 1000000000ULL) /* exited processes' state kept */
#define INTERP_SETTLE_NS (1000 * 1000000ULL) /* interp_registry__settling() after an attach */

struct executable;
struct process;

#define INTERP_INLINED_MAX 32 /* inlined calls shown per runtime frame */

/* A call a compiler inlined into a runtime frame (JIT code): its function, file, line and
 * column. */
struct interp_inlined {
	const char *function;
	const char *file;
	int line;   /* 0 when unknown */
	int column; /* 1-based column on that line; 0 when unknown (every runtime but V8) */
};

/* One frame of a runtime, as it will appear in the profile. Strings are borrowed until the
 * runtime's next call.
 */
struct interp_symbol {
	const char *function; /* qualified name, or the marker's text */
	const char *file;     /* source file; NULL for markers */
	int line;             /* 0 when unknown */
	int column;           /* 1-based column on that line; 0 when unknown */
	bool marker;          /* a pseudo-frame ("[python: code object unreadable]") */
	/* Optional (inlined_cnt 0: none): the calls compiled code inlined at this frame's pc,
	 * innermost first; each is called by the next, the last by function/line above. One
	 * frame of the stack, shown as inlined_cnt + 1 frames (as DWARF's inlined native frames).
	 * At most INTERP_INLINED_MAX; borrowed as the strings.
	 */
	const struct interp_inlined *inlined;
	uint32_t inlined_cnt;
	/* Optional (0: none): set when this symbol is all that one read of the runtime gave
	 * (a symbol_cache serial) and the frame's kind, addr and file_id: another frame with
	 * the same four gets the same symbol, so its caller may reuse what it made of this one
	 * (the trace handler: the profile frame) instead of hashing the strings again.
	 */
	uint64_t memo;
};

/* The head of every runtime's per-file state (file_state_sz bytes): set by the registry. */
struct interp_file_base {
	char *path; /* the interpreter file's path */
};

/* The head of every runtime's per-process state (proc_state_sz bytes): set by the registry. */
struct interp_proc_base {
	pid_t pid;
	uint32_t gen; /* unique per attach: keys the runtime's caches (symbol_cache.h) */
	/* Its read budget (symbol_cache.h): ns of reading left, and when it was last topped up
	 * (CLOCK_MONOTONIC ns; 0: never, a full budget).
	 */
	int64_t budget_ns;
	uint64_t budget_at;
};

struct interp_runtime {
	const char *name;       /* "python": messages, the summary, markers */
	const char *frame_type; /* OTLP profile.frame.type of its frames: "cpython" */
	uint8_t frame_kind;     /* FRAME_KIND_<its kind in INTERP_RUNTIMES>: its frames' kind */
	/* Its eBPF counters (its slice of "interp_counters"), and its own userspace ones. */
	const char *const *bpf_counter_names;
	size_t bpf_counter_cnt; /* <= INTERP_COUNTER_MAX */
	const char *const *stat_names;
	size_t stat_cnt;

	/* Its state: state_sz bytes, zeroed; its stat_cnt counters (uint64_t) at stats_off. */
	size_t state_sz, stats_off;
	/* Optional (NULL: none). What the zeroed state needs made (caches): 0 or -errno. fini
	 * frees it, also after a failed init.
	 */
	int (*init)(void *rt);
	void (*fini)(void *rt);
	/* Is this mapped file the runtime's interpreter? file_state: file_state_sz bytes, zeroed,
	 * beginning with struct interp_file_base. 0 with file_state and *bpf (what eBPF needs)
	 * filled; -ENOENT when it is not. A version the runtime cannot walk still returns 0 with
	 * bpf->supported = 0 (eBPF then emits a marker).
	 */
	size_t file_state_sz;
	int (*file_detect)(void *rt, const struct executable *exe, void *file_state,
			   struct interp_file *bpf);
	void (*file_free)(void *rt, void *file_state); /* optional: what file_detect made */
	/* Optional (NULL: none). The name of the interpreter's own code at vaddr of the file when
	 * its symbols name none (a compiler-split part of the eval loop in a stripped build), or
	 * NULL. Called for native frames the file's symbols left unnamed.
	 */
	const char *(*code_name)(void *rt, void *file_state, uint64_t vaddr);
	/* A live process maps the file (at load bias `bias`): proc_state (proc_state_sz bytes,
	 * zeroed, beginning with struct interp_proc_base; NULL when 0) and bpf->(its union member)
	 * filled: 0, or -errno (not attached).
	 */
	size_t proc_state_sz;
	int (*proc_attach)(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			   void *proc_state, struct interp_proc *bpf);
	/* Optional (NULL: keep). Periodic check of an attached process: 0 keep, < 0 reject (its
	 * eBPF entry is removed and it is not attached again while its mapping stays the same).
	 */
	int (*proc_tick)(void *rt, void *proc_state, uint64_t now_ns);
	/* Optional (NULL: the process settles for INTERP_SETTLE_NS after its attach). Whether an
	 * attached process has nothing left to look for at a fast tick (CPython: its interpreter
	 * verified, or rejected): the session then stops polling fast for it at once. Every
	 * Python a box runs (a test, a script) kept the agent waking every 10 ms for a second,
	 * 100 wake-ups, though a Python attached after its start is verified at the attach.
	 */
	bool (*proc_settled)(const void *proc_state);
	void (*proc_free)(void *rt, void *proc_state); /* optional: what proc_attach made */
	/* Optional (NULL: none). State that appears after attach: a VM initialised later, the
	 * code in anonymous memory the runtime owns (JIT code, a code cache: its code-range
	 * walker in eBPF unwinds the frames there, bpf/interp/dispatch.h). Called right after
	 * attach and on every tick of an attached process with the current eBPF entry in *bpf and
	 * the runtime's code ranges in code[INTERP_CODE_RANGES] (start == end == 0: unused).
	 * 1: *bpf or code[] changed (the registry rewrites the process's eBPF entries), 0: no
	 * change, < 0: reject the process.
	 */
	int (*proc_refresh)(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			    struct interp_code_range *code);
	/* One frame of the runtime from process pid, whose stack eBPF walked with proc_state (that
	 * of pid, or of the parent it was forked from while it was not known yet: then memory is
	 * read from pid first, from the parent once pid has exited; NULL only for a frame without
	 * an address). Always fills *out; a marker with its reason only (interp__marker).
	 * Optional (NULL: a runtime that emits no frames; a "[<name>: ?]" marker if one comes).
	 */
	void (*symbolize)(void *rt, void *proc_state, pid_t pid, const struct user_frame *uf,
			  struct interp_symbol *out);
};

/* A runtime's own counters are written once, as a macro LIST(X) of X(ID, "name") entries;
 * these make the enum and the names (stat_names) from it:
 * `enum e { LIST(INTERP_LIST_ENUM) E_CNT };`, `names[E_CNT] = { LIST(INTERP_LIST_TEXT) };`.
 */
#define INTERP_LIST_ENUM(id, text) id,
#define INTERP_LIST_TEXT(id, text) [id] = text,

/* A runtime's state and per-file and per-process state, made and freed as the interface says
 * (the registry's, and tests' way to drive one runtime). NULL / -errno on failure.
 */
void *interp_runtime__new(const struct interp_runtime *rt);
void interp_runtime__free(const struct interp_runtime *rt, void *state);
int interp_runtime__file_detect(const struct interp_runtime *rt, void *state,
				const struct executable *exe, void **file_state,
				struct interp_file *bpf);
void interp_runtime__file_free(const struct interp_runtime *rt, void *state, void *file_state);
int interp_runtime__proc_attach(const struct interp_runtime *rt, void *state, pid_t pid,
				void *file_state, uint64_t bias, uint64_t now_ns, void **proc_state,
				struct interp_proc *bpf);
int interp_runtime__proc_tick(const struct interp_runtime *rt, void *state, void *proc_state,
			      uint64_t now_ns);
void interp_runtime__proc_free(const struct interp_runtime *rt, void *state, void *proc_state);
/* rt->symbolize, but an "unknown process" marker for a frame with an address and no process
 * state, a "?" one without rt->symbolize; a marker's reason made "[<runtime>: <reason>]" in a
 * buffer of this module's, borrowed until the next call.
 */
void interp_runtime__symbolize(const struct interp_runtime *rt, void *state, void *proc_state,
			       pid_t pid, const struct user_frame *uf, struct interp_symbol *out);
/* Its stat_cnt counters into out. */
void interp_runtime__stats(const struct interp_runtime *rt, const void *state, uint64_t *out);

/* A marker frame into *out: a frame the runtime cannot show, for `reason` (static text, "code
 * object unreadable"); interp_runtime__symbolize shows it as "[<runtime>: <reason>]".
 */
static inline void interp__marker(struct interp_symbol *out, const char *reason)
{
	*out = (struct interp_symbol){ .function = reason, .marker = true };
}

/* A marker's reason by the code eBPF emitted it with. */
struct interp_marker_text {
	uint64_t code;
	const char *text;
};

/* The marker of `code` in table[0..n) into *out ("?" when it is not there). */
void interp__code_marker(struct interp_symbol *out, const struct interp_marker_text *table,
			 size_t n, uint64_t code);
#define INTERP_MARKERS(table) (table), sizeof(table) / sizeof((table)[0])

/* Counters of one runtime, for the summary, the agent's log and /metrics. */
struct interp_runtime_stats {
	const struct interp_runtime *rt;
	uint64_t files, files_unsupported; /* interpreter files found / of an unknown version */
	uint64_t procs_attached, procs_rejected, procs_reaped;
	uint64_t frames, markers;         /* symbolized */
	uint64_t forked_frames;           /* read with a forked child's parent state */
	uint64_t code_ranges_dropped;     /* code ranges past INTERP_CODE_RANGES per process */
	uint64_t bpf[INTERP_COUNTER_MAX]; /* its eBPF counters (bpf_counter_names) */
	uint64_t own[16];                 /* its stat_names values */
};

struct interp_registry;

/* files_fd / procs_fd: the BPF maps "interp_files", "interp_procs", or -1 (no eBPF: tests).
 * NULL with errno.
 */
struct interp_registry *interp_registry__new(int files_fd, int procs_fd);
void interp_registry__free(struct interp_registry *reg);

/* The eBPF map "interp_code" (tgid -> the runtimes' code ranges), or -1 (none). */
void interp_registry__set_code_map(struct interp_registry *reg, int code_fd);

/* The eBPF maps "interp_file_bits" and "interp_proc_bits" (bpf/abi.h), or -1 (none). */
void interp_registry__set_bits_maps(struct interp_registry *reg, int file_bits_fd,
				    int proc_bits_fd);

/* Executable registry hooks: a file starts / stops being mapped by live processes.
 * file_loaded: true when the file is a runtime's (processes mapping it get attached).
 */
bool interp_registry__file_loaded(struct interp_registry *reg, const struct executable *exe);
void interp_registry__file_unloaded(struct interp_registry *reg, const struct executable *exe);
/* Process tracker hooks. */
void interp_registry__process_scanned(struct interp_registry *reg, const struct process *p,
				      uint64_t now_ns);
void interp_registry__process_exec(struct interp_registry *reg, pid_t pid);
void interp_registry__process_exited(struct interp_registry *reg, pid_t pid, uint64_t now_ns);
/* Periodic work: the runtimes' checks, reaping of exited processes' state. */
void interp_registry__tick(struct interp_registry *reg, uint64_t now_ns);
/* A process of a runtime with late state (proc_tick or proc_refresh: not Go) was attached less
 * than INTERP_SETTLE_NS ago and its runtime does not say it settled (proc_settled): its
 * runtime's state (an interpreter being initialised, a code cache not known yet) is checked at
 * every tick, and until it is there its samples lack their runtime's frames: the caller ticks
 * often.
 */
bool interp_registry__settling(const struct interp_registry *reg, uint64_t now_ns);

/* The name a runtime gives the code at vaddr of the file file_id (struct interp_runtime's
 * code_name), or NULL.
 */
const char *interp_registry__code_name(const struct interp_registry *reg, uint64_t file_id,
				       uint64_t vaddr);

/* The runtime whose frames have this kind, or NULL. */
const struct interp_runtime *interp_registry__runtime(const struct interp_registry *reg,
						      uint8_t frame_kind);
/* Symbolize a frame of kind uf->kind from process pid, walked with map_pid's state. */
void interp_registry__symbolize(struct interp_registry *reg, pid_t pid, pid_t map_pid,
				const struct user_frame *uf, struct interp_symbol *out);

/* interp_registry__symbolize() for its side effect only, not counted: what naming uf needs is
 * read now into the runtime's caches (a deferred sample's frames, named when its replay is
 * done, maybe after its process exited: src/unwind/deferred.h's hold).
 */
void interp_registry__prefetch(struct interp_registry *reg, pid_t pid, pid_t map_pid,
			       const struct user_frame *uf);

/* Counters of every runtime into out (cap entries), with its slice of the eBPF counters
 * (bpf: "interp_counters" summed over CPUs, NULL: none); returns how many runtimes.
 */
size_t interp_registry__stats(struct interp_registry *reg, const uint64_t *bpf,
			      struct interp_runtime_stats *out, size_t cap);

#endif
