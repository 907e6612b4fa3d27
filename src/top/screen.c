/* The view of `stackscope top` (see screen.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/utf8.h"
#include "top/screen.h"

#define WHERE_COLS 16
#define SHARE_COLS 17 /* " 12.34%  56.78%  " */

void screen_buf__reset(struct screen_buf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->s)
		b->s[0] = 0;
}

void screen_buf__free(struct screen_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

static void put(struct screen_buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (array__reserve((void **)&b->s, &b->cap, b->len + n + 1, 1)) {
		b->failed = true;
		return;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void puts_(struct screen_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void spaces(struct screen_buf *b, size_t n)
{
	static const char sp[] = "                                ";

	while (n) {
		size_t k = n < sizeof(sp) - 1 ? n : sizeof(sp) - 1;

		put(b, sp, k);
		n -= k;
	}
}

/* Appends s shown safely (screen.h) in at most max_cols columns; returns the columns used. */
static size_t put_clean(struct screen_buf *b, const char *s, size_t max_cols)
{
	size_t len = strlen(s), cols = 0, i = 0;

	while (i < len && cols < max_cols) {
		unsigned char c = (unsigned char)s[i];
		size_t n = 1;

		if (c >= 0x20 && c < 0x7f) {
			put(b, s + i, 1);
		} else if (c >= 0x80 && (n = utf8__seq_len(s + i, len - i, NULL)) > 1 &&
			   !(c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)) {
			put(b, s + i, n); /* printable: not a C1 control (U+0080..U+009F) */
		} else {
			put(b, "?", 1);
			n = n ? n : 1;
		}
		i += n;
		cols++;
	}
	return cols;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A function's line, cut at width columns; returns the columns used. */
static size_t function_line(struct screen_buf *b, const struct function_table *t,
			    const struct top_function *fn, size_t width)
{
	char shares[SHARE_COLS + 8];
	size_t cols, w;

	snprintf(shares, sizeof(shares), "%6.2f%%  %6.2f%%  ", share(fn->self, t->samples),
		 share(fn->total, t->samples));
	cols = put_clean(b, shares, width);
	if (cols >= width)
		return cols;
	w = put_clean(b, fn->where, width - cols < WHERE_COLS ? width - cols : WHERE_COLS);
	cols += w;
	if (cols < width) {
		size_t pad = WHERE_COLS - w + 1;

		pad = pad < width - cols ? pad : width - cols;
		spaces(b, pad);
		cols += pad;
	}
	return cols + put_clean(b, fn->name, width - cols);
}

/* A caller's line: its share in the TOTAL column, indented by depth under the name column. */
static size_t caller_line(struct screen_buf *b, const struct function_table *t,
			  const struct caller_row *r, size_t width)
{
	char head[SHARE_COLS + WHERE_COLS + 16];
	size_t cols, indent;

	snprintf(head, sizeof(head), "         %6.2f%%  %*s", share(r->count, t->samples),
		 WHERE_COLS + 1, "");
	cols = put_clean(b, head, width);
	indent = 2 * (size_t)(r->depth - 1);
	indent = indent < width - cols ? indent : width - cols;
	spaces(b, indent);
	cols += indent;
	cols += put_clean(b, "<- ", width - cols);
	return cols + put_clean(b, r->name, width - cols);
}

static const char column_names[] = "   SELF    TOTAL  WHERE            FUNCTION";

/* Ends a terminal line: the rest of it cleared, then the next line (not after the last). */
static void end_line(struct screen_buf *b, bool last)
{
	puts_(b, last ? "\x1b[K" : "\x1b[K\r\n");
}

int screen__frame(struct screen_buf *b, struct top_view *v, const struct function_table *t,
		  const struct caller_tree *callers, const char *title, const char *keys)
{
	size_t width = v->cols ? v->cols : 80, rows = v->rows ? v->rows : 24;
	size_t avail = rows > SCREEN_HEADER_ROWS ? rows - SCREEN_HEADER_ROWS : 0;
	size_t caller_cnt = 0, fn_slots, line = SCREEN_HEADER_ROWS, i, k;

	screen_buf__reset(b);
	if (v->selected >= t->fn_cnt)
		v->selected = t->fn_cnt ? t->fn_cnt - 1 : 0;
	if (v->expanded && callers && t->fn_cnt)
		caller_cnt = callers->row_cnt;
	if (caller_cnt > (avail > 2 ? avail - 2 : 0))
		caller_cnt = avail > 2 ? avail - 2 : 0;
	fn_slots = avail - caller_cnt;
	if (v->selected < v->scroll)
		v->scroll = v->selected;
	if (fn_slots && v->selected >= v->scroll + fn_slots)
		v->scroll = v->selected - fn_slots + 1;
	if (v->scroll >= t->fn_cnt)
		v->scroll = 0;

	puts_(b, "\x1b[H\x1b[0m\x1b[1m");
	put_clean(b, title, width);
	puts_(b, "\x1b[0m");
	end_line(b, rows == 1);
	if (rows > 1) {
		put_clean(b, keys, width);
		end_line(b, rows == 2);
	}
	if (rows > 2) {
		puts_(b, "\x1b[7m");
		spaces(b, width - put_clean(b, column_names, width));
		puts_(b, "\x1b[0m");
		end_line(b, rows == 3);
	}
	if (!t->fn_cnt && avail) {
		put_clean(b,
			  t->all_samples ? "  (no samples match the filter)" : "  (no samples yet)",
			  width);
		end_line(b, ++line == rows);
	}
	for (i = v->scroll; i < t->fn_cnt && line < rows; i++) {
		bool sel = i == v->selected;

		if (sel)
			puts_(b, "\x1b[7m");
		k = function_line(b, t, &t->fns[i], width);
		if (sel) {
			spaces(b, width - k);
			puts_(b, "\x1b[0m");
		}
		end_line(b, ++line == rows);
		if (!sel || !caller_cnt)
			continue;
		for (k = 0; k < caller_cnt && line < rows; k++) {
			if (k + 1 == caller_cnt && caller_cnt < callers->row_cnt) {
				char more[96];

				snprintf(more, sizeof(more), "%*s... %zu more", SHARE_COLS + 18, "",
					 callers->row_cnt - k);
				put_clean(b, more, width);
			} else {
				caller_line(b, t, &callers->rows[k], width);
			}
			end_line(b, ++line == rows);
		}
	}
	puts_(b, "\x1b[J");
	return b->failed ? -ENOMEM : 0;
}

int screen__text(struct screen_buf *b, const struct function_table *t,
		 const struct caller_tree *callers, const char *title, size_t max_rows)
{
	size_t i;

	put_clean(b, title, SIZE_MAX);
	puts_(b, "\n");
	puts_(b, column_names);
	puts_(b, "\n");
	for (i = 0; i < t->fn_cnt && i < max_rows; i++) {
		function_line(b, t, &t->fns[i], SIZE_MAX);
		puts_(b, "\n");
	}
	if (callers && callers->function) {
		char head[64];

		puts_(b, "callers of ");
		put_clean(b, callers->function, SIZE_MAX);
		snprintf(head, sizeof(head), " (%llu samples):\n",
			 (unsigned long long)callers->samples);
		puts_(b, head);
		for (i = 0; i < callers->row_cnt && i < max_rows; i++) {
			caller_line(b, t, &callers->rows[i], SIZE_MAX);
			puts_(b, "\n");
		}
	}
	return b->failed ? -ENOMEM : 0;
}
