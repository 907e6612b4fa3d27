/* The sliding window of `stackscope top`: the profiles of the last few seconds, one per
 * slot (one second each), oldest first, and what every view of them shares: which samples a
 * process filter keeps, and a stack read as function names.
 *
 * Invariants: at most slot_cap profiles are held; pushing into a full window frees the
 * oldest. Every string a view hands out (names, comms) is interned by one of the held
 * profiles, so it stays valid until the push that frees that profile: views are rebuilt
 * after every push. Not thread-safe: one owner.
 */
#ifndef STACKSCOPE_TOP_WINDOW_H
#define STACKSCOPE_TOP_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;
struct profile_agg_sample;

struct top_window;

/* NULL with errno (EINVAL for slot_cap 0, ENOMEM). */
struct top_window *top_window__new(size_t slot_cap);
/* Frees the window and every profile it holds. Accepts NULL. */
void top_window__free(struct top_window *w);

/* Takes ownership of p (a finished profile, e.g. session__take_profile()'s); frees the oldest
 * profile when the window is full. p NULL is ignored.
 */
void top_window__push(struct top_window *w, struct profile *p);
size_t top_window__slot_cnt(const struct top_window *w);
/* Slot i, 0 = oldest; borrowed until the push that frees it. NULL past the end. */
const struct profile *top_window__slot(const struct top_window *w, size_t i);
/* Seconds covered: from the oldest profile's start to the newest one's end (0 if empty). */
double top_window__seconds(const struct top_window *w);

#define TOP_FILTER_TEXT_MAX 64

/* Which samples a view keeps: pid 0 and an empty text keep everything. text is a pid when it
 * is all digits, else a part of the process or thread name.
 */
struct top_filter {
	uint32_t pid;
	char text[TOP_FILTER_TEXT_MAX];
};

bool top_filter__match(const struct top_filter *f, const struct profile_agg_sample *s);

/* Writes the function names of stack `stack` of p into names[0..cap), leaf first, one per
 * inlining level of each frame (innermost first), and the frame each came from into
 * frames[] (may be NULL). Returns the count written (the stack is cut at cap). Names are
 * interned by p.
 */
size_t top_stack__names(const struct profile *p, uint32_t stack, const char **names,
			uint32_t *frames, size_t cap);

/* Where a frame runs, for display: "[kernel]", the file name of a native frame's mapping, a
 * runtime frame's runtime ("cpython"), "" otherwise. Borrowed from p (or static).
 */
const char *top_frame__where(const struct profile *p, uint32_t frame_id);

/* A string's hash (FNV-1a, 64 bits), for tables keyed by names that come from different
 * profiles (pointers differ, contents match).
 */
uint64_t top_name__hash(const char *s);

#endif
