/* CPython line-table decoders. See python_lines.h.
 *
 * Each follows the corresponding Objects/codeobject.c of its version: 3.6-3.9
 * PyCode_Addr2Line over co_lnotab; 3.10 and 3.11+ PyCode_Addr2Line through
 * _PyCode_CheckLineNumber, walking address ranges forward from the start of the table. One
 * walker per table yields its ranges in order; python_lines__line stops at the first that
 * holds the offset, python_lines__index keeps them all (merged where the line does not change).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "interp/python/python_lines.h"

/* The walk over one table: yields [start, end) -> line ranges, start = the previous end. */
struct line_walk {
	enum python_line_format fmt;
	const uint8_t *pos, *end;
	int64_t line; /* checked against int's range at each step */
	uint64_t addr;
	bool done;
};

/* A line that left int's range: the table is corrupt from there on. */
static bool line_ok(int64_t line)
{
	return line >= INT_MIN && line <= INT_MAX;
}

/* 3.6-3.9: (byte delta, signed line delta) pairs; an offset's line is the one reached after
 * the last pair whose address does not pass it, so the range before each pair's address is on
 * the line before that pair's delta, and the last line runs to the end of the code.
 */
static bool lnotab_next(struct line_walk *w, uint64_t *end, int *line)
{
	if (w->done)
		return false;
	while (w->end - w->pos >= 2) {
		uint64_t start = w->addr;
		int64_t before = w->line;

		w->addr += w->pos[0];
		w->line += (int8_t)w->pos[1];
		w->pos += 2;
		if (!line_ok(w->line)) { /* as if the table stopped at the pair before */
			w->addr = start;
			w->line = before;
			break;
		}
		if (w->addr > start) {
			*end = w->addr;
			*line = (int)before;
			return true;
		}
	}
	w->done = true; /* the last range, once */
	*end = UINT64_MAX;
	*line = (int)w->line;
	return true;
}

/* 3.10: ranges [start, start + delta) each with line += ldelta (-128: no line); empty
 * ranges only move the line.
 */
static bool linetable_next(struct line_walk *w, uint64_t *end, int *line)
{
	while (w->end - w->pos >= 2) {
		int8_t ldelta = (int8_t)w->pos[1];
		uint64_t start = w->addr;
		int range_line = -1;

		w->addr += w->pos[0];
		w->pos += 2;
		if (ldelta != -128) {
			w->line += ldelta;
			if (!line_ok(w->line))
				return false;
			range_line = (int)w->line;
		}
		if (w->addr > start) {
			*end = w->addr;
			*line = range_line;
			return true;
		}
	}
	return false;
}

/* 6-bit varint groups, bit 6 = more; bounded by the table. */
static int read_varint(const uint8_t **pos, const uint8_t *end, uint32_t *out)
{
	uint32_t val = 0, shift = 0;
	uint8_t b;

	do {
		if (*pos >= end || shift > 28)
			return -1;
		b = *(*pos)++;
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = val;
	return 0;
}

/* 3.11+: entries 1kkkklll: lll + 1 code units; kind 15 no location, 14 long form, 13 no
 * columns (both: signed varint line delta first), 10-12 one-line forms (delta kind - 10),
 * 0-9 short forms (same line). Entries start at bytes with the top bit set.
 */
static bool locations_next(struct line_walk *w, uint64_t *end, int *line)
{
	if (w->pos >= w->end)
		return false;
	{
		uint8_t first = *w->pos;
		unsigned int kind = (first >> 3) & 15;
		const uint8_t *p = w->pos + 1;
		int64_t delta = 0;

		if (!(first & 128))
			return false; /* not at an entry start: corrupt */
		if (kind == 13 || kind == 14) {
			uint32_t u;

			if (read_varint(&p, w->end, &u))
				return false;
			delta = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (kind >= 10 && kind <= 12) {
			delta = (int64_t)kind - 10;
		}
		w->line += delta;
		if (!line_ok(w->line))
			return false;
		w->addr += ((first & 7) + 1) * 2;
		*end = w->addr;
		*line = kind == 15 ? -1 : (int)w->line;
		w->pos++;
		while (w->pos < w->end && !(*w->pos & 128))
			w->pos++;
		return true;
	}
}

static void walk_start(struct line_walk *w, enum python_line_format fmt, const uint8_t *tab,
		       size_t size, int firstlineno)
{
	*w = (struct line_walk){ .fmt = fmt, .line = firstlineno };
	if (tab) {
		w->pos = tab;
		w->end = tab + size;
	} else {
		w->pos = w->end = (const uint8_t *)"";
	}
}

/* The next range: false at the end of the table (or where it turned out corrupt). */
static bool walk_next(struct line_walk *w, uint64_t *end, int *line)
{
	switch (w->fmt) {
	case PYTHON_LINES_LNOTAB:
		return lnotab_next(w, end, line);
	case PYTHON_LINES_LINETABLE:
		return linetable_next(w, end, line);
	case PYTHON_LINES_LOCATIONS:
		return locations_next(w, end, line);
	}
	return false;
}

int python_lines__line(enum python_line_format fmt, const uint8_t *tab, size_t size,
		       int firstlineno, uint32_t offset)
{
	struct line_walk w;
	uint64_t end;
	int line;

	if (offset == UINT32_MAX)
		return firstlineno;
	walk_start(&w, fmt, tab, size, firstlineno);
	while (walk_next(&w, &end, &line))
		if (end > offset)
			return line;
	return -1;
}

int python_lines__index(enum python_line_format fmt, const uint8_t *tab, size_t size,
			int firstlineno, size_t max_ranges, struct python_line_index *ix)
{
	struct line_walk w;
	size_t cap = 0;
	uint64_t end;
	int line;

	memset(ix, 0, sizeof(*ix));
	ix->firstlineno = firstlineno;
	walk_start(&w, fmt, tab, size, firstlineno);
	while (walk_next(&w, &end, &line)) {
		struct python_line_range *last = ix->n ? &ix->ranges[ix->n - 1] : NULL;

		if (end > UINT32_MAX)
			end = UINT32_MAX; /* offsets are 32-bit; UINT32_MAX is "not started" */
		if (last && last->line == line) {
			last->end = (uint32_t)end;
			continue;
		}
		if (last && last->end == UINT32_MAX)
			break; /* nothing past 4 GiB of code is reachable */
		if (ix->n == max_ranges) {
			ix->truncated = true;
			break;
		}
		if (ix->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			void *p;

			if (ncap > max_ranges)
				ncap = max_ranges;
			p = realloc(ix->ranges, ncap * sizeof(*ix->ranges));
			if (!p) {
				python_lines__index_free(ix);
				ix->firstlineno = firstlineno;
				return -ENOMEM;
			}
			ix->ranges = p;
			cap = ncap;
		}
		ix->ranges[ix->n++] = (struct python_line_range){ (uint32_t)end, line };
	}
	if (ix->n && ix->n < cap) { /* give back what doubling took beyond the table */
		void *p = realloc(ix->ranges, ix->n * sizeof(*ix->ranges));

		if (p)
			ix->ranges = p;
	}
	return 0;
}

int python_lines__lookup(const struct python_line_index *ix, uint32_t offset)
{
	uint32_t lo = 0, hi = ix->n;

	if (offset == UINT32_MAX)
		return ix->firstlineno;
	while (lo < hi) { /* the first range whose end passes the offset */
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->ranges[mid].end > offset)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < ix->n ? ix->ranges[lo].line : -1;
}

size_t python_lines__index_bytes(const struct python_line_index *ix)
{
	return (size_t)ix->n * sizeof(*ix->ranges);
}

void python_lines__index_free(struct python_line_index *ix)
{
	free(ix->ranges);
	memset(ix, 0, sizeof(*ix));
}
