/* Sampled allocations still live, by (process, pointer): see alloc_live.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "base/u64_map.h"
#include "pipeline/alloc_live.h"
#include "profile/profile.h"

struct alloc_entry {
	uint32_t pid, tid;
	uint64_t addr;
	uint64_t bytes, objects; /* the unbiased weights given to the allocation */
	char comm[SS_COMM_LEN], thread_comm[SS_COMM_LEN];
	uint32_t frame_cnt;
	uint32_t frames[]; /* frame ids of the profile, leaf first */
};

struct alloc_live {
	struct u64_map map; /* alloc_key() -> struct alloc_entry * (owned) */
	/* pid + 1 -> (void *)1: the processes that had an entry since the last clear; an exit or
	 * exec of any other (most of them, system-wide) is answered without a look at the table
	 */
	struct u64_map pids;
	struct alloc_live_stats stats;
};

/* Pointers are below 2^57; a pid fits 22 bits: keys mixed, entries checked on lookup. */
static uint64_t alloc_key(uint32_t pid, uint64_t addr)
{
	uint64_t k = u64_hash(addr ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ULL));

	return k ? k : 1;
}

struct alloc_live *alloc_live__new(void)
{
	return calloc(1, sizeof(struct alloc_live));
}

void alloc_live__clear(struct alloc_live *al)
{
	if (al) {
		u64_map__free_values(&al->map, free);
		u64_map__free(&al->pids);
		al->stats.live = 0;
	}
}

void alloc_live__free(struct alloc_live *al)
{
	alloc_live__clear(al);
	free(al);
}

static struct alloc_entry *find(struct alloc_live *al, uint32_t pid, uint64_t addr, uint64_t *key)
{
	struct alloc_entry *e;

	*key = alloc_key(pid, addr);
	e = u64_map__get(&al->map, *key);
	return e && e->pid == pid && e->addr == addr ? e : NULL;
}

int alloc_live__sampled(struct alloc_live *al, const struct sample_record *rec,
			const struct profile_sample *s)
{
	struct alloc_entry *e, *old;
	uint64_t key;

	if (!rec->mem_addr || !s || s->mem_kind != PROFILE_MEM_ALLOC)
		return 0;
	old = u64_map__get(&al->map, alloc_key(rec->hdr.pid, rec->mem_addr));
	if (old) { /* the same pointer again (its free lost), or a key collision: the newest */
		al->stats.replaced++;
		free(u64_map__del(&al->map, alloc_key(rec->hdr.pid, rec->mem_addr)));
	}
	if (al->map.cnt >= ALLOC_LIVE_CAP) {
		al->stats.full++;
		return 0;
	}
	e = malloc(sizeof(*e) + (size_t)s->frame_cnt * sizeof(e->frames[0]));
	if (!e)
		return -ENOMEM;
	e->pid = rec->hdr.pid;
	e->tid = rec->hdr.tid;
	e->addr = rec->mem_addr;
	e->bytes = s->mem_value;
	e->objects = s->mem_objects;
	memcpy(e->comm, rec->comm, sizeof(e->comm));
	e->comm[sizeof(e->comm) - 1] = 0;
	memcpy(e->thread_comm, rec->thread_comm, sizeof(e->thread_comm));
	e->thread_comm[sizeof(e->thread_comm) - 1] = 0;
	e->frame_cnt = s->frame_cnt;
	memcpy(e->frames, s->frames, (size_t)s->frame_cnt * sizeof(e->frames[0]));
	(void)find(al, e->pid, e->addr, &key);
	if (u64_map__set(&al->map, key, e) ||
	    u64_map__set(&al->pids, (uint64_t)e->pid + 1, (void *)1)) {
		free(u64_map__del(&al->map, key));
		return -ENOMEM;
	}
	al->stats.tracked++;
	al->stats.live = al->map.cnt;
	return 0;
}

/* The sample of e's stack and process at time_ns, no weight yet (s borrows e's frames). */
static void sample_of(const struct alloc_entry *e, uint64_t time_ns, struct profile_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->frames = e->frames;
	s->frame_cnt = e->frame_cnt;
	s->pid = e->pid;
	s->tid = e->tid;
	s->comm = e->comm;
	s->thread_comm = e->thread_comm;
	s->time_ns = time_ns;
	s->mem_kind = PROFILE_MEM_ALLOC;
}

/* e (out of the table) taken back out of prof's in-use view at time_ns, and freed. */
static int take_back(struct profile *prof, struct alloc_entry *e, uint32_t cpu, uint64_t time_ns)
{
	struct profile_sample s;
	int err;

	sample_of(e, time_ns, &s);
	s.cpu = cpu;
	s.mem_freed = e->bytes;
	s.mem_freed_objects = e->objects;
	err = profile__add_sample(prof, &s);
	free(e);
	return err;
}

int alloc_live__freed(struct alloc_live *al, struct profile *prof, const void *rec, size_t size,
		      int64_t mono_to_wall_ns)
{
	const struct free_record *fr = rec;
	struct alloc_entry *e;
	uint64_t key;
	int err;

	if (size < sizeof(*fr))
		return -EINVAL;
	e = find(al, fr->hdr.pid, fr->addr, &key);
	if (!e) {
		al->stats.unknown++;
		return 0;
	}
	u64_map__del(&al->map, key);
	al->stats.live = al->map.cnt;
	err = take_back(prof, e, fr->hdr.cpu, fr->hdr.time_ns + (uint64_t)mono_to_wall_ns);
	if (!err)
		al->stats.freed++;
	return err;
}

int alloc_live__process_ended(struct alloc_live *al, struct profile *prof, uint32_t pid,
			      uint64_t time_ns,
			      void (*gone)(void *ctx, uint32_t pid, uint64_t addr), void *ctx)
{
	uint64_t *drop = NULL, key;
	size_t drop_cnt = 0, i = 0, j;
	void *v;
	int err = 0;

	if (!al->map.cnt || !u64_map__del(&al->pids, (uint64_t)pid + 1))
		return 0;
	drop = malloc(al->map.cnt * sizeof(*drop));
	if (!drop)
		return -ENOMEM;
	while (u64_map__next(&al->map, &i, &key, &v))
		if (((struct alloc_entry *)v)->pid == pid)
			drop[drop_cnt++] = key;
	for (j = 0; j < drop_cnt; j++) {
		struct alloc_entry *e = u64_map__del(&al->map, drop[j]);

		gone(ctx, pid, e->addr);
		err = take_back(prof, e, 0, time_ns) ?: err;
		al->stats.ended++;
	}
	free(drop);
	al->stats.live = al->map.cnt;
	return err;
}

/* frame id of from -> frame id of to (0: failed), mapping ids likewise; memo: from's ids. */
static uint32_t carry_frame(const struct profile *from, struct profile *to, uint32_t id,
			    struct u64_map *memo)
{
	const struct profile_frame *f = profile__frame(from, id);
	struct profile_frame nf;
	uintptr_t known = (uintptr_t)u64_map__get(memo, id);

	if (known || !f)
		return (uint32_t)known;
	nf = *f;
	if (f->mapping) {
		const struct profile_mapping *m = profile__mapping(from, f->mapping);

		nf.mapping = m ? profile__add_mapping(to, m) : 0;
		if (!nf.mapping)
			return 0;
	}
	known = profile__add_frame(to, &nf);
	if (known && u64_map__set(memo, id, (void *)known))
		known = 0;
	return (uint32_t)known;
}

int alloc_live__carry(struct alloc_live *al, const struct profile *from, struct profile *to,
		      uint64_t time_ns, bool (*alive)(void *ctx, uint32_t pid),
		      void (*gone)(void *ctx, uint32_t pid, uint64_t addr), void *ctx)
{
	struct u64_map memo = U64_MAP_INIT;
	uint64_t *drop = NULL, key;
	size_t drop_cnt = 0, i = 0, j;
	struct alloc_entry *e;
	void *v;
	int err = 0;

	if (!al->map.cnt)
		return 0;
	drop = malloc(al->map.cnt * sizeof(*drop));
	if (!drop) {
		alloc_live__clear(al);
		return -ENOMEM;
	}
	while (u64_map__next(&al->map, &i, &key, &v)) {
		struct profile_sample s;
		uint32_t k;

		e = v;
		if (!alive(ctx, e->pid)) {
			gone(ctx, e->pid, e->addr);
			al->stats.exited++;
			drop[drop_cnt++] = key;
			continue;
		}
		for (k = 0; k < e->frame_cnt && !err; k++) {
			e->frames[k] = carry_frame(from, to, e->frames[k], &memo);
			if (!e->frames[k])
				err = -ENOMEM;
		}
		sample_of(e, time_ns, &s);
		s.mem_carried = e->bytes;
		s.mem_carried_objects = e->objects;
		err = err ?: profile__add_sample(to, &s);
		if (err) { /* its frames are no profile's now */
			drop[drop_cnt++] = key;
			continue;
		}
		al->stats.carried++;
	}
	for (j = 0; j < drop_cnt; j++)
		free(u64_map__del(&al->map, drop[j]));
	free(drop);
	u64_map__free(&memo);
	al->stats.live = al->map.cnt;
	return err;
}

const struct alloc_live_stats *alloc_live__stats(const struct alloc_live *al)
{
	return &al->stats;
}
