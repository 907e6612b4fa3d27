/* The dictionary rows a store writer has found or added (strings, mappings, frames,
 * processes, threads, small stacks and label sets), by their exact content -> row id, kept
 * from one write to the next. Each interval's profile is a new one, so the writer's caches by
 * profile pointer and id (store_db.h) start empty at every write, yet most of its rows are the
 * last interval's: a deep interpreter stack's thousands of frames were one sqlite index
 * descent each per write; here they are a hash and a compare.
 *
 * A key is the caller's bytes (the dictionary and its columns); a found id is only as good as
 * the row behind it, so the writer clears the cache whenever a row it names may have been
 * deleted or its id reused: after its collection of unused rows (store_gc.c), on a rolled
 * back write, and when another connection has committed since (PRAGMA data_version).
 *
 * Invariants: at most STORE_DICT_CACHE_BYTES of keys and entries; past that it starts over
 * (cleared, then refilled by the writer's lookups). Keys longer than STORE_DICT_KEY_MAX are
 * not kept (a deep stack's frames: new in every interval anyway). A zeroed struct is an empty
 * cache. Not thread-safe: the writer's.
 */
#ifndef STACKSCOPE_STORE_DICT_CACHE_H
#define STACKSCOPE_STORE_DICT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/id_index.h"

#define STORE_DICT_CACHE_BYTES (4u << 20)
#define STORE_DICT_KEY_MAX 512

struct store_dict_entry {
	size_t off;   /* of its key in the arena */
	uint32_t len; /* of its key */
	int64_t id;   /* the row's */
};

struct store_dict_cache {
	uint8_t *arena; /* keys, one after another */
	size_t arena_len, arena_cap;
	struct store_dict_entry *ents; /* [0] unused: ids of the index are 1-based */
	size_t ent_cnt, ent_cap;
	struct id_index idx;
	uint64_t resets; /* cleared because full */
};

/* The row id of key (len bytes), or 0 when the cache does not know it. */
int64_t store_dict_cache__find(const struct store_dict_cache *c, const void *key, size_t len);
/* Remembers key -> id (id > 0; a key not there: find() said 0). A key too long is not kept;
 * a full cache starts over first. 0 or -ENOMEM (the cache is then empty, still usable).
 */
int store_dict_cache__add(struct store_dict_cache *c, const void *key, size_t len, int64_t id);
/* Forgets every key (their rows may be gone); keeps its memory for the next ones. */
void store_dict_cache__clear(struct store_dict_cache *c);
/* Frees it all; the cache is zeroed (empty, usable). Accepts NULL. */
void store_dict_cache__free(struct store_dict_cache *c);

#endif
