/* CPython support: finds interpreter binaries among the mapped files, tells the eBPF walk
 * (bpf/python_unwind.h) where their eval loop is and how their structures are laid out, tells
 * it where each process's runtime is, and turns the (code object, instruction offset, cookie)
 * frames it emits into function, file and line by reading the process's memory.
 *
 * Versions: CPython 3.8 to 3.13 on x86-64 (LP64, glibc). Layouts come from a table per minor
 * version (measured, docs in ../shared/docs/reference/runtimes.md §3.2) and, for 3.13, from
 * the _Py_DebugOffsets at the start of _PyRuntime, read from the file itself (initialised
 * data: the same bytes every process starts with). Layouts are checked against each process
 * once its interpreter is initialised (thread list, TSD slot, code object type); a process
 * that fails the check gets native frames only. Other Pythons get a marker frame.
 *
 * Invariants:
 *  - one struct py_file per interpreter file_id, kept until python__free() (late samples of
 *    exited processes still symbolize from the code cache);
 *  - the code cache is a fixed-size direct-mapped table (PYTHON_CODE_CACHE_CAP entries), keyed
 *    by (pid, exec generation, code address); an entry is re-read when the eBPF cookie
 *    disagrees with it (code object freed and its address reused).
 * Not thread-safe: one owner.
 */
#ifndef STACKSCOPE_PYTHON_H
#define STACKSCOPE_PYTHON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

#define PYTHON_CODE_CACHE_CAP 4096

struct executable;
struct process;
struct python;

struct python_stats {
	uint64_t files;             /* interpreter files found */
	uint64_t files_unsupported; /* of which with a layout we do not know */
	uint64_t procs_attached;    /* processes given to eBPF */
	uint64_t procs_verified;    /* layout checked against the live interpreter */
	uint64_t procs_rejected;    /* check failed: native frames only */
	uint64_t frames;            /* Python frames symbolized */
	uint64_t code_reads;        /* code objects read from process memory */
	uint64_t code_unreadable;   /* frames whose code object could not be read */
	uint64_t code_stale;        /* cookie mismatch: code object freed and reused */
	uint64_t forked_frames;     /* frames of forked children read with their parent's state */
	uint64_t counters[INTERP_COUNTER_CNT]; /* the eBPF side's, filled by the caller */
};

/* files_fd / procs_fd: the "interp_files" / "interp_procs" BPF maps, or -1 (no eBPF: tests).
 * NULL with errno ENOMEM.
 */
struct python *python__new(int files_fd, int procs_fd);
void python__free(struct python *py);

/* Executable registry hooks: a file starts / stops being mapped by live processes. */
void python__file_loaded(struct python *py, struct executable *exe);
void python__file_unloaded(struct python *py, struct executable *exe);

/* Process tracker hooks: a process was (re)scanned, exec'd, exited. */
void python__process_scanned(struct python *py, const struct process *p, uint64_t now_ns);
void python__process_exec(struct python *py, pid_t pid);
void python__process_exited(struct python *py, pid_t pid);
/* Periodic work: re-check processes whose interpreter was not initialised yet. */
void python__tick(struct python *py, uint64_t now_ns);

struct python_symbol {
	const char *function; /* qualified name (3.11+) or name, or a "[python: ...]" marker */
	const char *file;     /* co_filename, NULL for markers */
	int line;             /* 0 when unknown */
	bool marker;          /* a pseudo-frame (function holds the text) */
};

/* Symbolize one USER_FRAME_PYTHON frame of process pid, whose stack eBPF walked with the
 * state of process map_pid (pid itself, or the parent it was forked from while it was not
 * known yet: the same interpreter at the same addresses). The code object is read from pid,
 * or from map_pid once pid has exited. Strings are borrowed until the next python__ call.
 * Always fills *out (an "[python: ...]" marker when the frame cannot be read).
 */
void python__symbolize(struct python *py, pid_t pid, pid_t map_pid, const struct user_frame *uf,
		       struct python_symbol *out);

const struct python_stats *python__stats(const struct python *py);

#endif
