/* The function table of `stackscope top`: every function of the window's samples that a
 * filter keeps, with its self share (samples in which it is the leaf) and its total share
 * (samples in which it is anywhere on the stack, counted once however often it recurs), and
 * the processes of the window (before the filter) for cycling through them.
 *
 * Functions are keyed by name (the display name profile__frame_name() gives, one per inlining
 * level) and where they run (top_frame__where(): the file, "[kernel]", the runtime), across the
 * window's profiles: hot_leaf of two programs is two functions. Invariants after function_table__build(): fns sorted
 * by the chosen key, descending (ties: the other share, then the name); procs by samples,
 * descending (ties: pid); at most TOP_FUNCTIONS_MAX functions (samples of functions past it
 * are counted in `dropped`). Names are borrowed from the window (window.h).
 */
#ifndef STACKSCOPE_TOP_FUNCTION_TABLE_H
#define STACKSCOPE_TOP_FUNCTION_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/id_index.h"
#include "top/window.h"

#define TOP_FUNCTIONS_MAX (1u << 18)
#define TOP_STACK_MAX 4096 /* names read per stack (window.h: top_stack__names) */

enum top_sort {
	TOP_SORT_SELF,
	TOP_SORT_TOTAL,
};

struct top_function {
	const char *name;
	const char *where; /* top_frame__where() */
	uint64_t self, total;
	uint64_t seen; /* the last sample that counted it (internal) */
};

struct top_process {
	uint32_t pid;
	const char *comm;
	uint64_t samples;
};

/* A zeroed struct is an empty table. */
struct function_table {
	struct top_function *fns;
	size_t fn_cnt, fn_cap;
	struct top_process *procs;
	size_t proc_cnt, proc_cap;
	uint64_t samples;      /* CPU samples the filter kept */
	uint64_t all_samples;  /* CPU samples in the window */
	uint64_t dropped;      /* self samples of functions past TOP_FUNCTIONS_MAX */
	struct id_index index; /* (name, where) -> fns index + 1 */
	struct u64_map pids;   /* pid + 1 -> procs index + 1 */
	const char **names;    /* TOP_STACK_MAX scratch */
	uint32_t *frames;
};

/* Rebuilds t from the window; 0 or -ENOMEM (t is then empty but can be built again). */
int function_table__build(struct function_table *t, const struct top_window *w,
			  const struct top_filter *f, enum top_sort sort);
/* The index of the function called name that runs in where (NULL: anywhere, the first by the
 * table's order), or -1.
 */
long function_table__find(const struct function_table *t, const char *name, const char *where);
/* Frees everything; t is an empty table again. Accepts NULL. */
void function_table__free(struct function_table *t);

#endif
