/* `record --alloc -- COMMAND`: allocator probes bound to each process of the command's tree, so
 * that no other process on the machine traps (a probe on the whole file traps in every process
 * mapping it, even when eBPF then drops the call).
 *
 * A pid-bound uprobe is a perf event of that task: it follows the process across exec (the
 * kernel's uprobe filter compares the event's task's current address space), and installs its
 * breakpoints in files the new image maps later. It does not follow a fork: a child is probed
 * when record learns of it (eBPF's RECORD_FORK, a forced wake-up), with its parent's files;
 * what it allocates before that is not seen (counted: the processes probed after they
 * started, and the delay). At an exec or an executable mapping the process's allocator files
 * are read again from its maps (a preloaded or a dlopen'ed allocator, a static executable):
 * new ones are probed from then on.
 *
 * Bounded: ALLOC_PROCS_CAP processes with probes at a time, ALLOC_TARGETS_CAP files in all;
 * past either, a process or a file is counted and not probed. A process's probes are
 * destroyed at its exit.
 */
#ifndef STACKSCOPE_SAMPLER_ALLOC_PROCS_H
#define STACKSCOPE_SAMPLER_ALLOC_PROCS_H

#include <stdint.h>
#include <sys/types.h>

#define ALLOC_PROCS_CAP 256

struct sampler_bpf;
struct alloc_procs;

struct alloc_procs_stats {
	uint64_t probed;       /* processes given probes (the command's included) */
	uint64_t forked_late;  /* forked children probed after they started (all of them) */
	uint64_t delay_ns_sum; /* their fork to the end of their attach, summed */
	uint64_t delay_ns_max;
	uint64_t files_late; /* files probed in a process that had mapped them already */
	uint64_t gone;       /* processes exited before their probes were attached */
	uint64_t full;       /* processes not probed: ALLOC_PROCS_CAP reached */
	uint64_t failed;     /* attach failures (logged once) */
};

/* NULL with errno set. skel: loaded, its allocation programs enabled. */
struct alloc_procs *alloc_procs__new(struct sampler_bpf *skel);
void alloc_procs__free(struct alloc_procs *ap);

/* The command's process pid, forked and not yet exec'd (argv: what it will run): probes on
 * stackscope's own allocator files and the command's (sampler/alloc_targets.h), bound to pid.
 * 0 or -errno (logged).
 */
int alloc_procs__command(struct alloc_procs *ap, pid_t pid, char *const *argv);

/* Process pid was forked by parent at time_ns (CLOCK_MONOTONIC): probes on parent's files. */
void alloc_procs__forked(struct alloc_procs *ap, pid_t pid, pid_t parent, uint64_t time_ns);

/* Process pid exec'd or mapped an executable file: probes on the allocator files it maps now
 * and has none on. A process not in the table is ignored.
 */
void alloc_procs__mapped(struct alloc_procs *ap, pid_t pid);

/* Process pid exited: its probes destroyed. */
void alloc_procs__exited(struct alloc_procs *ap, pid_t pid);

const struct alloc_procs_stats *alloc_procs__stats(const struct alloc_procs *ap);

#endif
