/* The view of `stackscope top`: one frame of text made from the function table and, for the
 * selected function, its caller tree. Two forms: a terminal frame (the cursor sent home, every
 * line cleared to its end after its text, the rest of the screen cleared once: no full clear,
 * so no flicker; the caller writes it with one write()) and a plain text snapshot (batch mode).
 *
 * Names come from the profiled programs: every byte that is not printable ASCII or part of a
 * valid printable UTF-8 sequence is shown as '?', so no name can send the terminal a control
 * sequence. Terminal lines are cut at the width (a UTF-8 sequence counts one column).
 */
#ifndef STACKSCOPE_TOP_SCREEN_H
#define STACKSCOPE_TOP_SCREEN_H

#include <stdbool.h>
#include <stddef.h>

#include "top/caller_tree.h"
#include "top/function_table.h"

/* A growable text buffer; a zeroed struct is empty. */
struct screen_buf {
	char *s;
	size_t len, cap;
	bool failed; /* an append met ENOMEM: the text is incomplete */
};

void screen_buf__reset(struct screen_buf *b);
void screen_buf__free(struct screen_buf *b);

/* What the terminal shows besides the model. */
struct top_view {
	unsigned int rows, cols; /* the terminal's size */
	size_t selected;         /* the selected function: function table index */
	size_t scroll;           /* the first function row shown (kept so the selection is) */
	bool expanded;           /* the selected function's callers are shown under it */
};

#define SCREEN_HEADER_ROWS 3 /* title, key line, column names */

/* One terminal frame into b (reset first): title, the key line (keys), the column names, and
 * the functions from v->scroll on with the caller rows (callers may be NULL) under the
 * selected one when expanded (the last one shown says "... N more" when they do not all
 * fit). Adjusts v->selected and v->scroll to the table. 0 or -ENOMEM.
 */
int screen__frame(struct screen_buf *b, struct top_view *v, const struct function_table *t,
		  const struct caller_tree *callers, const char *title, const char *keys);

/* A plain text snapshot into b (appended): the title, the column names, the first max_rows
 * functions and, when callers is not NULL, "callers of NAME" and its rows. 0 or -ENOMEM.
 */
int screen__text(struct screen_buf *b, const struct function_table *t,
		 const struct caller_tree *callers, const char *title, size_t max_rows);

#endif
