/* The flamegraph's call tree: see flame_tree.h.
 *
 * Nodes live in one array (index 0 is the root); children are a singly linked list per
 * parent, found through one open-addressing index keyed by (parent, name, type). Names and
 * types are interned in tables of their own (string -> index), so nodes are small. While a
 * profile is added, its names (interned by the profile: one pointer per distinct string) map
 * to their index by pointer, so a name is hashed once per profile, not once per frame of
 * every sample.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/id_index.h"
#include "base/u64_map.h"
#include "profile/profile.h"
#include "serve/flame_tree.h"
#include "serve/json_out.h"

#define TYPE_MAX 64 /* frame types told apart; more share the last one */

struct flame_node {
	uint32_t name, type;
	uint32_t parent, first_child, next_sibling;
	uint64_t total[2], self[2];
};

/* Interned strings: index -> copy, and a hash index over them. */
struct name_table {
	char **names;
	size_t cnt, cap;
	struct id_index idx; /* id: index + 1 */
};

struct flame_tree {
	struct flame_node *nodes;
	size_t cnt, cap;
	size_t max_nodes;
	struct id_index children; /* id: node index + 1; hashed by (parent, name, type) */
	struct name_table names, types;
	uint64_t type_samples[TYPE_MAX];
};

static void name_table__free(struct name_table *nt)
{
	size_t i;

	for (i = 0; i < nt->cnt; i++)
		free(nt->names[i]);
	free(nt->names);
	id_index__free(&nt->idx);
}

/* Index of s, added if new; -ENOMEM. */
static int64_t name_table__intern(struct name_table *nt, const char *s)
{
	struct id_index *ix = &nt->idx;
	uint64_t h = fnv64(s, strlen(s), FNV64_INIT);
	size_t k;

	if (id_index__reserve(ix))
		return -ENOMEM;
	for (k = id_index__first(ix, h); ix->ids[k]; k = id_index__next(ix, k))
		if (ix->hashes[k] == h && !strcmp(nt->names[ix->ids[k] - 1], s))
			return ix->ids[k] - 1;
	if (array__reserve_bounded((void **)&nt->names, &nt->cap, nt->cnt + 1, sizeof(*nt->names),
				   256, SIZE_MAX / 2))
		return -ENOMEM;
	nt->names[nt->cnt] = strdup(s);
	if (!nt->names[nt->cnt])
		return -ENOMEM;
	id_index__set(ix, k, h, (uint32_t)nt->cnt + 1);
	return (int64_t)nt->cnt++;
}

struct flame_tree *flame_tree__new(void)
{
	struct flame_tree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = 1024;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes || name_table__intern(&t->names, "all") < 0 ||
	    name_table__intern(&t->types, "root") < 0) {
		flame_tree__free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->cnt = 1;
	t->max_nodes = FLAME_TREE_MAX_NODES;
	return t;
}

void flame_tree__set_max_nodes(struct flame_tree *t, size_t max_nodes)
{
	if (max_nodes < t->max_nodes)
		t->max_nodes = max_nodes;
}

void flame_tree__free(struct flame_tree *t)
{
	if (!t)
		return;
	free(t->nodes);
	id_index__free(&t->children);
	name_table__free(&t->names);
	name_table__free(&t->types);
	free(t);
}

static uint64_t child_hash(uint32_t parent, uint32_t name, uint32_t type)
{
	return u64_hash(((uint64_t)parent << 32 | name) ^ ((uint64_t)type << 56));
}

/* The child (name, type) of parent, made if new; -ENOMEM, -E2BIG. */
static int64_t child_of(struct flame_tree *t, uint32_t parent, uint32_t name, uint32_t type)
{
	struct id_index *ix = &t->children;
	uint64_t h = child_hash(parent, name, type);
	struct flame_node *n;
	size_t k;

	if (id_index__reserve(ix))
		return -ENOMEM;
	for (k = id_index__first(ix, h); ix->ids[k]; k = id_index__next(ix, k)) {
		n = &t->nodes[ix->ids[k] - 1];
		if (n->parent == parent && n->name == name && n->type == type)
			return ix->ids[k] - 1;
	}
	if (t->cnt >= t->max_nodes)
		return -E2BIG;
	if (array__reserve((void **)&t->nodes, &t->cap, t->cnt + 1, sizeof(*t->nodes)))
		return -ENOMEM;
	n = &t->nodes[t->cnt];
	*n = (struct flame_node){ .name = name, .type = type, .parent = parent };
	n->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = (uint32_t)t->cnt;
	id_index__set(ix, k, h, (uint32_t)t->cnt + 1);
	return (int64_t)t->cnt++;
}

static const char *frame_type(const struct profile_frame *f)
{
	switch (f->kind) {
	case FRAME_KERNEL:
		return "kernel";
	case FRAME_NATIVE:
		return f->runtime ? f->runtime : "native";
	case FRAME_RUNTIME:
		return f->runtime ? f->runtime : "runtime";
	default:
		return "error";
	}
}

/* Type index of frame, TYPE_MAX - 1 past the table's bound; -ENOMEM. */
static int64_t type_of(struct flame_tree *t, const struct profile_frame *f)
{
	int64_t ty = name_table__intern(&t->types, frame_type(f));

	return ty >= TYPE_MAX ? TYPE_MAX - 1 : ty;
}

static bool has_type(const struct profile *p, const uint32_t *frames, uint32_t cnt,
		     const char *type)
{
	uint32_t i;

	for (i = 0; i < cnt; i++) {
		const struct profile_frame *f = profile__frame(p, frames[i]);

		if (f && !strcmp(frame_type(f), type))
			return true;
	}
	return false;
}

/* The name table index of the profile's interned name (NULL: "[unknown]"), through the
 * pointer-keyed memo of this profile's names.
 */
static int64_t name_of(struct flame_tree *t, struct u64_map *memo, const char *name)
{
	uintptr_t idx;
	int64_t ni;

	if (!name)
		return name_table__intern(&t->names, "[unknown]");
	idx = (uintptr_t)u64_map__get(memo, (uintptr_t)name);
	if (idx)
		return (int64_t)idx - 1;
	ni = name_table__intern(&t->names, name);
	if (ni >= 0 && u64_map__set(memo, (uintptr_t)name, (void *)(uintptr_t)(ni + 1)))
		return -ENOMEM;
	return ni;
}

static int add_sample(struct flame_tree *t, const struct profile *p, unsigned slot,
		      const struct profile_agg_sample *s, struct u64_map *memo)
{
	uint32_t frame_cnt, i, node = 0, depth = 0;
	const uint32_t *frames = profile__stack(p, s->stack, &frame_cnt);
	uint64_t seen_types = 0;

	t->nodes[0].total[slot] += s->count;
	for (i = frame_cnt; i-- > 0 && depth < FLAME_TREE_MAX_DEPTH;) {
		const struct profile_frame *f = profile__frame(p, frames[i]);
		uint32_t l, lines;
		int64_t ty;

		if (!f)
			continue;
		ty = type_of(t, f);
		if (ty < 0)
			return (int)ty;
		seen_types |= 1ULL << ty;
		lines = f->line_cnt ? f->line_cnt : 1;
		for (l = lines; l-- > 0;) {
			const char *name = profile__frame_name(p, frames[i], l);
			int64_t ni, ci;

			if (++depth == FLAME_TREE_MAX_DEPTH) { /* the rest in one node */
				name = "[deeper frames cut]";
				ty = name_table__intern(&t->types, "error");
				if (ty < 0)
					return (int)ty;
				ty = ty >= TYPE_MAX ? TYPE_MAX - 1 : ty;
			}
			ni = name_of(t, memo, name);
			if (ni < 0)
				return (int)ni;
			ci = child_of(t, node, (uint32_t)ni, (uint32_t)ty);
			if (ci < 0)
				return (int)ci;
			node = (uint32_t)ci;
			t->nodes[node].total[slot] += s->count;
			if (depth == FLAME_TREE_MAX_DEPTH)
				break;
		}
	}
	t->nodes[node].self[slot] += s->count;
	if (slot == 0)
		for (i = 0; i < TYPE_MAX; i++)
			if (seen_types & (1ULL << i))
				t->type_samples[i] += s->count;
	return 0;
}

int flame_tree__add(struct flame_tree *t, const struct profile *p, unsigned slot,
		    const char *only_type)
{
	struct u64_map memo = U64_MAP_INIT;
	size_t i, n = profile__sample_cnt(p);
	int err = 0;

	if (slot > 1)
		return -EINVAL;
	for (i = 0; i < n && !err; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		uint32_t frame_cnt;
		const uint32_t *frames = profile__stack(p, s->stack, &frame_cnt);

		if (s->off_cpu_ns)
			continue; /* off-CPU switches are not CPU samples */
		if (only_type && !has_type(p, frames, frame_cnt, only_type))
			continue;
		err = add_sample(t, p, slot, s, &memo);
	}
	u64_map__free(&memo);
	return err;
}

uint64_t flame_tree__total(const struct flame_tree *t, unsigned slot)
{
	return slot < 2 ? t->nodes[0].total[slot] : 0;
}

static void names_json(const struct name_table *nt, struct json_out *j)
{
	size_t i;

	json_out__raw(j, "[");
	for (i = 0; i < nt->cnt; i++) {
		if (i)
			json_out__raw(j, ",");
		json_out__str(j, nt->names[i]);
	}
	json_out__raw(j, "]");
}

static const struct flame_tree *sort_tree; /* qsort has no context; the server is one thread */

static int by_name(const void *a, const void *b)
{
	const struct flame_node *x = &sort_tree->nodes[*(const uint32_t *)a];
	const struct flame_node *y = &sort_tree->nodes[*(const uint32_t *)b];
	int c = strcmp(sort_tree->names.names[x->name], sort_tree->names.names[y->name]);

	return c ? c : (int)x->type - (int)y->type;
}

static void node_json(const struct flame_tree *t, uint32_t idx, unsigned slots, uint64_t min,
		      struct json_out *j)
{
	const struct flame_node *n = &t->nodes[idx];
	uint32_t kids[16], *order = kids, c;
	size_t cnt = 0, i;
	bool first = true;

	json_out__raw_u64(j, "{\"n\":", n->name);
	json_out__raw_u64(j, ",\"t\":", n->type);
	json_out__raw_u64(j, ",\"v\":", n->total[0]);
	json_out__raw_u64(j, ",\"s\":", n->self[0]);
	if (slots > 1) {
		json_out__raw_u64(j, ",\"v2\":", n->total[1]);
		json_out__raw_u64(j, ",\"s2\":", n->self[1]);
	}
	for (c = n->first_child; c; c = t->nodes[c].next_sibling)
		cnt++;
	if (cnt > sizeof(kids) / sizeof(kids[0])) {
		order = malloc(cnt * sizeof(*order));
		if (!order) {
			json_out__raw(j, "}");
			j->err = j->err ?: -ENOMEM;
			return;
		}
	}
	i = 0;
	for (c = n->first_child; c; c = t->nodes[c].next_sibling)
		order[i++] = c;
	sort_tree = t;
	qsort(order, cnt, sizeof(*order), by_name);
	for (i = 0; i < cnt && !json_out__err(j); i++) {
		const struct flame_node *k = &t->nodes[order[i]];

		if (k->total[0] < min && (slots < 2 || k->total[1] < min))
			continue;
		json_out__raw(j, first ? ",\"c\":[" : ",");
		first = false;
		node_json(t, order[i], slots, min, j);
	}
	if (!first)
		json_out__raw(j, "]");
	json_out__raw(j, "}");
	if (order != kids)
		free(order);
}

void flame_tree__json(const struct flame_tree *t, unsigned slots, uint64_t min_samples,
		      struct json_out *j)
{
	json_out__raw(j, "\"names\":");
	names_json(&t->names, j);
	json_out__raw(j, ",\"types\":");
	names_json(&t->types, j);
	json_out__raw(j, ",\"root\":");
	node_json(t, 0, slots, min_samples, j);
}

struct top_entry {
	uint32_t name, type;
	uint64_t self[2], total[2];
};

struct top_walk {
	struct top_entry *entries; /* by function: index through the map below */
	size_t cnt;
	uint32_t *on_path; /* per entry: how often its function is on the path being walked */
};

/* Function key -> entry index + 1, open addressing keyed by name and type. */
struct top_index {
	uint32_t *slots;
	size_t cap;
};

static int64_t top_entry_of(struct top_walk *w, struct top_index *ix, uint32_t name, uint32_t type)
{
	size_t k = u64_hash((uint64_t)name << 8 | type) & (ix->cap - 1);

	while (ix->slots[k]) {
		struct top_entry *e = &w->entries[ix->slots[k] - 1];

		if (e->name == name && e->type == type)
			return ix->slots[k] - 1;
		k = (k + 1) & (ix->cap - 1);
	}
	w->entries[w->cnt] = (struct top_entry){ .name = name, .type = type };
	ix->slots[k] = (uint32_t)w->cnt + 1;
	return (int64_t)w->cnt++;
}

static unsigned top_sort_slot;

static int by_self(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;
	uint64_t sx = x->self[top_sort_slot], sy = y->self[top_sort_slot];

	if (sx != sy)
		return sx > sy ? -1 : 1;
	if (x->total[top_sort_slot] != y->total[top_sort_slot])
		return x->total[top_sort_slot] > y->total[top_sort_slot] ? -1 : 1;
	return strcmp(sort_tree->names.names[x->name], sort_tree->names.names[y->name]);
}

int flame_tree__top_json(const struct flame_tree *t, unsigned slots, size_t limit,
			 struct json_out *j)
{
	struct top_walk w = { 0 };
	struct top_index ix = { 0 };
	uint32_t *entry_of = NULL, *stack = NULL;
	size_t i, sp = 0;
	int err = 0;

	/* node -> function entry (every node but the root) */
	for (ix.cap = 1024; ix.cap < t->cnt * 2; ix.cap *= 2)
		;
	ix.slots = calloc(ix.cap, sizeof(*ix.slots));
	w.entries = calloc(t->cnt, sizeof(*w.entries));
	w.on_path = calloc(t->cnt, sizeof(*w.on_path));
	entry_of = calloc(t->cnt, sizeof(*entry_of));
	stack = calloc(t->cnt + 1, sizeof(*stack));
	if (!ix.slots || !w.entries || !w.on_path || !entry_of || !stack) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 1; i < t->cnt; i++) {
		const struct flame_node *n = &t->nodes[i];
		struct top_entry *e;

		entry_of[i] = (uint32_t)top_entry_of(&w, &ix, n->name, n->type);
		e = &w.entries[entry_of[i]];
		e->self[0] += n->self[0];
		e->self[1] += n->self[1];
	}
	/* totals: a node counts unless the same function is above it (recursion), found by
	 * a depth-first walk that counts the functions on the path (on_path, per entry)
	 */
	stack[sp++] = t->nodes[0].first_child;
	while (sp) {
		uint32_t c = stack[sp - 1];

		if (!c) { /* this level is done: leave its parent */
			sp--;
			if (sp) {
				w.on_path[entry_of[stack[sp - 1]]]--;
				stack[sp - 1] = t->nodes[stack[sp - 1]].next_sibling;
			}
			continue;
		}
		if (!w.on_path[entry_of[c]]) {
			w.entries[entry_of[c]].total[0] += t->nodes[c].total[0];
			w.entries[entry_of[c]].total[1] += t->nodes[c].total[1];
		}
		w.on_path[entry_of[c]]++;
		stack[sp++] = t->nodes[c].first_child;
	}
	sort_tree = t;
	top_sort_slot = slots > 1 ? 1 : 0;
	qsort(w.entries, w.cnt, sizeof(*w.entries), by_self);
	json_out__raw(j, "\"functions\":[");
	for (i = 0; i < w.cnt && i < limit; i++) {
		const struct top_entry *e = &w.entries[i];

		json_out__raw(j, i ? ",{\"name\":" : "{\"name\":");
		json_out__str(j, t->names.names[e->name]);
		json_out__raw(j, ",\"type\":");
		json_out__str(j, t->types.names[e->type]);
		json_out__raw_u64(j, ",\"self\":", e->self[0]);
		json_out__raw_u64(j, ",\"total\":", e->total[0]);
		if (slots > 1) {
			json_out__raw_u64(j, ",\"self2\":", e->self[1]);
			json_out__raw_u64(j, ",\"total2\":", e->total[1]);
		}
		json_out__raw(j, "}");
	}
	json_out__raw(j, "]");
out:
	free(ix.slots);
	free(w.entries);
	free(w.on_path);
	free(entry_of);
	free(stack);
	return err;
}

void flame_tree__types_json(const struct flame_tree *t, struct json_out *j)
{
	size_t i;
	bool first = true;

	json_out__raw(j, "\"types\":[");
	for (i = 1; i < t->types.cnt && i < TYPE_MAX; i++) {
		json_out__raw(j, first ? "{\"type\":" : ",{\"type\":");
		first = false;
		json_out__str(j, t->types.names[i]);
		json_out__raw_u64(j, ",\"samples\":", t->type_samples[i]);
		json_out__raw(j, "}");
	}
	json_out__raw(j, "]");
}
