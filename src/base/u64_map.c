/* Open-addressing u64 -> pointer map; deletion uses backward-shift so no tombstones. */
#include <errno.h>
#include <stdlib.h>

#include "base/u64_map.h"

static size_t slot_of(const struct u64_map *m, uint64_t key)
{
	return (size_t)u64_hash(key) & (m->cap - 1);
}

void *u64_map__get(const struct u64_map *m, uint64_t key)
{
	size_t i;

	if (!m->cap || !key)
		return NULL;
	for (i = slot_of(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->values[i];
	return NULL;
}

static int grow(struct u64_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16, i;
	struct u64_map n = { .cap = ncap };

	if (ncap < m->cap)
		return -ENOMEM;
	n.keys = calloc(ncap, sizeof(*n.keys));
	n.values = calloc(ncap, sizeof(*n.values));
	if (!n.keys || !n.values) {
		free(n.keys);
		free(n.values);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		for (j = slot_of(&n, m->keys[i]); n.keys[j]; j = (j + 1) & (ncap - 1))
			;
		n.keys[j] = m->keys[i];
		n.values[j] = m->values[i];
		n.cnt++;
	}
	free(m->keys);
	free(m->values);
	*m = n;
	return 0;
}

int u64_map__set(struct u64_map *m, uint64_t key, void *value)
{
	size_t i;
	int err;

	if (!key)
		return -EINVAL;
	if ((m->cnt + 1) * 4 > m->cap * 3) {
		err = grow(m);
		if (err)
			return err;
	}
	for (i = slot_of(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			m->values[i] = value;
			return 0;
		}
	}
	m->keys[i] = key;
	m->values[i] = value;
	m->cnt++;
	return 0;
}

void *u64_map__del(struct u64_map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;
	void *old;

	if (!m->cap || !key)
		return NULL;
	for (i = slot_of(m, key); m->keys[i] != key; i = (i + 1) & mask)
		if (!m->keys[i])
			return NULL;
	old = m->values[i];
	/* Backward-shift: move later entries of the cluster into the hole when allowed. */
	for (j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->keys[j]);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			m->values[i] = m->values[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->values[i] = NULL;
	m->cnt--;
	return old;
}

int u64_map__next(const struct u64_map *m, size_t *iter, uint64_t *key, void **value)
{
	for (; *iter < m->cap; (*iter)++) {
		if (m->keys[*iter]) {
			*key = m->keys[*iter];
			*value = m->values[*iter];
			(*iter)++;
			return 1;
		}
	}
	return 0;
}

void u64_map__free_values(struct u64_map *m, void (*free_value)(void *value))
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->cap; i++)
		if (m->keys[i])
			free_value(m->values[i]);
	u64_map__free(m);
}

void u64_map__free(struct u64_map *m)
{
	if (!m)
		return;
	free(m->keys);
	free(m->values);
	*m = (struct u64_map)U64_MAP_INIT; /* empty, ready for reuse */
}
