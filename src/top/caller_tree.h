/* The caller tree of one function in `stackscope top`: from every sample of the window (that
 * the filter keeps) whose stack has the function (its name, and where it runs when given), the path from its innermost occurrence
 * towards the root, merged by name level by level — who calls it, who calls them...
 *
 * Invariants after caller_tree__build(): rows is the tree in preorder, siblings by count,
 * descending (ties by name), depth 1 for the direct callers, at most depth_max levels and
 * TOP_CALLER_NODES_MAX nodes (paths past it are cut, counted in `cut`); a row's count is the
 * samples whose path runs through it, so a row's children add up to at most its count.
 * Names are borrowed from the window (window.h).
 */
#ifndef STACKSCOPE_TOP_CALLER_TREE_H
#define STACKSCOPE_TOP_CALLER_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "top/window.h"

#define TOP_CALLER_NODES_MAX 65536
#define TOP_CALLER_DEPTH_MAX 64

struct caller_row {
	const char *name;
	uint64_t count;
	uint32_t depth;
};

struct caller_node; /* internal */

/* A zeroed struct is an empty tree. */
struct caller_tree {
	const char *function; /* the function whose callers these are (borrowed) */
	const char *where;    /* ... where it runs (borrowed; NULL: anywhere) */
	uint64_t samples;     /* samples with the function on their stack */
	uint64_t cut;         /* samples whose path met the node cap */
	struct caller_row *rows;
	size_t row_cnt, row_cap;
	struct caller_node *nodes;
	size_t node_cnt, node_cap;
	const char **names; /* scratch */
	uint32_t *frames;
	uint32_t *order;
};

/* Rebuilds c for `function` running in `where` (top_frame__where(); NULL: anywhere), both any
 * strings (matched by content), borrowed until the next build; 0 or -ENOMEM (c is then
 * empty). depth_max is capped at TOP_CALLER_DEPTH_MAX.
 */
int caller_tree__build(struct caller_tree *c, const struct top_window *w,
		       const struct top_filter *f, const char *function, const char *where,
		       unsigned int depth_max);
/* Frees everything; c is an empty tree again. Accepts NULL. */
void caller_tree__free(struct caller_tree *c);

#endif
