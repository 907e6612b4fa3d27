/* A sampling session: everything between the perf events and a struct profile — the BPF
 * sampler, kernel symbols, the executable registry with its unwind tables, the process
 * tracker and the trace handler — shared by `record` (one profile) and `agent` (one profile
 * per interval).
 *
 * Single-threaded: the owner calls session__poll() in a loop. The profile returned by
 * session__take_profile() belongs to the caller.
 */
#ifndef STACKSCOPE_SESSION_H
#define STACKSCOPE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "abi.h"
#include "base/safe_open.h"
#include "interp/interp.h"
#include "interp/otel/obi_map.h"
#include "proc/executable.h"
#include "unwind/table_queue.h"

struct profile;
struct sampler;
struct exe_registry;
struct process_table;
struct trace_handler_stats;
struct unwind_maps_stats;
struct segment_maker;
struct process_stats;
struct process;
struct table_cache_stats;
struct deferred_stats;
struct alloc_live_stats;
struct alloc_procs_stats;
struct task_events_stats;
struct off_cpu_join_stats;
struct selection;
struct selection_rules;

#define SESSION_DEFAULT_CACHE_DIR "/var/cache/stackscope"
#define SESSION_DEFAULT_CACHE_BYTES (256ULL << 20)

struct session_opts {
	/* borrowed, outlives the session: makes the unwind-entry pool's segments (a process that
	 * keeps CAP_BPF, unwind/segment_maker.h); NULL: the session makes them (needs CAP_BPF)
	 */
	struct segment_maker *segment_maker;
	unsigned int freq_hz;
	enum filter_mode filter;
	const pid_t *pids; /* FILTER_PIDS / FILTER_FOLLOW_CHILDREN roots */
	size_t pid_cnt;
	bool symbolize;
	size_t timestamps_cap;    /* per aggregated sample; the agent keeps them for OTLP */
	size_t unwind_entry_cap;  /* 0: sized from the machine (sampler/map_sizing.h) */
	unsigned int map_scale;   /* --map-scale (0: 1) */
	bool symbolize_lines;     /* DWARF lines + inline frames when a profile is taken */
	uint64_t evict_exe_ns;    /* forget executables unused this long (0: never; agent) */
	bool sampled_tables_only; /* build only the tables samples ask for (agent; see
				   * unwind/table_queue.h), else every mapped file's, sampled first */
	int debuginfod_wait_ms;   /* at take time, wait this long for pending debuginfod fetches */
	const char *const *debug_dirs; /* extra debug-file folders */
	size_t debug_dir_cnt;
	const char *cache_dir; /* on-disk unwind-table cache; NULL or "": none */
	uint64_t cache_max_bytes;
	bool off_cpu;                   /* off-CPU samples (sampler/off_cpu.h) */
	bool no_cpu;                    /* ... only: no CPU samples */
	bool per_task;                  /* record: perf events on the filtered processes' threads
					 * (sampler/task_events.h), else per CPU */
	uint64_t off_cpu_min_ns;        /* shorter stays off CPU are skipped */
	unsigned int off_cpu_rate;      /* off-CPU stack walks per second (0: default) */
	bool faults;                    /* memory-growth samples (sampler/mem_growth.h) */
	uint64_t fault_period;          /* page faults per sample (0: default) */
	bool alloc;                     /* allocation samples (sampler/mem_alloc.h) */
	uint64_t alloc_rate;            /* mean bytes between them (0: default) */
	struct selection_rules *select; /* which processes (proc/selection.h; NULL: all):
					 * session__new() takes it, even when it fails */
	const char *host_root;          /* the node's / where pod rules find pod names (NULL: /) */
	char *const *alloc_command;     /* record's command: its allocator files are probed too */
	bool alloc_carry;    /* the agent: live allocations carried into each next profile
			   * (pipeline/alloc_carry.h), not forgotten at session__take_profile() */
	const char *obi_map; /* OBI's pinned traces_ctx_v1 (interp/otel/obi_map.h); NULL
				    * or "": not read */
};

struct session;
struct pctx_attrs;
struct pctx_stats;

/* Loads everything (nothing sampled yet). NULL with errno; the error was logged. */
struct session *session__new(const struct session_opts *opts);
void session__free(struct session *s);

/* Selection rules and probabilistic profiling, to change them live (never NULL). */
struct selection *session__selection(struct session *s);
/* Add a pid to the filter (e.g. a command forked after session__new()). */
int session__filter_pid(struct session *s, pid_t pid);
/* Scan the processes to sample (all, or the filtered pids) and start the perf events. */
int session__start(struct session *s);
/* Read records for up to timeout_ms and do the periodic work; < 0 on a fatal error. */
int session__poll(struct session *s, int timeout_ms);
/* A recording's end: no more samples are taken; a last session__poll() reads every one the
 * counters count.
 */
void session__stop_sampling(struct session *s);
/* Finish every deferred sample: replayed where its tables exist, else as eBPF walked it
 * (before the last session__take_profile() of a recording). While samples wait for tables
 * that are being built or asked for (a giant's build takes seconds on a loaded box), the loop
 * goes on for up to max_wait_ns first. 0 or a fatal error (-ENOMEM).
 */
int session__flush_deferred(struct session *s, uint64_t max_wait_ns);
/* The profile so far (window ends now), after the line pass when symbolize_lines is set; a
 * new, empty one takes its place. NULL on ENOMEM.
 */
struct profile *session__take_profile(struct session *s);
/* The tracked process pid (alive or exited), or NULL; borrowed until the next poll. */
const struct process *session__process(const struct session *s, pid_t pid);
/* The OTel process context pid published (pipeline/process_context_table.h), or NULL;
 * borrowed until the next poll. Its own only: a forked child does not inherit it.
 */
const struct pctx_attrs *session__process_context(const struct session *s, pid_t pid);
/* Why the context pid published is not used ("payload too big"), or NULL. */
const char *session__process_context_refused(const struct session *s, pid_t pid);
/* Borrowed view of the current profile. */
const struct profile *session__profile(const struct session *s);

#define SESSION_RUNTIMES_MAX 16 /* at least the runtimes of INTERP_RUNTIMES (session.c checks) */

struct session_stats {
	uint64_t counters[COUNTER_CNT];
	const struct trace_handler_stats *trace;
	const struct pctx_stats *process_contexts;   /* pipeline/process_context_table.h */
	const struct unwind_maps_stats *unwind;      /* NULL when tables are disabled */
	const struct table_cache_stats *cache;       /* NULL without a cache */
	struct table_queue_stats tables;             /* the build queue (zeros without one) */
	const struct deferred_stats *deferred;       /* NULL when deferred unwinding is off */
	const struct off_cpu_join_stats *off_cpu;    /* NULL without --off-cpu */
	const struct alloc_live_stats *alloc_live;   /* NULL without --alloc */
	const struct alloc_procs_stats *alloc_procs; /* NULL unless --alloc with a command */
	uint64_t processes_alive, processes_exited;
	uint64_t process_scans;              /* /proc/PID/maps reads */
	uint64_t process_scan_failures;      /* of those, the process gone (or unreadable) */
	uint64_t process_bpf_syncs;          /* mapping updates taken from eBPF's entries alone */
	uint64_t processes_gone_before_read; /* exec'd and exited before the reader saw them */
	size_t executables;
	struct exe_registry_stats files; /* content identity: files hashed, changed in place */
	struct safe_open_stats opens;    /* untrusted paths refused (FIFOs, devices, escapes) */
	uint64_t pages_zeroed;           /* pages of files that shrank while mapped (file_map.h) */
	uint64_t bpf_map_bytes;
	uint64_t bpf_run_ns, bpf_run_cnt; /* 0 unless kernel.bpf_stats_enabled */
	uint64_t exec_events, exit_events, mmap_events;
	unsigned int cpu_cnt;
	const struct task_events_stats *task_events;                /* NULL: per-CPU events */
	struct interp_runtime_stats runtimes[SESSION_RUNTIMES_MAX]; /* per language runtime */
	size_t runtime_cnt;
	struct obi_map_stats obi; /* OBI's map (interp/otel/obi_map.h) */
};

void session__stats(struct session *s, struct session_stats *out);

uint64_t clock_ns(int clock_id);

#endif
