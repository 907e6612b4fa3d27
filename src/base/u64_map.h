/* A hash map from a nonzero 64-bit key to a pointer, open addressing with linear probing.
 *
 * Invariants: key 0 is reserved (never stored); the table is at most 3/4 full; growth doubles
 * it. Values are borrowed: the map never frees them. Not thread-safe.
 */
#ifndef STACKSCOPE_U64_MAP_H
#define STACKSCOPE_U64_MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64_map {
	uint64_t *keys;
	void **values;
	size_t cap; /* power of two, or 0 */
	size_t cnt;
};

#define U64_MAP_INIT \
	{            \
		0    \
	}

/* The value for key, or NULL. */
void *u64_map__get(const struct u64_map *m, uint64_t key);
/* Insert or replace; 0 or -ENOMEM, -EINVAL for key 0. */
int u64_map__set(struct u64_map *m, uint64_t key, void *value);
/* Remove key; returns the old value or NULL. */
void *u64_map__del(struct u64_map *m, uint64_t key);
void u64_map__free(struct u64_map *m);
/* Pass every value to free_value (an owner's map), then u64_map__free(m). */
void u64_map__free_values(struct u64_map *m, void (*free_value)(void *value));

/* Iterate: for (i = 0; u64_map__next(m, &i, &k, &v);) ... (no insertions while iterating). */
int u64_map__next(const struct u64_map *m, size_t *iter, uint64_t *key, void **value);

/* A 64-bit mix for keys that are not already well distributed. */
static inline uint64_t u64_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif
