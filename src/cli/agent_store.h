/* The agent's store sink: the embedded store (store/store.h) kept usable for the agent's
 * whole life. A file found corrupt (at start, or when a write meets corruption) is moved aside
 * as FILE.corrupt-<time>, said once in the log, and profiling goes on into a fresh FILE; each
 * such recovery is counted. Used by the agent's thread only.
 */
#ifndef STACKSCOPE_AGENT_STORE_H
#define STACKSCOPE_AGENT_STORE_H

#include <stdint.h>

#include "store/store.h"

struct agent_store;
struct profile;

struct agent_store_stats {
	struct store_stats store; /* of the file being written, added up across recoveries */
	uint64_t recovered;       /* corrupt files moved aside */
};

/* NULL with errno set after logging one clear line (unwritable place, other schema). */
struct agent_store *agent_store__open(const char *path, uint64_t max_sz, uint64_t max_age_ns);
void agent_store__free(struct agent_store *as);
/* Writes one interval; failures are logged and counted, never fatal. */
void agent_store__write(struct agent_store *as, const struct profile *p, store_process_fn lookup,
			void *ctx);
void agent_store__stats(const struct agent_store *as, struct agent_store_stats *out);

#endif
