/* A set-associative slot index with least-recently-used replacement (lru_sets.h). */
#include "lru_sets.h"

#include <errno.h>
#include <stdlib.h>

int lru_sets__init(struct lru_sets *ls, size_t cap)
{
	*ls = (struct lru_sets){ 0 };
	if (cap < LRU_WAYS || (cap & (cap - 1)))
		return -EINVAL;
	ls->keys = calloc(cap, sizeof(*ls->keys));
	ls->stamps = calloc(cap, sizeof(*ls->stamps));
	if (!ls->keys || !ls->stamps) {
		lru_sets__free(ls);
		return -ENOMEM;
	}
	ls->sets = cap / LRU_WAYS;
	return 0;
}

void lru_sets__free(struct lru_sets *ls)
{
	free(ls->keys);
	free(ls->stamps);
	*ls = (struct lru_sets){ 0 };
}

size_t lru_sets__slot(struct lru_sets *ls, uint64_t key)
{
	size_t base, i, victim;
	uint32_t now = ++ls->clock;

	if (!key)
		key = 1;
	/* the high bits pick the set: callers' hashes mix into them as well as the low ones */
	base = (size_t)((key >> 32 ^ key) & (ls->sets - 1)) * LRU_WAYS;
	victim = base;
	for (i = base; i < base + LRU_WAYS; i++) {
		if (ls->keys[i] == key) {
			ls->stamps[i] = now;
			return i;
		}
		if (!ls->keys[i]) {
			victim = i;
			break;
		}
		/* the oldest stamp, the clock's wrap included: the largest age */
		if (now - ls->stamps[i] > now - ls->stamps[victim])
			victim = i;
	}
	ls->keys[victim] = key;
	ls->stamps[victim] = now;
	return victim;
}
