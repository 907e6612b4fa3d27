/* The function table of `stackscope top` (see function_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "profile/profile.h"
#include "top/function_table.h"

struct function_key {
	const char *name, *where;
};

static uint64_t key_hash(const char *name, const char *where)
{
	return top_name__hash(name) ^ (top_name__hash(where) * 0x9e3779b97f4a7c15ULL);
}

static bool key_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct function_table *t = ctx;
	const struct function_key *k = key;

	return !strcmp(t->fns[id - 1].name, k->name) && !strcmp(t->fns[id - 1].where, k->where);
}

long function_table__find(const struct function_table *t, const char *name, const char *where)
{
	struct function_key k = { name, where };
	uint32_t id;
	size_t i;

	if (!where) {
		for (i = 0; i < t->fn_cnt; i++)
			if (!strcmp(t->fns[i].name, name))
				return (long)i;
		return -1;
	}
	if (!t->index.cap)
		return -1;
	id = id_index__find(&t->index, key_hash(name, where), key_eq, t, &k);
	return id ? (long)id - 1 : -1;
}

/* The function called name running in where, added (counts zero) when new; NULL past the cap or on ENOMEM
 * (*err says which: 0 past the cap).
 */
static struct top_function *function_of(struct function_table *t, const char *name,
					const char *where, int *err)
{
	struct function_key k = { name, where };
	uint64_t h = key_hash(name, where);
	uint32_t id = id_index__find(&t->index, h, key_eq, t, &k);
	struct top_function *fn;

	*err = 0;
	if (id)
		return &t->fns[id - 1];
	if (t->fn_cnt >= TOP_FUNCTIONS_MAX)
		return NULL;
	if (id_index__reserve(&t->index) ||
	    array__reserve((void **)&t->fns, &t->fn_cap, t->fn_cnt + 1, sizeof(*t->fns))) {
		*err = -ENOMEM;
		return NULL;
	}
	fn = &t->fns[t->fn_cnt++];
	*fn = (struct top_function){ .name = name, .where = where };
	id_index__add(&t->index, h, (uint32_t)t->fn_cnt);
	return fn;
}

static int count_process(struct function_table *t, const struct profile_agg_sample *s)
{
	struct top_process *pr;
	uintptr_t idx = (uintptr_t)u64_map__get(&t->pids, (uint64_t)s->pid + 1);

	if (idx) {
		t->procs[idx - 1].samples += s->count;
		return 0;
	}
	if (array__reserve((void **)&t->procs, &t->proc_cap, t->proc_cnt + 1, sizeof(*t->procs)))
		return -ENOMEM;
	pr = &t->procs[t->proc_cnt++];
	*pr = (struct top_process){ .pid = s->pid, .comm = s->comm, .samples = s->count };
	if (u64_map__set(&t->pids, (uint64_t)s->pid + 1, (void *)(uintptr_t)t->proc_cnt))
		return -ENOMEM;
	return 0;
}

static int count_sample(struct function_table *t, const struct profile *p,
			const struct profile_agg_sample *s, uint64_t seq)
{
	size_t n = top_stack__names(p, s->stack, t->names, t->frames, TOP_STACK_MAX), i;
	int err;

	t->samples += s->count;
	for (i = 0; i < n; i++) {
		struct top_function *fn =
			function_of(t, t->names[i], top_frame__where(p, t->frames[i]), &err);

		if (!fn) {
			if (err)
				return err;
			if (!i)
				t->dropped += s->count;
			continue;
		}
		if (!i)
			fn->self += s->count;
		if (fn->seen != seq) {
			fn->seen = seq;
			fn->total += s->count;
		}
	}
	return 0;
}

/* Descending by (a1, a2) vs (b1, b2), then by name and place ascending. */
static int by_counts(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2,
		     const struct top_function *x, const struct top_function *y)
{
	if (a1 != b1)
		return a1 < b1 ? 1 : -1;
	if (a2 != b2)
		return a2 < b2 ? 1 : -1;
	return strcmp(x->name, y->name) ?: strcmp(x->where, y->where);
}

static int by_self(const void *a, const void *b)
{
	const struct top_function *x = a, *y = b;

	return by_counts(x->self, y->self, x->total, y->total, x, y);
}

static int by_total(const void *a, const void *b)
{
	const struct top_function *x = a, *y = b;

	return by_counts(x->total, y->total, x->self, y->self, x, y);
}

static int by_samples(const void *a, const void *b)
{
	const struct top_process *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Empties t but keeps its arrays (and the scratch). */
static void reset(struct function_table *t)
{
	id_index__free(&t->index);
	u64_map__free(&t->pids);
	t->fn_cnt = t->proc_cnt = 0;
	t->samples = t->all_samples = t->dropped = 0;
}

int function_table__build(struct function_table *t, const struct top_window *w,
			  const struct top_filter *f, enum top_sort sort)
{
	uint64_t seq = 0;
	size_t slot, i;
	int err = 0;

	reset(t);
	if (!t->names) {
		t->names = calloc(TOP_STACK_MAX, sizeof(*t->names));
		t->frames = calloc(TOP_STACK_MAX, sizeof(*t->frames));
		if (!t->names || !t->frames) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (slot = 0; slot < top_window__slot_cnt(w); slot++) {
		const struct profile *p = top_window__slot(w, slot);

		for (i = 0; i < profile__sample_cnt(p); i++) {
			const struct profile_agg_sample *s = profile__sample(p, i);

			if (s->off_cpu_ns)
				continue;
			t->all_samples += s->count;
			err = count_process(t, s);
			if (err)
				goto out;
			if (!top_filter__match(f, s))
				continue;
			err = count_sample(t, p, s, ++seq);
			if (err)
				goto out;
		}
	}
	/* the index points at positions: it is dropped once they move */
	id_index__free(&t->index);
	if (t->fn_cnt > 1) /* (never qsort(NULL, 0): its pointer must not be NULL) */
		qsort(t->fns, t->fn_cnt, sizeof(*t->fns),
		      sort == TOP_SORT_TOTAL ? by_total : by_self);
	if (t->proc_cnt > 1)
		qsort(t->procs, t->proc_cnt, sizeof(*t->procs), by_samples);
	for (i = 0; i < t->fn_cnt; i++) {
		if (id_index__reserve(&t->index)) {
			err = -ENOMEM;
			goto out;
		}
		id_index__add(&t->index, key_hash(t->fns[i].name, t->fns[i].where),
			      (uint32_t)i + 1);
	}
out:
	if (err)
		reset(t);
	return err;
}

void function_table__free(struct function_table *t)
{
	if (!t)
		return;
	reset(t);
	free(t->fns);
	free(t->procs);
	free(t->names);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}
