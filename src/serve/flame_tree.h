/* The call tree the UI draws as a flamegraph: every stack of one profile (or of two, for a
 * diff) merged from the root down, a node per (parent, function name, frame type), with the
 * samples that passed through it (total) and that ended in it (self), per profile.
 *
 * Names are the profile's display names (profile__frame_name()), one tree level per inlining
 * level (inlined functions are nodes of their own); types are "kernel", "native", "go",
 * "error" or a runtime's frame type ("cpython", "hotspot"...). Names and types are copied, so
 * the profiles may be freed once added.
 *
 * Bounds: at most FLAME_TREE_MAX_NODES nodes; a profile that needs more is refused
 * (-E2BIG), so one answer's memory is bounded whatever the range; at most
 * FLAME_TREE_MAX_DEPTH levels, so the recursive JSON writer's stack is bounded too.
 */
#ifndef STACKSCOPE_FLAME_TREE_H
#define STACKSCOPE_FLAME_TREE_H

#include <stddef.h>
#include <stdint.h>

#define FLAME_TREE_MAX_NODES (2u << 20)
/* Levels below the root (inlined functions count): deeper frames of a stack end in one node
 * "[deeper frames cut]" (type "error"), so walks over the tree have a bounded depth.
 */
#define FLAME_TREE_MAX_DEPTH 2048

struct profile;
struct json_out;
struct flame_tree;

/* An empty tree (just the root, "all"). NULL with errno ENOMEM. */
struct flame_tree *flame_tree__new(void);
/* Lowers the tree's cap on nodes (at most FLAME_TREE_MAX_NODES) for an answer that must be
 * smaller (an upload's, serve/upload.h).
 */
void flame_tree__set_max_nodes(struct flame_tree *t, size_t max_nodes);
void flame_tree__free(struct flame_tree *t);

/* Adds every sample of p as profile slot (0, or 1: the second side of a diff); with
 * only_type non-NULL, only the samples with at least one frame of that type. 0, -ENOMEM,
 * -E2BIG (too many nodes) or -EINVAL (a bad slot).
 */
int flame_tree__add(struct flame_tree *t, const struct profile *p, unsigned slot,
		    const char *only_type);

/* Samples of a slot (the root's total). */
uint64_t flame_tree__total(const struct flame_tree *t, unsigned slot);

/* Writes "names":[...],"types":[...],"root":NODE (no braces around) where NODE is
 * {"n":name index,"t":type index,"v":total,"s":self[,"v2":total,"s2":self in slot 1],
 * "c":[children, by name]}; slots is 1 or 2. A node whose total (in every slot) is under
 * min_samples is left out (its parent keeps its samples in "v").
 */
void flame_tree__json(const struct flame_tree *t, unsigned slots, uint64_t min_samples,
		      struct json_out *j);

/* Writes "functions":[{"name","type","self","total"[,"self2","total2"]}...]: per function
 * (name and type), the samples it was the leaf of and the samples it was on the stack of
 * (counted once however often it recurses), at most limit of them, most self samples (in the
 * last slot) first.
 */
int flame_tree__top_json(const struct flame_tree *t, unsigned slots, size_t limit,
			 struct json_out *j);

/* The frame types seen and the samples that have a frame of each, as
 * "types":[{"type","samples"}...] (slot 0). */
void flame_tree__types_json(const struct flame_tree *t, struct json_out *j);

#endif
