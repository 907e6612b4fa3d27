/* The sampler: loads bpf/sampler.bpf.c, opens one perf cpu-clock event per online CPU (or, for
 * a recording bound to processes, one per thread of theirs: sampler/task_events.h), and
 * delivers every ring-buffer record to a callback. Also owns the BPF maps other modules fill
 * (pid filter, per-process mappings, unwind tables) and the per-CPU loss counters.
 *
 * Lifetime: sampler__new() loads and verifies (nothing sampled yet); sampler__start() attaches
 * the perf events and tracepoints; sampler__poll() reads records until the caller stops;
 * sampler__free() detaches everything. Records passed to the callback are borrowed for the
 * duration of the call.
 */
#ifndef STACKSCOPE_SAMPLER_H
#define STACKSCOPE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"

struct sampler_opts {
	unsigned int freq_hz; /* per CPU */
	enum filter_mode filter;
	size_t ringbuf_sz;          /* bytes, power of two; 0 = sized from CPUs and frequency */
	size_t mapping_cap;         /* LPM entries; 0 = default */
	size_t unwind_entry_cap;    /* unwind-entry pool at most; 0 = sized from the machine */
	unsigned int map_scale;     /* --map-scale: every sized map times this (0: 1) */
	bool off_cpu;               /* off-CPU samples too (sampler/off_cpu.h) */
	bool no_cpu;                /* no CPU samples (no perf events): off-CPU only */
	bool per_task;              /* FILTER_PIDS (FILTER_FOLLOW_CHILDREN: STACKSCOPE_PER_TASK=1):
				     * events on the filtered processes' threads
				     * (sampler/task_events.h), where they allow */
	uint64_t off_cpu_min_ns;    /* shorter stays off CPU are skipped */
	unsigned int off_cpu_rate;  /* off-CPU stack walks per second, all CPUs (0: default) */
	bool faults;                /* memory-growth samples too (sampler/mem_growth.h) */
	uint64_t fault_period;      /* page faults per sample (0: default) */
	bool alloc;                 /* allocation samples too (sampler/mem_alloc.h) */
	uint64_t alloc_rate;        /* mean bytes between allocation samples (0: default) */
	const pid_t *alloc_pids;    /* whose libc is probed (none: stackscope's own, or with */
	size_t alloc_pid_cnt;       /* filter FILTER_OFF every process's) */
	char *const *alloc_command; /* the command recorded: its allocator files too (or NULL) */
};

/* Return 0 to go on; anything else stops the current poll and is returned by it. */
typedef int (*sampler_record_fn)(const void *rec, size_t size, void *ctx);

struct sampler;
struct alloc_procs_stats;
struct task_events_stats;

/* NULL with errno set and one clear error logged (EPERM: not root / missing capabilities;
 * ENOTSUP: kernel without BTF or a needed helper, named in the message).
 */
struct sampler *sampler__new(const struct sampler_opts *opts, sampler_record_fn fn, void *ctx);
int sampler__start(struct sampler *s);
/* Wait up to timeout_ms for records (a forced wake-up from exec events ends the wait early),
 * then consume everything available. Returns records consumed, or < 0 (-EINTR on a signal).
 */
int sampler__poll(struct sampler *s, int timeout_ms);
/* The end of a recording: its CPU and page-fault events take no more samples (tracepoints,
 * probes and the ring buffer go on), so that a last poll reads every sample counted and the
 * counters read after it describe what the profile holds.
 */
void sampler__stop_sampling(struct sampler *s);
void sampler__free(struct sampler *s);

/* Under FILTER_FOLLOW_CHILDREN, the first pid filtered (before sampler__start()) is the
 * command's: with --alloc its probes are bound to it and to the processes of its tree.
 */
int sampler__filter_pid(struct sampler *s, pid_t pid);
/* --alloc with a command (sampler/alloc_procs.h): a process of its tree forked (time_ns: the
 * fork, CLOCK_MONOTONIC), exec'd or mapped a file, exited. Nothing otherwise.
 */
void sampler__alloc_forked(struct sampler *s, pid_t pid, pid_t parent, uint64_t time_ns);
void sampler__alloc_mapped(struct sampler *s, pid_t pid);
void sampler__alloc_exited(struct sampler *s, pid_t pid);
/* NULL unless --alloc with a command; borrowed for the sampler's life. */
const struct alloc_procs_stats *sampler__alloc_procs_stats(const struct sampler *s);
/* The per-task events' figures (sampler/task_events.h), or NULL: per-CPU events (no per_task,
 * or their fallback). Borrowed for the sampler's life; valid after sampler__start().
 */
const struct task_events_stats *sampler__task_events_stats(const struct sampler *s);
/* Sum of the per-CPU counters. */
void sampler__counters(struct sampler *s, uint64_t out[COUNTER_CNT]);
/* Kernel memory held by the BPF maps (sum of memlock from fdinfo), in bytes; re-read at most
 * every 10 s. */
uint64_t sampler__map_memory(struct sampler *s);
/* The same of one map's fd (maps made outside the skeleton: the entry pool's segments). */
uint64_t sampler__fd_map_memory(int fd);
unsigned int sampler__cpu_cnt(const struct sampler *s);
/* Run time of the sampling program (kernel.bpf_stats_enabled=1 must be on); 0 or -errno. */
int sampler__prog_stats(struct sampler *s, uint64_t *run_time_ns, uint64_t *run_cnt);

/* Map fds for the modules that fill them: each the fd of the skeleton's map of that name. */
int sampler__mappings_fd(const struct sampler *s);
/* The "new_mappings" (tgid -> struct new_mappings) and "known_files" maps (bpf/abi.h). */
int sampler__new_mappings_fd(const struct sampler *s);
int sampler__known_files_fd(const struct sampler *s);
int sampler__files_fd(const struct sampler *s);
/* "alloc_live" (struct alloc_key -> size: the sampled allocations not yet freed). */
int sampler__alloc_live_fd(const struct sampler *s);
int sampler__unwind_pages_fd(const struct sampler *s);
/* "unwind_segments", the array of maps of the entry pool's segments (unwind/unwind_maps.h). */
int sampler__unwind_segments_fd(const struct sampler *s);
int sampler__unwind_rules_fd(const struct sampler *s);
size_t sampler__unwind_entry_cap(const struct sampler *s);
/* Selection (bpf/selection.h): the verdict maps, and the switches in the mapped .bss (NULL
 * when the kernel could not map it), written live by src/proc/selection.c.
 */
int sampler__sel_procs_fd(const struct sampler *s);
int sampler__sel_cgroups_fd(const struct sampler *s);
/* "maps_epoch": bumped when an entry of a live process in "mappings" changes or goes (the frame
 * memo's invalidation, src/proc/process.c).
 */
int sampler__maps_epoch_fd(const struct sampler *s);
volatile struct selection_state *sampler__selection_state(struct sampler *s);
/* The language runtimes' maps (bpf/interp/, written by src/interp/registry.c). */
int sampler__interp_files_fd(const struct sampler *s);
int sampler__interp_procs_fd(const struct sampler *s);
int sampler__interp_code_fd(const struct sampler *s);      /* "interp_code" */
int sampler__interp_file_bits_fd(const struct sampler *s); /* "interp_file_bits" */
int sampler__interp_proc_bits_fd(const struct sampler *s); /* "interp_proc_bits" */
/* The one-slot array of maps "obi_maps" (bpf/interp/otel/obi_map.h, src/interp/otel/obi_map.c). */
int sampler__obi_maps_fd(const struct sampler *s);
/* The sum over CPUs of "interp_counters": [runtime kind * INTERP_COUNTER_MAX + counter]. */
void sampler__interp_counters(struct sampler *s, uint64_t out[FRAME_KIND_CNT * INTERP_COUNTER_MAX]);

/* Parse a sysfs CPU list ("0-3,5"); *cpus is malloc'ed. 0, -EINVAL or -ENOMEM. */
int cpu_list__parse(const char *text, unsigned int **cpus, unsigned int *cnt);

/* The human-readable name of a counter / unwind end reason. */
const char *counter__name(enum counter c);
const char *unwind_end__name(enum unwind_end e);
/* Whether a user stack that ended so is incomplete ("[unwind: ...]"): not when it reached a
 * thread root, or the thread had no user stack to walk (a kernel thread, inside execve()).
 */
bool unwind_end__incomplete(enum unwind_end e);

#endif
