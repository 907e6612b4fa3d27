/* The in-memory profile (see profile.h for the contract).
 *
 * Layout: every table is a dense array indexed by id (slot 0 unused), plus an id_index
 * (base/id_index.h) that maps a key's 64-bit hash to its id; growing it never rehashes keys.
 *
 * Invariants:
 *  - strings are interned into an append-only arena: a string's address never changes, and
 *    two interned pointers are equal iff their contents are; keys of the frame, mapping and
 *    sample tables therefore compare strings by pointer.
 *  - frames keep a private copy of their lines (with interned strings) and the interned
 *    display name of their innermost line (or of their address when they have no lines).
 *  - stacks live in one frame-id pool; a stack is an (offset, count) slice of it. Label sets
 *    are kept the same way (a seq_table of interned string ids: key, value, key, value...).
 *  - an aggregated sample keeps at most timestamps_cap events.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/id_index.h"
#include "profile/profile.h"

#define STR_CHUNK_SZ (64 * 1024)
#define LINES_ON_STACK 32

struct str_chunk {
	struct str_chunk *next;
	size_t used;
	size_t cap;
	char data[];
};

struct frame_rec {
	struct profile_frame f;
	uint32_t name_id; /* display name for line_idx 0 */
};

struct seq_rec {
	size_t off; /* into the table's pool */
	uint32_t cnt;
};

/* Interned sequences of u32 (stacks of frame ids, label sets of string ids): ids from 1. */
struct seq_table {
	uint32_t *pool;
	size_t pool_len, pool_cap;
	struct seq_rec *recs; /* [0] unused */
	size_t cnt, cap;
	struct id_index idx;
};

struct sample_rec {
	struct profile_agg_sample s;
	uint32_t event_cap;
};

struct profile {
	struct profile_opts opts;
	uint64_t end_time_ns;
	uint64_t total;

	struct str_chunk *chunks;
	const char **strs; /* [0] unused */
	size_t str_cnt, str_cap;
	struct id_index str_idx;

	struct profile_mapping *mappings; /* [0] unused */
	size_t mapping_cnt, mapping_cap;
	struct id_index mapping_idx;

	struct frame_rec *frames; /* [0] unused */
	size_t frame_cnt, frame_cap;
	struct id_index frame_idx;
	bool frames_final; /* profile__set_frame_lines() was called: no more frames */

	struct seq_table stacks;
	struct seq_table label_sets;

	struct sample_rec *samples; /* 0-based; the index stores idx + 1 */
	size_t sample_cnt, sample_cap;
	struct id_index sample_idx;
};

/* ---- small helpers ---- */

static inline uint64_t hash__mix(uint64_t h, uint64_t v)
{
	/* a 64-bit multiply-xorshift round, good enough for table indexing */
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 31;
	return h;
}

/* ---- strings ---- */

static bool str__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;

	return !strcmp(p->strs[id], key);
}

/* Copies s into the arena; NULL on ENOMEM. */
static char *str__store(struct profile *p, const char *s, size_t len)
{
	struct str_chunk *c = p->chunks;
	char *out;

	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > STR_CHUNK_SZ ? len + 1 : STR_CHUNK_SZ;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = p->chunks;
		p->chunks = c;
	}
	out = c->data + c->used;
	memcpy(out, s, len + 1);
	c->used += len + 1;
	return out;
}

/* Interns s; returns its id (>= 1) or 0 on ENOMEM. */
static uint32_t profile__intern_id(struct profile *p, const char *s)
{
	uint64_t hash = fnv64(s, strlen(s), FNV64_INIT);
	uint32_t id = id_index__find(&p->str_idx, hash, str__eq, p, s);
	char *copy;

	if (id)
		return id;
	if (p->str_cnt + 1 >= UINT32_MAX || id_index__reserve(&p->str_idx) ||
	    array__reserve((void **)&p->strs, &p->str_cap, p->str_cnt + 2, sizeof(*p->strs)))
		return 0;
	copy = str__store(p, s, strlen(s));
	if (!copy)
		return 0;
	id = (uint32_t)++p->str_cnt;
	p->strs[id] = copy;
	id_index__add(&p->str_idx, hash, id);
	return id;
}

/* Interns s (NULL stays NULL); *err is set to -ENOMEM on failure. */
static const char *profile__intern(struct profile *p, const char *s, int *err)
{
	uint32_t id;

	if (!s)
		return NULL;
	id = profile__intern_id(p, s);
	if (!id) {
		*err = -ENOMEM;
		return NULL;
	}
	return p->strs[id];
}

/* ---- lifetime ---- */

static void seq_table__free(struct seq_table *t)
{
	free(t->pool);
	free(t->recs);
	id_index__free(&t->idx);
}

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		p->opts = *opts;
	return p;
}

void profile__free(struct profile *p)
{
	struct str_chunk *c, *next;
	size_t i;

	if (!p)
		return;
	for (c = p->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(p->strs);
	id_index__free(&p->str_idx);
	free(p->mappings);
	id_index__free(&p->mapping_idx);
	for (i = 1; i <= p->frame_cnt; i++)
		free((void *)p->frames[i].f.lines);
	free(p->frames);
	id_index__free(&p->frame_idx);
	seq_table__free(&p->stacks);
	seq_table__free(&p->label_sets);
	for (i = 0; i < p->sample_cnt; i++)
		free((void *)p->samples[i].s.events);
	free(p->samples);
	id_index__free(&p->sample_idx);
	free(p);
}

/* ---- mappings ---- */

static uint64_t mapping__hash(const struct profile_mapping *m)
{
	uint64_t h = hash__mix(0, (uintptr_t)m->path);

	h = hash__mix(h, (uintptr_t)m->build_id);
	h = hash__mix(h, (uintptr_t)m->file_hash);
	h = hash__mix(h, (uintptr_t)m->go_build_id);
	h = hash__mix(h, m->start);
	h = hash__mix(h, m->limit);
	h = hash__mix(h, m->file_offset);
	return h;
}

static bool mapping__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_mapping *a = &p->mappings[id], *b = key;

	return a->path == b->path && a->build_id == b->build_id && a->file_hash == b->file_hash &&
	       a->go_build_id == b->go_build_id && a->start == b->start && a->limit == b->limit &&
	       a->file_offset == b->file_offset;
}

uint32_t profile__add_mapping(struct profile *p, const struct profile_mapping *m)
{
	struct profile_mapping key = *m;
	uint64_t hash;
	uint32_t id;
	int err = 0;

	key.path = profile__intern(p, m->path ? m->path : "", &err);
	key.build_id = profile__intern(p, m->build_id, &err);
	key.file_hash = profile__intern(p, m->file_hash, &err);
	key.go_build_id = profile__intern(p, m->go_build_id, &err);
	if (err)
		return 0;
	hash = mapping__hash(&key);
	id = id_index__find(&p->mapping_idx, hash, mapping__eq, p, &key);
	if (id)
		return id;
	if (p->mapping_cnt + 1 >= UINT32_MAX || id_index__reserve(&p->mapping_idx) ||
	    array__reserve((void **)&p->mappings, &p->mapping_cap, p->mapping_cnt + 2,
			   sizeof(*p->mappings)))
		return 0;
	id = (uint32_t)++p->mapping_cnt;
	p->mappings[id] = key;
	id_index__add(&p->mapping_idx, hash, id);
	return id;
}

/* ---- frames ---- */

static uint64_t frame__hash(const struct profile_frame *f)
{
	uint64_t h = hash__mix(f->kind, f->mapping);
	uint32_t i;

	h = hash__mix(h, f->address);
	h = hash__mix(h, f->call_site);
	h = hash__mix(h, (uintptr_t)f->runtime);
	h = hash__mix(h, f->line_cnt);
	for (i = 0; i < f->line_cnt; i++) {
		h = hash__mix(h, (uintptr_t)f->lines[i].function);
		h = hash__mix(h, (uintptr_t)f->lines[i].file);
		h = hash__mix(h, f->lines[i].line);
		h = hash__mix(h, f->lines[i].column);
	}
	return h;
}

static bool frame__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_frame *a = &p->frames[id].f, *b = key;
	uint32_t i;

	if (a->kind != b->kind || a->mapping != b->mapping || a->address != b->address ||
	    a->call_site != b->call_site || a->runtime != b->runtime || a->line_cnt != b->line_cnt)
		return false;
	for (i = 0; i < a->line_cnt; i++) {
		if (a->lines[i].function != b->lines[i].function ||
		    a->lines[i].file != b->lines[i].file || a->lines[i].line != b->lines[i].line ||
		    a->lines[i].column != b->lines[i].column)
			return false;
	}
	return true;
}

int profile__set_frame_lines(struct profile *p, uint32_t frame_id, const struct profile_line *lines,
			     uint32_t line_cnt)
{
	struct profile_line *copy;
	uint32_t i, name_id;
	int err = 0;

	if (!frame_id || frame_id > p->frame_cnt || !line_cnt || !lines)
		return -EINVAL;
	copy = calloc(line_cnt, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	for (i = 0; i < line_cnt; i++) {
		copy[i].function = profile__intern(
			p, lines[i].function ? lines[i].function : "[unknown]", &err);
		copy[i].file = profile__intern(p, lines[i].file, &err);
		copy[i].line = lines[i].line;
		copy[i].column = lines[i].column;
	}
	name_id = err ? 0 : profile__intern_id(p, copy[0].function);
	if (!name_id) {
		free(copy);
		return -ENOMEM;
	}
	/* The frame index hashed the old lines: freeze it (documented in the header). */
	p->frames_final = true;
	free((void *)p->frames[frame_id].f.lines);
	p->frames[frame_id].f.lines = copy;
	p->frames[frame_id].f.line_cnt = line_cnt;
	p->frames[frame_id].name_id = name_id;
	return 0;
}

/* Interns the display name of a frame without lines; its id or 0 on ENOMEM. */
static uint32_t frame__address_name(struct profile *p, const struct profile_frame *f)
{
	char buf[320];
	const char *base = "[unknown]";

	switch (f->kind) {
	case FRAME_KERNEL:
		snprintf(buf, sizeof(buf), "[kernel]+0x%" PRIx64, f->address);
		break;
	case FRAME_NATIVE:
		if (f->mapping && f->mapping <= p->mapping_cnt) {
			const char *path = p->mappings[f->mapping].path;
			const char *slash = strrchr(path, '/');

			base = slash ? slash + 1 : path;
			if (!*base)
				base = "[unknown]";
		}
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, f->address);
		break;
	default:
		snprintf(buf, sizeof(buf), "[unknown error]");
		break;
	}
	return profile__intern_id(p, buf);
}

uint32_t profile__add_frame(struct profile *p, const struct profile_frame *f)
{
	struct profile_line stack_lines[LINES_ON_STACK], *lines = stack_lines;
	struct profile_frame key = *f;
	struct profile_line *copy = NULL;
	uint64_t hash;
	uint32_t id = 0, name_id, i;
	int err = 0;

	if (f->mapping > p->mapping_cnt || (f->line_cnt && !f->lines)) {
		errno = EINVAL;
		return 0;
	}
	if (p->frames_final) {
		errno = EBUSY;
		return 0;
	}
	if (f->line_cnt > LINES_ON_STACK) {
		lines = calloc(f->line_cnt, sizeof(*lines));
		if (!lines)
			return 0;
	}
	for (i = 0; i < f->line_cnt; i++) {
		lines[i].function = profile__intern(
			p, f->lines[i].function ? f->lines[i].function : "[unknown]", &err);
		lines[i].file = profile__intern(p, f->lines[i].file, &err);
		lines[i].line = f->lines[i].line;
		lines[i].column = f->lines[i].column;
	}
	key.runtime = f->runtime ? profile__intern(p, f->runtime, &err) : NULL;
	if (err)
		goto cleanup;
	key.lines = f->line_cnt ? lines : NULL;
	hash = frame__hash(&key);
	id = id_index__find(&p->frame_idx, hash, frame__eq, p, &key);
	if (id)
		goto cleanup;

	if (f->line_cnt) {
		name_id = profile__intern_id(p, lines[0].function);
		copy = malloc(f->line_cnt * sizeof(*copy));
		if (!copy)
			goto cleanup;
		memcpy(copy, lines, f->line_cnt * sizeof(*copy));
	} else {
		name_id = frame__address_name(p, &key);
	}
	if (!name_id || p->frame_cnt + 1 >= UINT32_MAX || id_index__reserve(&p->frame_idx) ||
	    array__reserve((void **)&p->frames, &p->frame_cap, p->frame_cnt + 2,
			   sizeof(*p->frames)))
		goto cleanup;
	key.lines = copy;
	id = (uint32_t)++p->frame_cnt;
	p->frames[id].f = key;
	p->frames[id].name_id = name_id;
	copy = NULL;
	id_index__add(&p->frame_idx, hash, id);
cleanup:
	free(copy);
	if (lines != stack_lines)
		free(lines);
	if (!id)
		errno = ENOMEM;
	return id;
}

/* ---- stacks and label sets ---- */

struct seq_key {
	const uint32_t *v;
	uint32_t cnt;
};

static bool seq__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct seq_table *t = ctx;
	const struct seq_rec *a = &t->recs[id];
	const struct seq_key *b = key;

	/* an empty sequence compares nothing (the pool may be NULL yet: memcmp must not see it) */
	return a->cnt == b->cnt &&
	       (!b->cnt || !memcmp(t->pool + a->off, b->v, b->cnt * sizeof(uint32_t)));
}

/* Interns a sequence; returns its id or 0 on ENOMEM. */
static uint32_t seq_table__intern(struct seq_table *t, const uint32_t *v, uint32_t cnt)
{
	struct seq_key key = { v, cnt };
	uint64_t h = hash__mix(0, cnt);
	uint64_t hash;
	uint32_t id, i;

	for (i = 0; i < cnt; i++)
		h = hash__mix(h, v[i]);
	hash = h;
	id = id_index__find(&t->idx, hash, seq__eq, t, &key);
	if (id)
		return id;
	if (t->cnt + 1 >= UINT32_MAX || t->pool_len + cnt < t->pool_len ||
	    id_index__reserve(&t->idx) ||
	    array__reserve((void **)&t->recs, &t->cap, t->cnt + 2, sizeof(*t->recs)) ||
	    array__reserve((void **)&t->pool, &t->pool_cap, t->pool_len + cnt, sizeof(*t->pool)))
		return 0;
	if (cnt)
		memcpy(t->pool + t->pool_len, v, cnt * sizeof(uint32_t));
	id = (uint32_t)++t->cnt;
	t->recs[id].off = t->pool_len;
	t->recs[id].cnt = cnt;
	t->pool_len += cnt;
	id_index__add(&t->idx, hash, id);
	return id;
}

static const uint32_t *seq_table__get(const struct seq_table *t, uint32_t id, uint32_t *cnt)
{
	if (!id || id > t->cnt) {
		*cnt = 0;
		return NULL;
	}
	*cnt = t->recs[id].cnt;
	/* an empty sequence (a sample with no location) may have no pool yet */
	return t->recs[id].cnt ? t->pool + t->recs[id].off : NULL;
}

/* Interns a sample's labels (key, value string ids in order): the label set id, 0 for none
 * (and on failure, with *err set: -EINVAL past PROFILE_MAX_LABELS, -ENOMEM).
 */
static uint32_t profile__intern_labels(struct profile *p, const struct profile_label *labels,
				       uint32_t cnt, int *err)
{
	uint32_t ids[2 * PROFILE_MAX_LABELS], i, id;

	if (!cnt)
		return 0;
	if (cnt > PROFILE_MAX_LABELS) {
		*err = -EINVAL;
		return 0;
	}
	for (i = 0; i < 2 * cnt; i++) {
		const char *str = i & 1 ? labels[i / 2].value : labels[i / 2].key;

		ids[i] = profile__intern_id(p, str ? str : "");
		if (!ids[i]) {
			*err = -ENOMEM;
			return 0;
		}
	}
	id = seq_table__intern(&p->label_sets, ids, 2 * cnt);
	if (!id)
		*err = -ENOMEM;
	return id;
}

/* ---- samples ---- */

static uint64_t sample__hash(const struct profile_agg_sample *s)
{
	uint64_t h = hash__mix(s->stack, ((uint64_t)s->pid << 32) | s->tid);

	h = hash__mix(h, (uintptr_t)s->comm);
	h = hash__mix(h, (uintptr_t)s->thread_comm);
	h = hash__mix(h, s->labels);
	return h;
}

static bool sample__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct profile_agg_sample *a = &p->samples[id - 1].s, *b = key;

	return a->stack == b->stack && a->pid == b->pid && a->tid == b->tid && a->comm == b->comm &&
	       a->thread_comm == b->thread_comm && a->labels == b->labels;
}

static int sample__add_event(struct profile *p, struct sample_rec *r,
			     const struct profile_sample *s)
{
	size_t cap = r->event_cap, max = p->opts.timestamps_cap;
	struct profile_event *ev;

	if (r->s.event_cnt >= p->opts.timestamps_cap)
		return 0;
	if (max > UINT32_MAX)
		max = UINT32_MAX;
	/* from one event: most samples keep few */
	if (array__reserve_bounded((void **)&r->s.events, &cap, (size_t)r->s.event_cnt + 1,
				   sizeof(*ev), 1, max))
		return -ENOMEM;
	r->event_cap = (uint32_t)cap;
	ev = (struct profile_event *)&r->s.events[r->s.event_cnt++];
	ev->time_ns = s->time_ns;
	ev->count = s->count;
	ev->cpu = s->cpu;
	ev->off_cpu_ns = s->off_cpu_ns;
	ev->mem_value = s->mem_value;
	return 0;
}

int profile__add_sample(struct profile *p, const struct profile_sample *s)
{
	struct profile_agg_sample key = { 0 };
	struct sample_rec *r;
	uint64_t hash;
	uint32_t idx, i;
	int err = 0;

	if (s->frame_cnt && !s->frames)
		return -EINVAL;
	for (i = 0; i < s->frame_cnt; i++) {
		if (!s->frames[i] || s->frames[i] > p->frame_cnt)
			return -EINVAL;
	}
	key.pid = s->pid;
	key.tid = s->tid;
	key.comm = profile__intern(p, s->comm ? s->comm : "", &err);
	key.thread_comm = profile__intern(p, s->thread_comm ? s->thread_comm : "", &err);
	key.labels = profile__intern_labels(p, s->labels, s->label_cnt, &err);
	if (err)
		return err;
	key.stack = seq_table__intern(&p->stacks, s->frames, s->frame_cnt);
	if (!key.stack)
		return -ENOMEM;
	hash = sample__hash(&key);
	idx = id_index__find(&p->sample_idx, hash, sample__eq, p, &key);
	if (!idx) {
		if (p->sample_cnt + 1 >= UINT32_MAX || id_index__reserve(&p->sample_idx) ||
		    array__reserve((void **)&p->samples, &p->sample_cap, p->sample_cnt + 1,
				   sizeof(*p->samples)))
			return -ENOMEM;
		r = &p->samples[p->sample_cnt++];
		memset(r, 0, sizeof(*r));
		r->s = key;
		r->s.mem_kind = s->mem_kind;
		idx = (uint32_t)p->sample_cnt;
		id_index__add(&p->sample_idx, hash, idx);
	}
	r = &p->samples[idx - 1];
	err = sample__add_event(p, r, s);
	if (err)
		return err;
	r->s.count = profile__count_add(r->s.count, s->count);
	r->s.off_cpu_ns = profile__count_add(r->s.off_cpu_ns, s->off_cpu_ns);
	r->s.mem_value = profile__count_add(r->s.mem_value, s->mem_value);
	r->s.mem_objects = profile__count_add(r->s.mem_objects, s->mem_objects);
	r->s.mem_freed = profile__count_add(r->s.mem_freed, s->mem_freed);
	r->s.mem_freed_objects = profile__count_add(r->s.mem_freed_objects, s->mem_freed_objects);
	r->s.mem_carried = profile__count_add(r->s.mem_carried, s->mem_carried);
	r->s.mem_carried_objects =
		profile__count_add(r->s.mem_carried_objects, s->mem_carried_objects);
	p->total = profile__count_add(p->total, s->count);
	return 0;
}

bool profile__has_off_cpu(const struct profile *p)
{
	return p->opts.off_cpu;
}

bool profile__has_cpu(const struct profile *p)
{
	return !p->opts.no_cpu;
}

bool profile__has_mem_growth(const struct profile *p)
{
	return p->opts.mem_growth;
}

uint64_t profile__sample_faults(const struct profile_agg_sample *s)
{
	return s->mem_kind == PROFILE_MEM_FAULTS ? s->mem_value : 0;
}

uint64_t profile__sample_fault_bytes(const struct profile_agg_sample *s)
{
	return profile__count_mul(profile__sample_faults(s), PROFILE_PAGE_BYTES);
}

uint64_t profile__sample_mapped_bytes(const struct profile_agg_sample *s)
{
	return s->mem_kind == PROFILE_MEM_MAPPED ? s->mem_value : 0;
}

bool profile__has_mem_alloc(const struct profile *p)
{
	return p->opts.mem_alloc;
}

void profile__sample_alloc(const struct profile_agg_sample *s, uint64_t out[4])
{
	bool alloc = s->mem_kind == PROFILE_MEM_ALLOC;
	uint64_t objects = profile__count_add(s->mem_objects, s->mem_carried_objects);
	uint64_t bytes = profile__count_add(s->mem_value, s->mem_carried);

	out[0] = alloc ? s->mem_objects : 0;
	out[1] = alloc ? s->mem_value : 0;
	out[2] = alloc && objects > s->mem_freed_objects ? objects - s->mem_freed_objects : 0;
	out[3] = alloc && bytes > s->mem_freed ? bytes - s->mem_freed : 0;
}

uint64_t profile__sample_ns(const struct profile *p, const struct profile_agg_sample *s)
{
	if (s->mem_kind) /* a memory-growth sample stands for no time */
		return 0;
	return s->off_cpu_ns ? s->off_cpu_ns : profile__count_mul(s->count, p->opts.period_ns);
}

void profile__set_end_time(struct profile *p, uint64_t end_time_ns)
{
	p->end_time_ns = end_time_ns;
}

/* ---- copies ---- */

static size_t id_index__sz(const struct id_index *t)
{
	return t->cap * (sizeof(*t->hashes) + sizeof(*t->ids));
}

static size_t seq_table__sz(const struct seq_table *t)
{
	return t->pool_cap * sizeof(*t->pool) + t->cap * sizeof(*t->recs) + id_index__sz(&t->idx);
}

size_t profile__mem_sz(const struct profile *p)
{
	const struct str_chunk *c;
	size_t sz = sizeof(*p), i;

	for (c = p->chunks; c; c = c->next)
		sz += sizeof(*c) + c->cap;
	sz += p->str_cap * sizeof(*p->strs) + id_index__sz(&p->str_idx);
	sz += p->mapping_cap * sizeof(*p->mappings) + id_index__sz(&p->mapping_idx);
	sz += p->frame_cap * sizeof(*p->frames) + id_index__sz(&p->frame_idx);
	for (i = 1; i <= p->frame_cnt; i++)
		sz += p->frames[i].f.line_cnt * sizeof(struct profile_line);
	sz += seq_table__sz(&p->stacks) + seq_table__sz(&p->label_sets);
	sz += p->sample_cap * sizeof(*p->samples) + id_index__sz(&p->sample_idx);
	for (i = 0; i < p->sample_cnt; i++)
		sz += p->samples[i].event_cap * sizeof(struct profile_event);
	return sz;
}

/* Adds src's aggregated sample a to p, its frames renamed by frame_ids: each kept event as
 * it was added, then what they do not cover (events past timestamps_cap). 0 or -errno.
 */
static int profile__copy_sample(struct profile *p, const struct profile *src,
				const struct profile_agg_sample *a, const uint32_t *frame_ids,
				uint32_t *frames)
{
	struct profile_label labels[PROFILE_MAX_LABELS];
	struct profile_sample ps = { .frames = frames,
				     .pid = a->pid,
				     .tid = a->tid,
				     .comm = a->comm,
				     .thread_comm = a->thread_comm,
				     .labels = labels,
				     .mem_kind = a->mem_kind };
	const uint32_t *stack = seq_table__get(&src->stacks, a->stack, &ps.frame_cnt);
	uint64_t count = 0, off_cpu = 0, mem = 0;
	uint32_t i;
	int err = 0;

	for (i = 0; i < ps.frame_cnt; i++)
		frames[i] = frame_ids[stack[i]];
	while (ps.label_cnt < PROFILE_MAX_LABELS &&
	       profile__label(src, a->labels, ps.label_cnt, &labels[ps.label_cnt]))
		ps.label_cnt++;
	for (i = 0; i < a->event_cnt && !err; i++) {
		ps.time_ns = a->events[i].time_ns;
		ps.cpu = a->events[i].cpu;
		ps.count = a->events[i].count;
		ps.off_cpu_ns = a->events[i].off_cpu_ns;
		ps.mem_value = a->events[i].mem_value;
		mem = profile__count_add(mem, ps.mem_value);
		count = profile__count_add(count, ps.count);
		off_cpu = profile__count_add(off_cpu, ps.off_cpu_ns);
		err = profile__add_sample(p, &ps);
	}
	if (err || (a->event_cnt && count >= a->count && off_cpu >= a->off_cpu_ns &&
		    mem >= a->mem_value && !a->mem_objects && !a->mem_freed &&
		    !a->mem_freed_objects && !a->mem_carried && !a->mem_carried_objects))
		return err;
	ps.time_ns = 0;
	ps.cpu = 0;
	ps.count = a->count - (count < a->count ? count : a->count);
	ps.off_cpu_ns = a->off_cpu_ns - (off_cpu < a->off_cpu_ns ? off_cpu : a->off_cpu_ns);
	ps.mem_value = a->mem_value - (mem < a->mem_value ? mem : a->mem_value);
	ps.mem_objects = a->mem_objects; /* not kept per event: all here */
	ps.mem_freed = a->mem_freed;
	ps.mem_freed_objects = a->mem_freed_objects;
	ps.mem_carried = a->mem_carried;
	ps.mem_carried_objects = a->mem_carried_objects;
	return profile__add_sample(p, &ps);
}

struct profile *profile__copy(const struct profile *src)
{
	struct profile *p = profile__new(&src->opts);
	uint32_t *mapping_ids = NULL, *frame_ids = NULL, *frames = NULL, longest = 0;
	size_t i;
	int err = 0;

	if (!p)
		return NULL;
	p->end_time_ns = src->end_time_ns;
	for (i = 1; i <= src->stacks.cnt; i++)
		if (src->stacks.recs[i].cnt > longest)
			longest = src->stacks.recs[i].cnt;
	mapping_ids = calloc(src->mapping_cnt + 1, sizeof(*mapping_ids));
	frame_ids = calloc(src->frame_cnt + 1, sizeof(*frame_ids));
	frames = calloc((size_t)longest + 1, sizeof(*frames));
	if (!mapping_ids || !frame_ids || !frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 1; i <= src->mapping_cnt && !err; i++)
		if (!(mapping_ids[i] = profile__add_mapping(p, &src->mappings[i])))
			err = -ENOMEM;
	for (i = 1; i <= src->frame_cnt && !err; i++) {
		struct profile_frame f = src->frames[i].f;

		f.mapping = f.mapping ? mapping_ids[f.mapping] : 0;
		if (!(frame_ids[i] = profile__add_frame(p, &f)))
			err = -ENOMEM;
	}
	for (i = 0; i < src->sample_cnt && !err; i++)
		err = profile__copy_sample(p, src, &src->samples[i].s, frame_ids, frames);
cleanup:
	free(mapping_ids);
	free(frame_ids);
	free(frames);
	if (err) {
		profile__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

/* ---- read access ---- */

size_t profile__string_cnt(const struct profile *p)
{
	return p->str_cnt;
}

const char *profile__string(const struct profile *p, uint32_t id)
{
	return id && id <= p->str_cnt ? p->strs[id] : NULL;
}

size_t profile__mapping_cnt(const struct profile *p)
{
	return p->mapping_cnt;
}

const struct profile_mapping *profile__mapping(const struct profile *p, uint32_t id)
{
	return id && id <= p->mapping_cnt ? &p->mappings[id] : NULL;
}

size_t profile__frame_cnt(const struct profile *p)
{
	return p->frame_cnt;
}

const struct profile_frame *profile__frame(const struct profile *p, uint32_t id)
{
	return id && id <= p->frame_cnt ? &p->frames[id].f : NULL;
}

size_t profile__stack_cnt(const struct profile *p)
{
	return p->stacks.cnt;
}

const uint32_t *profile__stack(const struct profile *p, uint32_t id, uint32_t *frame_cnt)
{
	return seq_table__get(&p->stacks, id, frame_cnt);
}

uint32_t profile__label_cnt(const struct profile *p, uint32_t id)
{
	uint32_t cnt;

	seq_table__get(&p->label_sets, id, &cnt);
	return cnt / 2;
}

bool profile__label(const struct profile *p, uint32_t id, uint32_t i, struct profile_label *out)
{
	uint32_t cnt;
	const uint32_t *ids = seq_table__get(&p->label_sets, id, &cnt);

	if (!ids || i >= cnt / 2)
		return false;
	out->key = p->strs[ids[2 * i]];
	out->value = p->strs[ids[2 * i + 1]];
	return true;
}

size_t profile__sample_cnt(const struct profile *p)
{
	return p->sample_cnt;
}

const struct profile_agg_sample *profile__sample(const struct profile *p, size_t idx)
{
	return idx < p->sample_cnt ? &p->samples[idx].s : NULL;
}

uint64_t profile__period_ns(const struct profile *p)
{
	return p->opts.period_ns;
}

uint64_t profile__start_time_ns(const struct profile *p)
{
	return p->opts.start_time_ns;
}

uint64_t profile__end_time_ns(const struct profile *p)
{
	return p->end_time_ns;
}

uint64_t profile__total_samples(const struct profile *p)
{
	return p->total;
}

static int u32__cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

size_t profile__process_cnt(const struct profile *p)
{
	uint32_t *pids;
	size_t i, cnt = 0;

	if (!p->sample_cnt)
		return 0;
	pids = malloc(p->sample_cnt * sizeof(*pids));
	if (!pids)
		return 0;
	for (i = 0; i < p->sample_cnt; i++)
		pids[i] = p->samples[i].s.pid;
	qsort(pids, p->sample_cnt, sizeof(*pids), u32__cmp);
	for (i = 0; i < p->sample_cnt; i++) {
		if (!i || pids[i] != pids[i - 1])
			cnt++;
	}
	free(pids);
	return cnt;
}

const char *profile__frame_name(const struct profile *p, uint32_t frame_id, size_t line_idx)
{
	const struct frame_rec *r;

	if (!frame_id || frame_id > p->frame_cnt)
		return NULL;
	r = &p->frames[frame_id];
	if (!r->f.line_cnt)
		return line_idx ? NULL : p->strs[r->name_id];
	return line_idx < r->f.line_cnt ? r->f.lines[line_idx].function : NULL;
}

static int top_entry__cmp(const void *a, const void *b)
{
	const struct profile_top_entry *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return strcmp(x->name, y->name);
}

size_t profile__top_self(const struct profile *p, struct profile_top_entry *out, size_t n)
{
	struct profile_top_entry *all = NULL;
	uint64_t *self;
	size_t i, cnt = 0;

	self = calloc(p->str_cnt + 1, sizeof(*self));
	if (!self)
		return 0;
	for (i = 0; i < p->sample_cnt; i++) {
		const struct seq_rec *st = &p->stacks.recs[p->samples[i].s.stack];
		uint64_t *sum;

		if (!st->cnt)
			continue;
		sum = &self[p->frames[p->stacks.pool[st->off]].name_id];
		*sum = profile__count_add(*sum, p->samples[i].s.count);
	}
	for (i = 1; i <= p->str_cnt; i++)
		cnt += self[i] != 0;
	all = malloc((cnt ? cnt : 1) * sizeof(*all));
	if (!all) {
		cnt = 0;
		goto cleanup;
	}
	cnt = 0;
	for (i = 1; i <= p->str_cnt; i++) {
		if (self[i]) {
			all[cnt].name = p->strs[i];
			all[cnt].self = self[i];
			cnt++;
		}
	}
	qsort(all, cnt, sizeof(*all), top_entry__cmp);
	if (cnt > n)
		cnt = n;
	if (cnt)
		memcpy(out, all, cnt * sizeof(*out));
cleanup:
	free(all);
	free(self);
	return cnt;
}
