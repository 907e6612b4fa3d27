/* A store writer's dictionary rows by content. See store_dict_cache.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "store/store_dict_cache.h"

struct key_ref {
	const struct store_dict_cache *c;
	const void *key;
	size_t len;
};

static bool key_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct key_ref *k = key;
	const struct store_dict_entry *e = &k->c->ents[id];

	(void)ctx;
	return e->len == k->len && !memcmp(k->c->arena + e->off, k->key, k->len);
}

int64_t store_dict_cache__find(const struct store_dict_cache *c, const void *key, size_t len)
{
	struct key_ref k = { c, key, len };
	uint32_t i;

	if (len > STORE_DICT_KEY_MAX)
		return 0;
	i = id_index__find(&c->idx, fnv64(key, len, FNV64_INIT), key_eq, NULL, &k);
	return i ? c->ents[i].id : 0;
}

void store_dict_cache__clear(struct store_dict_cache *c)
{
	if (c->idx.cap)
		memset(c->idx.ids, 0, c->idx.cap * sizeof(*c->idx.ids));
	c->idx.cnt = 0;
	c->arena_len = 0;
	c->ent_cnt = 0;
}

void store_dict_cache__free(struct store_dict_cache *c)
{
	if (!c)
		return;
	free(c->arena);
	free(c->ents);
	id_index__free(&c->idx);
	memset(c, 0, sizeof(*c));
}

/* What the cache holds: keys, entries and the index's slots. */
static size_t held(const struct store_dict_cache *c)
{
	return c->arena_cap + c->ent_cap * sizeof(*c->ents) +
	       c->idx.cap * (sizeof(*c->idx.hashes) + sizeof(*c->idx.ids));
}

int store_dict_cache__add(struct store_dict_cache *c, const void *key, size_t len, int64_t id)
{
	if (len > STORE_DICT_KEY_MAX || id <= 0)
		return 0;
	if (held(c) > STORE_DICT_CACHE_BYTES / 2 &&
	    (c->arena_len + len > c->arena_cap || c->ent_cnt + 2 > c->ent_cap ||
	     (c->idx.cnt + 1) * 4 > c->idx.cap * 3)) {
		/* growing any part would double it past the cap: start over */
		store_dict_cache__clear(c);
		c->resets++;
	}
	if (array__reserve((void **)&c->arena, &c->arena_cap, c->arena_len + len, 1) ||
	    array__reserve((void **)&c->ents, &c->ent_cap, c->ent_cnt + 2, sizeof(*c->ents)) ||
	    id_index__reserve(&c->idx)) {
		store_dict_cache__clear(c);
		return -ENOMEM;
	}
	c->ents[++c->ent_cnt] = (struct store_dict_entry){ c->arena_len, (uint32_t)len, id };
	memcpy(c->arena + c->arena_len, key, len);
	c->arena_len += len;
	id_index__add(&c->idx, fnv64(key, len, FNV64_INIT), (uint32_t)c->ent_cnt);
	return 0;
}
