/* A hash index from a 64-bit hash to a dense id (>= 1), open addressing with linear probing,
 * for the dictionaries of the profile and the encoders (strings, frames, functions,
 * attributes). The caller owns the entries and decides equality. Either with a callback:
 *
 *	id = id_index__find(t, h, equal, ctx, key);
 *	if (!id) {
 *		if (id_index__reserve(t) || <room for one more entry>) return -ENOMEM;
 *		id = <store the entry>;
 *		id_index__add(t, h, id);
 *	}
 *
 * or by walking the slots of a hash and comparing what the ids point at, then filling the
 * empty slot the walk ended on:
 *
 *	if (id_index__reserve(t)) return -ENOMEM;
 *	for (i = id_index__first(t, h); t->ids[i]; i = id_index__next(t, i))
 *		if (t->hashes[i] == h && equal(t->ids[i])) return t->ids[i];
 *	id_index__set(t, i, h, new_id);
 *
 * Invariants: at most 3/4 full after reserve; id 0 marks an empty slot; hashes are kept, so
 * growing never calls back into the caller. A zeroed struct is an empty index.
 */
#ifndef STACKSCOPE_ID_INDEX_H
#define STACKSCOPE_ID_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"

struct id_index {
	uint64_t *hashes;
	uint32_t *ids; /* 0 = empty slot */
	size_t cap, cnt;
};

/* Room for one more id (doubles and rehashes when needed); 0 or -ENOMEM (the index is
 * unchanged then).
 */
int id_index__reserve(struct id_index *t);
/* Frees the slots; the index is empty (and usable) again. Accepts NULL. */
void id_index__free(struct id_index *t);

/* Whether the entry with this id is the one key describes (ctx: the caller's tables). */
typedef bool (*id_index_eq_fn)(const void *ctx, uint32_t id, const void *key);

/* The id of the entry with this hash for which eq() holds, or 0 (also on a never reserved
 * index). eq() is called only for ids stored under the same hash.
 */
uint32_t id_index__find(const struct id_index *t, uint64_t hash, id_index_eq_fn eq, const void *ctx,
			const void *key);

/* Stores id under hash, for an entry known to be absent (id_index__find() said 0). Needs
 * an id_index__reserve() since the last add.
 */
void id_index__add(struct id_index *t, uint64_t hash, uint32_t id);

static inline size_t id_index__first(const struct id_index *t, uint64_t hash)
{
	return (size_t)u64_hash(hash) & (t->cap - 1);
}

static inline size_t id_index__next(const struct id_index *t, size_t i)
{
	return (i + 1) & (t->cap - 1);
}

/* Fill empty slot i (where a walk for hash ended) with id. */
static inline void id_index__set(struct id_index *t, size_t i, uint64_t hash, uint32_t id)
{
	t->hashes[i] = hash;
	t->ids[i] = id;
	t->cnt++;
}

/* FNV-1a over bytes, continuing from h (start with FNV64_INIT). */
#define FNV64_INIT 0xcbf29ce484222325ULL
static inline uint64_t fnv64(const void *data, size_t len, uint64_t h)
{
	const unsigned char *s = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif
