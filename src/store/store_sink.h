/* The store as a sink of intervals: the embedded store (store/store.h) kept usable for its
 * writer's whole life (the agent's). A file found corrupt (at start, or when a write meets
 * corruption) is moved aside as FILE.corrupt-<time>, said once in the log, and profiling goes
 * on into a fresh FILE; each such recovery is counted.
 *
 * Another writer of the same file (`stackscope store import`, a second agent, the sqlite3
 * command holding a transaction) never silences the sink: a write waits for its lock at most
 * STORE_SINK_BUSY_MS (the sampling thread writes), then the interval is kept, a copy with the
 * executables and containers of its processes as they were, and written before the next one
 * once the file is free again; so are intervals that met a full disk or any other error that
 * may pass. What is kept is bounded (STORE_SINK_PENDING_MAX_CNT intervals,
 * STORE_SINK_PENDING_MAX_SZ bytes): past that the oldest kept interval is dropped, counted.
 * At the end (store_sink__free()) what is still kept gets one last try, waiting longer.
 * Used by one thread only.
 */
#ifndef STACKSCOPE_STORE_SINK_H
#define STACKSCOPE_STORE_SINK_H

#include <stdint.h>

#include "store/store.h"

struct store_sink;
struct profile;

#define STORE_SINK_BUSY_MS 250
#define STORE_SINK_FINAL_BUSY_MS 3000
#define STORE_SINK_PENDING_MAX_CNT 64
#define STORE_SINK_PENDING_MAX_SZ (32u << 20)

struct store_sink_stats {
	struct store_stats store; /* of the file being written, added up across recoveries;
				   * write_failed counts failed attempts, a kept interval's too */
	uint64_t recovered;       /* corrupt files moved aside */
	uint64_t deferred;        /* intervals kept after a failed attempt */
	uint64_t written_late;    /* kept intervals written since */
	uint64_t lost;            /* intervals never written: kept ones dropped past the bounds or
				   * at the end, and those no retry could help (too large) */
	uint64_t pending;         /* intervals kept now */
	uint64_t pending_sz;      /* their bytes */
};

/* NULL with errno set after logging one clear line (unwritable place, another program's
 * database, other schema). A file another writer holds locked longer than the open's wait is
 * no reason to fail: the sink starts without it (said once) and opens it at a later write.
 */
struct store_sink *store_sink__open(const char *path, uint64_t max_sz, uint64_t max_age_ns);
/* Writes what is still kept (one last try), then frees. Accepts NULL. */
void store_sink__free(struct store_sink *sink);
/* Writes the intervals kept so far, then p (copied and kept when it cannot be written now);
 * failures are logged and counted, never fatal. p stays the caller's.
 */
void store_sink__write(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
		       void *ctx);
void store_sink__stats(const struct store_sink *sink, struct store_sink_stats *out);

#endif
