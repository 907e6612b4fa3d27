/* HotSpot's compressed line-number tables. See hotspot_lines.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "interp/hotspot/hotspot_lines.h"

#define U5_LG_H 6
#define U5_MAX_LEN 5

int hotspot_lines__unsigned5(const uint8_t *buf, size_t len, size_t *pos, unsigned excluded,
			     uint32_t *out)
{
	const uint32_t low = 256 - (1u << U5_LG_H) - excluded; /* "low" byte values */
	uint32_t sum = 0, shift = 0, b;
	int i;

	for (i = 0; i < U5_MAX_LEN; i++) {
		if (*pos >= len)
			return -1;
		b = buf[(*pos)++];
		if (b < excluded)
			return -1;
		b -= excluded;
		sum += b << shift;
		if (b < low)
			break;
		shift += U5_LG_H;
	}
	*out = sum;
	return 0;
}

static int32_t signed5(uint32_t v)
{
	return (int32_t)((v >> 1) ^ (0u - (v & 1)));
}

/* Next pair into *bci and *line; 1: a pair, 0: end of table, -1: malformed. */
static int next_pair(const uint8_t *t, size_t len, size_t *pos, unsigned excluded, uint32_t *bci,
		     int32_t *line)
{
	uint32_t b, db, dl;

	if (*pos >= len)
		return -1;
	b = t[(*pos)++];
	if (b == 0)
		return 0;
	/* The line's sum wraps as the JVM's does, never a signed overflow: bytes from another
	 * process may make it anything.
	 */
	if (b != 0xff) {
		*bci += b >> 3;
		*line = (int32_t)((uint32_t)*line + (b & 7));
		return 1;
	}
	if (hotspot_lines__unsigned5(t, len, pos, excluded, &db) ||
	    hotspot_lines__unsigned5(t, len, pos, excluded, &dl))
		return -1;
	*bci += (uint32_t)signed5(db);
	*line = (int32_t)((uint32_t)*line + (uint32_t)signed5(dl));
	return 1;
}

int hotspot_lines__line(const uint8_t *table, size_t len, unsigned excluded, uint32_t bci)
{
	size_t pos = 0;
	uint32_t cur_bci = 0, best_bci = 0;
	int32_t cur_line = 0, best_line = 0;
	int r;

	while ((r = next_pair(table, len, &pos, excluded, &cur_bci, &cur_line)) > 0) {
		if (cur_bci == bci)
			return cur_line > 0 ? cur_line : 0;
		if (cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best_line = cur_line;
		}
	}
	return best_line > 0 ? best_line : 0;
}

size_t hotspot_lines__table_len(const uint8_t *table, size_t len, unsigned excluded)
{
	size_t pos = 0;
	uint32_t bci = 0;
	int32_t line = 0;
	int r;

	while ((r = next_pair(table, len, &pos, excluded, &bci, &line)) > 0)
		;
	return r == 0 ? pos : 0;
}

/* An entry with its place in the table, for a stable sort by bci. */
struct line_seq {
	uint32_t bci;
	int32_t line;
	uint32_t seq;
};

static int line_seq__cmp(const void *a, const void *b)
{
	const struct line_seq *x = a, *y = b;

	if (x->bci != y->bci)
		return x->bci < y->bci ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int hotspot_lines__index(const uint8_t *table, size_t len, unsigned excluded,
			 struct hotspot_line **out, size_t *cnt)
{
	struct line_seq *tmp = NULL;
	struct hotspot_line *idx = NULL;
	size_t pos = 0, n = 0, cap = len < HOTSPOT_LINES_INDEX_MAX ? len : HOTSPOT_LINES_INDEX_MAX;
	uint32_t bci = 0;
	int32_t line = 0;
	bool sorted = true;
	int r, err = -ENOMEM;

	*out = NULL;
	*cnt = 0;
	/* Every pair takes at least one byte: len bounds the count. */
	if (!cap || !(tmp = malloc(cap * sizeof(*tmp))))
		goto cleanup;
	while ((r = next_pair(table, len, &pos, excluded, &bci, &line)) > 0 && n < cap) {
		tmp[n] = (struct line_seq){ .bci = bci, .line = line, .seq = (uint32_t)n };
		sorted = sorted && (!n || tmp[n - 1].bci <= bci);
		n++;
	}
	err = -EBADMSG;
	if (r != 0 || !n)
		goto cleanup;
	if (!sorted)
		qsort(tmp, n, sizeof(*tmp), line_seq__cmp);
	err = -ENOMEM;
	if (!(idx = malloc(n * sizeof(*idx))))
		goto cleanup;
	for (pos = 0; pos < n; pos++)
		idx[pos] = (struct hotspot_line){ .bci = tmp[pos].bci, .line = tmp[pos].line };
	*out = idx;
	*cnt = n;
	err = 0;
cleanup:
	free(tmp);
	return err;
}

int hotspot_lines__index_line(const struct hotspot_line *idx, size_t cnt, uint32_t bci)
{
	size_t lo = 0, hi = cnt;
	int32_t line;

	while (lo < hi) { /* the first entry at or after bci */
		size_t mid = lo + (hi - lo) / 2;

		if (idx[mid].bci < bci)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* An exact entry (the first of its bci in table order), else the last of the greatest
	 * bci below: hotspot_lines__line's walk, in O(log n).
	 */
	if (lo < cnt && idx[lo].bci == bci)
		line = idx[lo].line;
	else
		line = lo ? idx[lo - 1].line : 0;
	return line > 0 ? line : 0;
}
