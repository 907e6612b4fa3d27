/* Which slot of a caller's fixed array caches a key: a set-associative index, LRU_WAYS slots
 * per set, the least recently used slot of a set given to a key it does not hold.
 *
 * The runtimes' symbol caches (a code object, a method, a function, read from a process's
 * memory) use it in place of a direct-mapped table, where two hot objects whose hashes met
 * evicted each other on every frame: a read of the process per frame, and once the process
 * had exited, a marker for every frame still in flight (it cannot be read again).
 *
 * Invariants: key 0 is reserved (lru_sets__slot maps it to 1); the index holds keys and use
 * stamps only, so a slot handed to a new key still holds its old entry: the caller checks the
 * entry against the object it wants, as with any hash-indexed cache, and fills it when they
 * differ. Not thread-safe.
 */
#ifndef STACKSCOPE_LRU_SETS_H
#define STACKSCOPE_LRU_SETS_H

#include <stddef.h>
#include <stdint.h>

#define LRU_WAYS 4

struct lru_sets {
	uint64_t *keys;   /* [sets * LRU_WAYS], 0: never used */
	uint32_t *stamps; /* last use, by clock */
	size_t sets;      /* power of two */
	uint32_t clock;
};

/* An index over cap slots (a power of two, at least LRU_WAYS); 0 or -ENOMEM, -EINVAL. */
int lru_sets__init(struct lru_sets *ls, size_t cap);
void lru_sets__free(struct lru_sets *ls);
/* The slot for key (hashed already: its bits pick the set): the one holding it, else the
 * least recently used of its set, now holding it.
 */
size_t lru_sets__slot(struct lru_sets *ls, uint64_t key);

#endif
