/* The store as a sink of intervals: the embedded store (store/store.h) kept usable for its
 * writer's whole life (the agent's). A file found corrupt (at start, or when a write meets
 * corruption) is moved aside as FILE.corrupt-<time>, said once in the log, and profiling goes
 * on into a fresh FILE; each such recovery is counted. Used by one thread only.
 */
#ifndef STACKSCOPE_STORE_SINK_H
#define STACKSCOPE_STORE_SINK_H

#include <stdint.h>

#include "store/store.h"

struct store_sink;
struct profile;

struct store_sink_stats {
	struct store_stats store; /* of the file being written, added up across recoveries */
	uint64_t recovered;       /* corrupt files moved aside */
};

/* NULL with errno set after logging one clear line (unwritable place, other schema). */
struct store_sink *store_sink__open(const char *path, uint64_t max_sz, uint64_t max_age_ns);
void store_sink__free(struct store_sink *sink);
/* Writes one interval; failures are logged and counted, never fatal. */
void store_sink__write(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
			void *ctx);
void store_sink__stats(const struct store_sink *sink, struct store_sink_stats *out);

#endif
