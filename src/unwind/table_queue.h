/* The unwind-table build queue: which file gets its table next, and where it is built.
 *
 * A file that a live process starts mapping is queued (exe_registry ops->load), not built on
 * the spot; table_queue__run(), called from the sampling loop after every drain of the ring
 * buffer, works the queue in this order:
 *  1. files that samples landed in while they had no table (their status's `wanted` per byte
 *     of file, most first: a small file is not stuck behind a giant one), and files first
 *     mapped after table_queue__prime() (a new exec or dlopen: counted as one sample);
 *  2. files whose table the on-disk cache holds (a read, no CFI parsing);
 *  3. the rest: mapped by more live processes first, then smallest (unless sampled_only:
 *     table_queue__set_sampled_only()).
 * With sampled_only a giant file no sample landed in is not built, and grows the pool
 * (unwind_maps.h: segments) for nothing: a cached one takes only the room the segments made
 * have.
 * Small files are built on the calling thread within a time budget per call; giant files
 * (>= TABLE_QUEUE_GIANT_BYTES: libLLVM, libjvm, node, with megabytes of .eh_frame) go to one
 * worker thread, one at a time, so the sampling loop never waits for a build and the peak
 * memory of building is that of the largest single table. The worker parses its own mapping
 * of a dup of the file's fd and touches nothing else; everything else (cache, debug files,
 * BPF maps, counters) stays on the calling thread.
 *
 * When the unwind-entry pool is full, the table of the least recently sampled loaded file
 * (never one sampled in the last TABLE_QUEUE_EVICT_MIN_IDLE_NS) is unloaded to make room
 * (counted), else the new file goes without a table (counted as pool_full). Either waits as
 * EVICTED, queued again when a sample lands in it but not within
 * TABLE_QUEUE_EVICT_MIN_IDLE_NS: so every file costs at most one reload (mostly a cache read)
 * per that period, however the pool is contended, and files sampled all the time keep their
 * tables. A file that found no room is not even read again at its retry while the pool has
 * neither the entries its table took nor a file to evict for them (counted: no_room_waits).
 *
 * A file's table status is unwind_maps.h's (struct table_status, by file_id). The trace handler
 * (pipeline/trace_handler.c) tells the queue which files samples land in through
 * unwind_maps__note_sampled(): last_sampled_ns (eviction order) and, while the file has no
 * table, wanted (priority; an EVICTED file waits for it to become non-zero).
 *
 * Invariants: an executable is in the queue iff its status's state is QUEUED, EVICTED
 * (waiting for a sample) or BUILDING; table_queue__remove() (ops->unload) forgets it, and a
 * build in flight for it is discarded when it completes. Not thread-safe: one owner thread.
 */
#ifndef STACKSCOPE_TABLE_QUEUE_H
#define STACKSCOPE_TABLE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct executable;
struct unwind_maps;

#define TABLE_QUEUE_GIANT_BYTES (16ull << 20)
#define TABLE_QUEUE_EVICT_MIN_IDLE_NS (60 * 1000000000ULL)

struct table_queue_stats {
	uint64_t queued;         /* files currently waiting (not counting EVICTED ones) */
	uint64_t built_inline;   /* tables built or read from the cache on the owner thread */
	uint64_t built_worker;   /* tables built by the worker thread */
	uint64_t sampled_first;  /* builds started because samples were waiting for them */
	uint64_t discarded;      /* worker builds whose file was unloaded meanwhile */
	uint64_t evicted;        /* loaded tables unloaded to make room in the entry pool */
	uint64_t pool_full;      /* tables that found no room even after evictions */
	uint64_t no_room_waits;  /* retries of those not even read: the pool still had no room */
	uint64_t worker_busy_ns; /* time the worker spent building */
};

struct table_queue;

/* um is borrowed. NULL with errno (the worker thread could not start). */
struct table_queue *table_queue__new(struct unwind_maps *um);
/* Frees; a giant build in flight is left to the detached worker, which frees the rest. */
void table_queue__free(struct table_queue *q);
/* Serve only files that samples landed in (the agent: a file nothing on the machine runs
 * code in costs neither CPU nor pool room); the others stay queued until a sample lands in
 * them. Default false: everything, in the order above (record).
 */
void table_queue__set_sampled_only(struct table_queue *q, bool on);
/* Queue exe's table (its state becomes QUEUED). 0 or -ENOMEM. */
int table_queue__add(struct table_queue *q, struct executable *exe);
/* exe's table is no longer wanted (no live process maps it) or exe goes away. */
void table_queue__remove(struct table_queue *q, struct executable *exe);
/* Install a finished worker build, start the next giant one, and build or load small ones
 * for up to budget_ns (at least one). Returns the number of tables loaded.
 */
int table_queue__run(struct table_queue *q, uint64_t now_ns, uint64_t budget_ns);
/* Whether a file that samples asked for waits to be served on this thread (the caller should
 * come back soon rather than after its usual poll interval).
 */
bool table_queue__urgent(const struct table_queue *q);
/* Whether a table that samples asked for is still queued or being built (a recording's end
 * waits for them: deferred samples need them).
 */
bool table_queue__building_wanted(const struct table_queue *q);
/* Before sampling starts: serve the queue in its order (sampled_only or not) for up to
 * budget_ns, so the files most processes map have their tables from the first sample.
 */
void table_queue__prime(struct table_queue *q, uint64_t now_ns, uint64_t budget_ns);
/* Run until nothing is queued (tests, short recordings that want every table). */
void table_queue__drain(struct table_queue *q, uint64_t now_ns);
void table_queue__stats(const struct table_queue *q, struct table_queue_stats *out);

#endif
