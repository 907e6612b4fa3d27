/* HotSpot's compressed line-number tables. See hotspot_lines.h. */
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
	if (b != 0xff) {
		*bci += b >> 3;
		*line += (int32_t)(b & 7);
		return 1;
	}
	if (hotspot_lines__unsigned5(t, len, pos, excluded, &db) ||
	    hotspot_lines__unsigned5(t, len, pos, excluded, &dl))
		return -1;
	*bci += (uint32_t)signed5(db);
	*line += signed5(dl);
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
