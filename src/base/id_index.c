/* Hash -> id index. See id_index.h. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "base/id_index.h"

void id_index__free(struct id_index *t)
{
	if (!t)
		return;
	free(t->hashes);
	free(t->ids);
	*t = (struct id_index){ 0 }; /* a zeroed index is an empty one */
}

int id_index__reserve(struct id_index *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64, i, j;
	uint64_t *hashes;
	uint32_t *ids;

	if (t->cap && (t->cnt + 1) * 4 <= t->cap * 3)
		return 0;
	if (cap > SIZE_MAX / sizeof(uint64_t))
		return -ENOMEM;
	hashes = calloc(cap, sizeof(*hashes));
	ids = calloc(cap, sizeof(*ids));
	if (!hashes || !ids) {
		free(hashes);
		free(ids);
		return -ENOMEM;
	}
	for (i = 0; i < t->cap; i++) {
		if (!t->ids[i])
			continue;
		for (j = (size_t)u64_hash(t->hashes[i]) & (cap - 1); ids[j];
		     j = (j + 1) & (cap - 1))
			;
		hashes[j] = t->hashes[i];
		ids[j] = t->ids[i];
	}
	free(t->hashes);
	free(t->ids);
	t->hashes = hashes;
	t->ids = ids;
	t->cap = cap;
	return 0;
}

uint32_t id_index__find(const struct id_index *t, uint64_t hash, id_index_eq_fn eq, const void *ctx,
			const void *key)
{
	size_t i;

	if (!t->cap)
		return 0;
	for (i = id_index__first(t, hash); t->ids[i]; i = id_index__next(t, i)) {
		if (t->hashes[i] == hash && eq(ctx, t->ids[i], key))
			return t->ids[i];
	}
	return 0;
}

void id_index__add(struct id_index *t, uint64_t hash, uint32_t id)
{
	size_t i;

	assert(t->cap && t->cnt < t->cap && id);
	for (i = id_index__first(t, hash); t->ids[i]; i = id_index__next(t, i))
		;
	id_index__set(t, i, hash, id);
}
