/* Loads per-file unwind tables into the eBPF unwinder's maps.
 *
 * Layout (see bpf/abi.h): "files" file_id -> flags; "unwind_pages" (file_id, 64 KiB page) ->
 * a range of the global entry pool, segments in "unwind_segments" made as tables need them
 * (memory-mapped, one contiguous range per file, allocated first-fit, or when none holds it
 * whole pieces split at its 64 KiB pages: a page's entries always lie in one segment);
 * "unwind_rules" the de-duplicated rule table (memory-mapped, append-only while the loader
 * lives, at most 65536 rules).
 * Tables are unloaded (files entry first, then pages, then the pool range) when no live
 * process maps the file any more; a sample already inside a lookup at that moment may read
 * an entry of the next table loaded into the same range: one wrong frame, never a crash.
 * Invariants: a file's pages are inserted only after its entries and rules are written, and
 * FILE_HAS_TABLE is set last, so eBPF never sees a half-loaded table.
 *
 * It also keeps, by file_id, what the table build queue (table_queue.h), the deferred
 * unwinder (deferred.h) and the samples (unwind_maps__note_sampled()) know of each file's
 * table: its state, the samples waiting for it, when it was last sampled. One status per
 * executable the registry holds: created on first use, dropped by unwind_maps__forget()
 * (exe_registry_ops.forget) or with um.
 */
#ifndef STACKSCOPE_UNWIND_MAPS_H
#define STACKSCOPE_UNWIND_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct executable;
struct unwind_table;
struct table_cache;
struct debuginfo;

struct unwind_maps_stats {
	uint64_t files_loaded;
	uint64_t files_no_cfi;
	uint64_t files_failed;        /* table build error, pool or rule table full, map full */
	uint64_t files_unloaded;      /* tables dropped after their last process went away */
	uint64_t files_debug_frame;   /* tables that needed a separate debug file's .debug_frame */
	uint64_t files_cfi_malformed; /* tables built (not from the cache) despite malformed CFI */
	uint64_t cfi_malformed;   /* malformed CFI entries skipped in those (see unwind_table.h) */
	uint64_t entries_used;    /* pool entries in use */
	uint64_t entries_created; /* entries in the pool's segments made so far */
	uint64_t segments;        /* segments made (they stay) */
	uint64_t tables_split;    /* tables loaded in pieces (no free range or new segment held
				   * them whole: larger than a segment, or the pool fragmented) */
	uint64_t rules_used;
	uint64_t pages;
	uint64_t pool_full; /* tables the entry pool had no room for (after evictions) */
	uint64_t build_ns;  /* time spent building tables */
	uint64_t load_ns;   /* time spent writing maps */
};

enum unwind_table_state {
	UNWIND_TABLE_NONE = 0, /* not built (yet) */
	UNWIND_TABLE_LOADED,   /* in the BPF maps */
	UNWIND_TABLE_QUEUED,   /* waiting in the build queue (unwind/table_queue.h) */
	UNWIND_TABLE_BUILDING, /* being built by the queue's worker thread */
	UNWIND_TABLE_EVICTED, /* unloaded to make room in the entry pool; queued again when sampled */
	UNWIND_TABLE_NO_CFI, /* the file has no CFI: frame pointers only */
	UNWIND_TABLE_FAILED, /* building or loading failed: frame pointers only */
};

/* A file's table, as the queue and the samples see it. */
struct table_status {
	enum unwind_table_state state;
	uint32_t wanted;          /* samples that landed in the file while it had no table */
	uint64_t last_sampled_ns; /* CLOCK_MONOTONIC of the last sample with a frame in it (0: none) */
	uint64_t retry_ns;        /* an EVICTED table is not queued again before this */
};

struct unwind_maps;

/* NULL with errno when the rule array cannot be memory-mapped. The fds are borrowed and must
 * stay open for the object's lifetime. The entry pool (entry_cap entries at most) is made of
 * segments that um creates as tables need them and puts in segments_fd, the array of maps
 * "unwind_segments" (bpf/abi.h); they stay until um is freed.
 */
struct unwind_maps *unwind_maps__new(int files_fd, int pages_fd, int segments_fd, int rules_fd,
				     size_t entry_cap);
void unwind_maps__free(struct unwind_maps *um);

/* Separate debug files (build id, debuglink) are looked up through di when a file's own CFI
 * is (nearly) empty (borrowed; NULL: never).
 */
void unwind_maps__set_debuginfo(struct unwind_maps *um, struct debuginfo *di);
/* Tables are read from / stored into this cache (borrowed; NULL: none). */
void unwind_maps__set_cache(struct unwind_maps *um, struct table_cache *cache);
/* file_id's table status, created (NONE) on first use; NULL when out of memory. Owned by um:
 * valid until unwind_maps__forget(file_id) or unwind_maps__free().
 */
struct table_status *unwind_maps__status(struct unwind_maps *um, uint64_t file_id);
/* file_id's table status if it has one, else NULL (nothing created). */
struct table_status *unwind_maps__find_status(struct unwind_maps *um, uint64_t file_id);
/* A sample has a frame in file_id: the build queue serves files without a table in the order
 * samples land in them, and evicts the least recently sampled (table_queue.h).
 */
void unwind_maps__note_sampled(struct unwind_maps *um, uint64_t file_id, uint64_t now_ns);
/* The registry is about to free file_id's executable: drop its status (its table must be
 * unloaded already: unwind_maps__unload()).
 */
void unwind_maps__forget(struct unwind_maps *um, uint64_t file_id);

/* Build exe's table (or read it from the cache) and load it, all at once; sets its status.
 * 0 or -errno (counted).
 */
int unwind_maps__load(struct unwind_maps *um, struct executable *exe);
/* The same in steps, for builds spread over time or threads (unwind/table_queue.h):
 * _cached: the table from the on-disk cache (0, -ENOENT on a miss);
 * _complete: after a build that returned err (*t its table), the separate debug file's
 *   .debug_frame where the file's own CFI is (nearly) empty, the cache store, the counters;
 *   0 with *t ready to install, else the file's state is NO_CFI (-ENOENT) or FAILED;
 * _install: *t into the BPF maps; -ENOSPC when the entry pool has no room (nothing changed,
 *   nothing counted: the caller may evict and retry), else LOADED or FAILED (counted).
 * All on the thread that owns um; the table stays the caller's.
 */
int unwind_maps__cached(struct unwind_maps *um, struct executable *exe, struct unwind_table **out);
int unwind_maps__complete(struct unwind_maps *um, struct executable *exe, int err,
			  struct unwind_table **t);
int unwind_maps__install(struct unwind_maps *um, struct executable *exe,
			 const struct unwind_table *t);
/* Whether the on-disk cache holds a table for file_id (no cache: false). */
bool unwind_maps__has_cached(const struct unwind_maps *um, uint64_t file_id);
/* Pool entries t needs; SIZE_MAX when it cannot be loaded at all. */
size_t unwind_maps__entries_needed(struct unwind_maps *um, const struct unwind_table *t);
/* The room in the pool unloading file_id would leave (0: not loaded): a table that no free
 * range holds whole is split at its pages across the free ranges, so all of it counts. */
size_t unwind_maps__hole_without(const struct unwind_maps *um, uint64_t file_id);
/* Entries free in the pool, and its size. */
size_t unwind_maps__pool_free(const struct unwind_maps *um);
size_t unwind_maps__pool_cap(const struct unwind_maps *um);
/* While hold: no segment is made past the first (installs meet -ENOSPC instead), for a
 * table no sample asked for yet: the pool grows only for code that runs.
 */
void unwind_maps__hold_growth(struct unwind_maps *um, bool hold);
/* The pool's segments come from m (unwind/segment_maker.h: a process that keeps CAP_BPF)
 * from now on; m is borrowed and outlives um. NULL: um makes them itself (needs CAP_BPF).
 */
struct segment_maker;
void unwind_maps__set_segment_maker(struct unwind_maps *um, struct segment_maker *m);
/* The fd of the pool's segment in that slot (bpf/abi.h), or -1: none (yet). Owned by um. */
int unwind_maps__segment_fd(const struct unwind_maps *um, uint32_t segment);
/* Load an already-built table for file_id (tests, the cache). */
int unwind_maps__load_table(struct unwind_maps *um, uint64_t file_id, const struct unwind_table *t,
			    uint32_t *first, uint32_t *cnt);
/* Remove a file's table (no-op if not loaded); its state goes back to NONE. */
void unwind_maps__unload(struct unwind_maps *um, struct executable *exe);
void unwind_maps__unload_file(struct unwind_maps *um, uint64_t file_id);
const struct unwind_maps_stats *unwind_maps__stats(const struct unwind_maps *um);

#endif
