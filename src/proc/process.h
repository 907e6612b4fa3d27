/* The process tracker: which processes exist, what executable files they map where, and the
 * per-process address -> (file_id, load bias) entries the eBPF unwinder looks up.
 *
 * Sources: a /proc scan at start, exec/exit records from eBPF, and on-demand rescans when a
 * sample shows a process or an address we do not know (a new process, a dlopen).
 * Invariants:
 *  - a process's BPF entries always describe its latest scan; a rescan inserts the new
 *    entries before deleting stale ones, so lookups never see a hole.
 *  - processes that exited stay in the table (without BPF entries) until the table is freed
 *    or process_table__reap() drops them, so late samples can still be symbolized.
 * Pointers returned are owned by the table.
 */
#ifndef STACKSCOPE_PROCESS_H
#define STACKSCOPE_PROCESS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/container.h"

struct exe_registry;
struct executable;

struct exec_mapping {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t bias;       /* ELF vaddr = address - bias */
	struct executable *exe;
};

struct process {
	pid_t pid;
	char comm[16];
	char exe_path[256]; /* /proc/PID/exe at the last scan ("" if unreadable) */
	struct container_info container;
	struct exec_mapping *maps; /* sorted by start */
	size_t map_cnt;
	struct mapping_key *bpf_keys; /* LPM keys currently inserted for this process */
	size_t bpf_key_cnt;
	uint64_t bpf_seq;  /* the "new_mappings" seq its LPM entries are tagged with */
	uint64_t view_seq; /* maps reflect every "new_mappings" entry up to this seq */
	bool lpm_stale;    /* maps came from eBPF's entries and were not written to the LPM */
	bool bpf_marker;   /* its (pid, 0) marker is in the LPM map (deleted at its exit) */
	bool alive;
	bool named;             /* comm, exe_path and container read since the last exec */
	struct exec_info *hint; /* what the last exec record said, until named */
	uint64_t exited_ns;     /* CLOCK_MONOTONIC of the exit (alive == false) */
	uint64_t scanned_ns;    /* CLOCK_MONOTONIC of the last view (/proc scan or eBPF's
				 * account), taken before it was read: maps shows every
				 * mapping made before it */
	uint64_t rescan_at_ns;  /* pending rescan (0: none) */
	unsigned int rescans_left;
	unsigned int refresh_idle; /* refresh scans in a row that found no change (backoff) */
	bool view_changed;         /* the last view differed from the one before */
	uint64_t otel_ctx_addr;    /* OTel process context header seen by the last /proc scan
				    * since the exec (proc/process_context.h), 0: none */
};

struct process_stats {
	uint64_t scans;               /* /proc/PID/maps reads */
	uint64_t bpf_syncs;           /* updates from eBPF's "new_mappings" alone (no /proc read) */
	uint64_t gone_before_read;    /* exec'd processes that exited before the reader saw them */
	uint64_t scan_failures;       /* process gone or unreadable */
	uint64_t exe_failures;        /* mapped files that could not be opened or parsed */
	uint64_t bpf_insert_failures; /* mapping entries the BPF map refused (full) */
	uint64_t alive;
	uint64_t exited;
	uint64_t reaped; /* exited processes forgotten after the grace period */
};

struct process_table;

/* What an exec record tells of the new image, so that naming it reads nothing from /proc
 * when the tracker knows the rest (the cgroup's container, the executable's path).
 */
struct exec_info {
	char comm[16];
	uint64_t cgroup_id;   /* 0: unknown */
	uint64_t exe_file_id; /* the executable's file_id, 0: not known to eBPF */
};

/* Called after every successful scan of a live process, and when a process exits (its
 * mappings are still there). For modules that attach per-process state (interpreters).
 */
struct process_table_ops {
	void (*scanned)(const struct process *p, uint64_t now_ns, void *ctx);
	void (*exited)(const struct process *p, void *ctx);
	void *ctx;
};

/* mappings_fd: the BPF LPM map, or -1 to track without eBPF (tests). */
struct process_table *process_table__new(struct exe_registry *reg, int mappings_fd,
					 int new_mappings_fd);
void process_table__free(struct process_table *pt);
/* "maps_epoch" (bpf/sampler.bpf.c's frame memo): bumped when a live process's entries change. */
void process_table__set_epoch_fd(struct process_table *pt, int epoch_fd);
void process_table__set_ops(struct process_table *pt, const struct process_table_ops *ops);

/* Scan every process in /proc; returns the number of processes loaded. */
int process_table__scan_all(struct process_table *pt, uint64_t now_ns);
/* (Re)scan one process now. NULL with errno ESRCH if it is gone. */
struct process *process_table__scan(struct process_table *pt, pid_t pid, uint64_t now_ns);
/* A sample referred to pid at an address we could not resolve: rescan, at most once per
 * `min_interval_ns` per process, doubled after each such rescan that found nothing new (up to
 * 8x: a process running code in anonymous memory, a JIT eBPF knows nothing of, asks at every
 * sample, and a big one's maps take milliseconds to read); any change, or an exec, resets it.
 * Returns the process (possibly not rescanned) or NULL.
 */
struct process *process_table__refresh(struct process_table *pt, pid_t pid, uint64_t now_ns,
				       uint64_t min_interval_ns);
/* exec: take the new image from what eBPF entered at exec when every file in it is known,
 * else rescan now and once more shortly after (the dynamic loader maps libraries).
 */
void process_table__exec(struct process_table *pt, pid_t pid, const struct exec_info *info,
			 uint64_t now_ns);
/* The process mapped a file executable at mapped_ns (CLOCK_MONOTONIC, the record's time):
 * nothing when its view is newer (read after mapped_ns: the loader's mmaps of a process whose
 * exec record was read after them); else apply what eBPF entered when it knew the file, else
 * rescan now, unless a rescan is already due (an exec'ing process gets several mmaps in a
 * row; one rescan after the burst suffices) or the process was found gone after mapped_ns
 * (nothing left to read).
 */
void process_table__mapped(struct process_table *pt, pid_t pid, uint64_t mapped_ns,
			   uint64_t now_ns);
/* exit: drop the BPF entries, keep the process for symbolization. */
void process_table__exit(struct process_table *pt, pid_t pid, uint64_t now_ns);
/* Forget processes that exited more than grace_ns ago (their samples are long processed and
 * their profile interval exported); returns how many. Keeps the table bounded under churn.
 */
size_t process_table__reap(struct process_table *pt, uint64_t now_ns, uint64_t grace_ns);
/* Run pending rescans that are due. */
void process_table__tick(struct process_table *pt, uint64_t now_ns);

struct process *process_table__find(const struct process_table *pt, pid_t pid);
void process_table__stats(const struct process_table *pt, struct process_stats *out);

/* Whether p's mappings show at addr what a sample taken at its "new_mappings" seq sample_seq
 * (a record's map_seq) ran: no mapping entered there between p's view (view_seq) and the
 * sample, in either order, nor since. A view older than the sample, with no account left to
 * check it against (the process is gone), does not fit. true when sample_seq is 0.
 */
bool process__view_fits(const struct process_table *pt, const struct process *p, uint64_t addr,
			uint64_t sample_seq);
/* on: from now until process_table__memo_views(pt, false), process__view_fits() reads eBPF's
 * account of a process once (again after a new view of it) and checks every address against
 * that read: for a caller that checks many addresses of one sample (a deferred replay's
 * frames). Mappings eBPF enters meanwhile came after both the view and the sample, so they do
 * not change what the sample ran. Without memory for it, every check reads, as when off.
 */
void process_table__memo_views(struct process_table *pt, bool on);

/* The executable mapping containing absolute address addr, or NULL. */
const struct exec_mapping *process__mapping_at(const struct process *p, uint64_t addr);

#endif
