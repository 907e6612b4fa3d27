/* The embedded profile store: one SQLite file holding every interval's aggregated samples in a
 * normalised form, so any time range can be merged back into one profile.
 *
 * Schema (version 1; `sqlite3 FILE .schema` shows it):
 *   strings(id, s)                    every name, path, build id, comm, label text, once
 *   mappings(id, path, build_id, start, limit_, file_offset, file_hash, go_build_id)
 *   frames(id, kind, mapping, address, runtime, call_site, lines)   lines: a blob of varint
 *                                     triples (function string, file string, line), innermost
 *                                     first; the line's high 32 bits hold its column (0: none)
 *   stacks(id, frames)                frames: a blob of varint frame ids, leaf first
 *   label_sets(id, labels)            labels: a blob of varint (key, value) string id pairs
 *   processes(id, pid, comm, exe, container)   one row per distinct tuple
 *   threads(id, tid, name)
 *   sample_types(id, type, unit)      "samples"/"count" today; others (off_cpu/nanoseconds)
 *                                     are rows of their own, so one interval can carry several
 *   intervals(id, start_ns, end_ns, period_ns, total)   total: sum of the "samples" values
 *   samples(interval, type, stack, process, thread, labels, value)   clustered by interval
 * Every dictionary row is unique on its content, so identical stacks of different intervals
 * are stored once.
 *
 * Invariants: the file is in WAL mode, so readers (`stackscope store query`, serve) never
 * block the writer nor see a half-written interval; each interval is one transaction, so a
 * crash loses at most the interval being written. Size and age are bounded: after each write
 * the oldest intervals are deleted until the file's live pages fit max_sz and nothing is
 * older than max_age_ns; every interval deleted is counted, and dictionary rows no interval
 * uses any more are collected afterwards (store_gc.c).
 *
 * A store object is used by one thread; other processes may open the same file.
 */
#ifndef STACKSCOPE_STORE_H
#define STACKSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;
struct store;

#define STORE_DEFAULT_PATH "/var/lib/stackscope/profiles.db"
#define STORE_SCHEMA_VERSION 1

struct store_opts {
	const char *path;
	uint64_t max_sz;     /* 0 = unbounded */
	uint64_t max_age_ns; /* 0 = unbounded; measured from the newest interval's end */
	bool read_only;
	unsigned int busy_ms; /* how long statements wait for another connection's lock before
			       * -EBUSY, opening included; 0 = 5 s */
};

/* What a sample was, for the processes table: filled by the writer's lookup callback. */
struct store_process {
	const char *exe;       /* executable path or NULL */
	const char *container; /* container id or NULL */
};

/* Fills *out for pid (strings borrowed until the next call); nonzero: unknown process. */
typedef int (*store_process_fn)(void *ctx, uint32_t pid, struct store_process *out);

struct store_stats {
	uint64_t intervals_written;
	uint64_t write_failed;
	uint64_t dropped_size; /* intervals deleted to stay under max_sz */
	uint64_t dropped_age;  /* intervals deleted for being older than max_age_ns */
	uint64_t samples_written;
	uint64_t gc_runs;      /* dictionary collections after drops */
	uint64_t file_sz;      /* live bytes (pages in use) after the last write */
	uint64_t interval_cnt; /* intervals held after the last write */
};

/* Opens (creating unless read_only) the store. NULL with errno set and a one-line reason in
 * err: EBADMSG for a file that is not a database or is corrupt (the whole file is checked for
 * a writer only; the caller may move it away and start afresh: store__quarantine()), ENOENT
 * for a missing or empty file when read_only, EPROTO for a store of another schema version
 * or an SQLite database that is not a store (another program's: it is left exactly as it
 * was, read and never written, no WAL switch), EROFS for a writer on a read-only file
 * system, EACCES without permission, ENOSPC (EDQUOT) for a full disk, ENOMEM. A reader of a
 * store on a read-only file system reads it as immutable when no -wal file is beside it
 * (sqlite could not make the -shm file otherwise).
 */
struct store *store__open(const struct store_opts *o, char *err, size_t err_sz);
void store__close(struct store *st);

/* How long the store's statements wait for another connection's lock before failing with
 * -EBUSY from now on (store_opts.busy_ms until then). 0 or -errno.
 */
int store__set_busy_timeout(struct store *st, unsigned int ms);

/* Renames the unusable file at path (and its -wal, -shm) to path.corrupt-<UTC time>; the new
 * name goes to moved (moved_sz bytes). 0 or -errno.
 */
int store__quarantine(const char *path, char *moved, size_t moved_sz);

/* Writes one interval (the profile's window and its aggregated samples), then applies the
 * retention bounds. lookup may be NULL (no executable nor container). 0, or -EBADMSG when the
 * file turned out corrupt, or another -errno; a failed interval is rolled back and counted.
 */
int store__write(struct store *st, const struct profile *p, store_process_fn lookup, void *ctx);

void store__stats(const struct store *st, struct store_stats *out);

/* ---- Queries (store_query.c) ---- */

/* Which samples a query merges. Strings NULL and numbers 0 match everything. */
struct store_filter {
	uint64_t from_ns,
		to_ns; /* intervals [start, end) overlapping [from_ns, to_ns) (an empty one: start in it); to 0 = no end */
	uint32_t pid;
	uint32_t tid;
	const char *comm;        /* process name, exact */
	const char *thread;      /* thread name, exact */
	const char *exe;         /* executable path, exact */
	const char *container;   /* container id, exact */
	const char *label;       /* "key=value" */
	const char *service;     /* the label service.name (OTel process context), exact */
	const char *sample_type; /* "samples" (NULL, "cpu"), "off_cpu", or a memory type
				  * ("alloc_space"...: profile/mem_types.h); an in-use type gives
				  * the last matching interval's values, not their sum */
};

/* Parses one "--name value" filter option into f (names: from, to, pid, tid, comm, thread,
 * exe, container, label, service, sample_type or sample-type; times in ns since the epoch or "-30s"/"-5m"/"-2h" from now). 1 if the
 * name is a filter option, 0 if not, -EINVAL for a bad value.
 */
int store_filter__parse(struct store_filter *f, const char *name, const char *value);

/* Merges every matching sample into a new profile (frames, mappings, labels as written; the
 * window spans the matching intervals). 0 and *out (caller frees), or -errno (-EBADMSG: a
 * corrupt row or file, -ENOMEM).
 */
int store__query(struct store *st, const struct store_filter *f, struct profile **out);

struct store_interval {
	int64_t id;
	uint64_t start_ns, end_ns;
	uint64_t total; /* samples in it (all processes) */
};

/* Calls fn for each interval overlapping [from_ns, to_ns) in time order (to 0: no end); fn
 * returning nonzero stops. 0 or -errno.
 */
int store__intervals(struct store *st, uint64_t from_ns, uint64_t to_ns,
		     int (*fn)(void *ctx, const struct store_interval *iv), void *ctx);

/* Calls fn with each sample type (and unit) the intervals overlapping [from_ns, to_ns) have
 * rows of (to 0: no end), in the order the store first saw them; fn returning nonzero stops.
 * 0 or -errno.
 */
int store__sample_types(struct store *st, uint64_t from_ns, uint64_t to_ns,
			int (*fn)(void *ctx, const char *type, const char *unit), void *ctx);

/* What identifies the store's content for a cache: the intervals held, the newest id and end.
 */
struct store_state {
	uint64_t interval_cnt;
	int64_t last_id;
	uint64_t last_end_ns;
};

/* Fills *out from one read. 0 or -errno. */
int store__state(struct store *st, struct store_state *out);

/* One process (pid, comm, executable, container: NULL when unknown or empty) and its samples
 * in a range; strings valid during the callback only.
 */
struct store_process_row {
	uint32_t pid;
	const char *comm, *exe, *container;
	uint64_t samples;
};

/* Calls fn for each process with samples in the intervals overlapping [from_ns, to_ns), most
 * samples first (the UI's filter lists); fn returning nonzero stops. 0 or -errno.
 */
int store__processes(struct store *st, uint64_t from_ns, uint64_t to_ns,
		     int (*fn)(void *ctx, const struct store_process_row *row), void *ctx);

#endif
