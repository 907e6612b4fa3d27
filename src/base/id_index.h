/* A hash index from a 64-bit hash to a dense id (>= 1), open addressing with linear probing,
 * for the dictionaries of the encoders (strings, functions, attributes). The caller owns the
 * entries and decides equality: it walks the slots of a hash and compares what the ids point
 * at, then fills the empty slot the walk ended on.
 *
 *	if (id_index__reserve(t)) return -ENOMEM;
 *	for (i = id_index__first(t, h); t->ids[i]; i = id_index__next(t, i))
 *		if (t->hashes[i] == h && equal(t->ids[i])) return t->ids[i];
 *	id_index__set(t, i, h, new_id);
 *
 * Invariants: at most 3/4 full after reserve; id 0 marks an empty slot.
 */
#ifndef STACKSCOPE_ID_INDEX_H
#define STACKSCOPE_ID_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"

struct id_index {
	uint64_t *hashes;
	uint32_t *ids; /* 0 = empty slot */
	size_t cap, cnt;
};

/* Room for one more id (doubles and rehashes when needed); 0 or -ENOMEM. */
int id_index__reserve(struct id_index *t);
void id_index__free(struct id_index *t);

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
