/* The caller tree of one function in `stackscope top` (see caller_tree.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "profile/profile.h"
#include "top/caller_tree.h"
#include "top/function_table.h"

/* Node 0 is the function itself; 0 as a link means none (the root is nobody's child). */
struct caller_node {
	const char *name;
	uint64_t count;
	uint32_t first_child, next_sibling;
};

static void reset(struct caller_tree *c)
{
	c->function = c->where = NULL;
	c->samples = c->cut = 0;
	c->row_cnt = c->node_cnt = 0;
}

/* The child of parent called name, added when new; 0 past the cap, -1 on ENOMEM. */
static long child_of(struct caller_tree *c, uint32_t parent, const char *name)
{
	uint32_t i;
	struct caller_node *n;

	for (i = c->nodes[parent].first_child; i; i = c->nodes[i].next_sibling)
		if (c->nodes[i].name == name || !strcmp(c->nodes[i].name, name))
			return i;
	if (c->node_cnt >= TOP_CALLER_NODES_MAX)
		return 0;
	if (array__reserve((void **)&c->nodes, &c->node_cap, c->node_cnt + 1, sizeof(*c->nodes)))
		return -1;
	n = &c->nodes[c->node_cnt];
	*n = (struct caller_node){ .name = name, .next_sibling = c->nodes[parent].first_child };
	c->nodes[parent].first_child = (uint32_t)c->node_cnt;
	return (long)c->node_cnt++;
}

static int add_path(struct caller_tree *c, const struct profile *p, size_t n,
		    unsigned int depth_max, const struct profile_agg_sample *s)
{
	uint32_t node = 0;
	size_t at, i;

	for (at = 0; at < n; at++)
		if (!strcmp(c->names[at], c->function) &&
		    (!c->where || !strcmp(top_frame__where(p, c->frames[at]), c->where)))
			break;
	if (at == n)
		return 0;
	c->samples += s->count;
	c->nodes[0].count += s->count;
	for (i = at + 1; i < n && i - at <= depth_max; i++) {
		long next = child_of(c, node, c->names[i]);

		if (next < 0)
			return -ENOMEM;
		if (!next) {
			c->cut += s->count;
			break;
		}
		node = (uint32_t)next;
		c->nodes[node].count += s->count;
	}
	return 0;
}

static int by_count(const void *a, const void *b, void *nodes)
{
	const struct caller_node *x = (const struct caller_node *)nodes + *(const uint32_t *)a;
	const struct caller_node *y = (const struct caller_node *)nodes + *(const uint32_t *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Relinks every sibling list by count, descending. */
static void sort_siblings(struct caller_tree *c)
{
	uint32_t node, i, k, cnt;

	for (node = 0; node < c->node_cnt; node++) {
		for (cnt = 0, i = c->nodes[node].first_child; i; i = c->nodes[i].next_sibling)
			c->order[cnt++] = i;
		if (cnt < 2)
			continue;
		qsort_r(c->order, cnt, sizeof(*c->order), by_count, c->nodes);
		c->nodes[node].first_child = c->order[0];
		for (k = 0; k < cnt; k++)
			c->nodes[c->order[k]].next_sibling = k + 1 < cnt ? c->order[k + 1] : 0;
	}
}

/* Preorder, depth first; the depth is bounded by depth_max, so is the recursion. */
static void flatten(struct caller_tree *c, uint32_t node, uint32_t depth)
{
	uint32_t i;

	for (i = c->nodes[node].first_child; i; i = c->nodes[i].next_sibling) {
		c->rows[c->row_cnt++] = (struct caller_row){
			.name = c->nodes[i].name,
			.count = c->nodes[i].count,
			.depth = depth,
		};
		flatten(c, i, depth + 1);
	}
}

int caller_tree__build(struct caller_tree *c, const struct top_window *w,
		       const struct top_filter *f, const char *function, const char *where,
		       unsigned int depth_max)
{
	size_t slot, i;
	int err = 0;

	reset(c);
	if (depth_max > TOP_CALLER_DEPTH_MAX)
		depth_max = TOP_CALLER_DEPTH_MAX;
	if (!c->names) {
		c->names = calloc(TOP_STACK_MAX, sizeof(*c->names));
		c->frames = calloc(TOP_STACK_MAX, sizeof(*c->frames));
		if (!c->names || !c->frames)
			return -ENOMEM;
	}
	if (array__reserve((void **)&c->nodes, &c->node_cap, 1, sizeof(*c->nodes)))
		return -ENOMEM;
	c->function = function;
	c->where = where;
	c->nodes[0] = (struct caller_node){ .name = function };
	c->node_cnt = 1;
	for (slot = 0; slot < top_window__slot_cnt(w); slot++) {
		const struct profile *p = top_window__slot(w, slot);

		for (i = 0; i < profile__sample_cnt(p); i++) {
			const struct profile_agg_sample *s = profile__sample(p, i);
			size_t n;

			if (s->off_cpu_ns || !top_filter__match(f, s))
				continue;
			n = top_stack__names(p, s->stack, c->names, c->frames, TOP_STACK_MAX);
			err = add_path(c, p, n, depth_max, s);
			if (err)
				goto out;
		}
	}
	free(c->order);
	c->order = calloc(c->node_cnt, sizeof(*c->order));
	if (!c->order ||
	    array__reserve((void **)&c->rows, &c->row_cap, c->node_cnt, sizeof(*c->rows))) {
		err = -ENOMEM;
		goto out;
	}
	sort_siblings(c);
	flatten(c, 0, 1);
out:
	if (err)
		reset(c);
	return err;
}

void caller_tree__free(struct caller_tree *c)
{
	if (!c)
		return;
	free(c->rows);
	free(c->nodes);
	free(c->names);
	free(c->frames);
	free(c->order);
	memset(c, 0, sizeof(*c));
}
