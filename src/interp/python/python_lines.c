/* CPython line-table decoders. See python_lines.h.
 *
 * Each follows the corresponding Objects/codeobject.c of its version: 3.6-3.9
 * PyCode_Addr2Line over co_lnotab; 3.10 and 3.11+ PyCode_Addr2Line through
 * _PyCode_CheckLineNumber, walking address ranges forward from the start of the table.
 */
#include "interp/python/python_lines.h"

static int lnotab_line(const uint8_t *tab, size_t size, int line, uint32_t offset)
{
	uint64_t addr = 0;
	size_t i;

	for (i = 0; i + 1 < size; i += 2) {
		addr += tab[i];
		if (addr > offset)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

/* 3.10: ranges [start, start + delta) each with line += ldelta (-128: no line); empty
 * ranges only move the line. The first range whose end passes the offset holds it.
 */
static int linetable_line(const uint8_t *tab, size_t size, int line, uint32_t offset)
{
	uint64_t end = 0;
	int range_line = -1;
	size_t i;

	for (i = 0; i + 1 < size; i += 2) {
		int8_t ldelta = (int8_t)tab[i + 1];

		end += tab[i];
		if (ldelta == -128) {
			range_line = -1;
		} else {
			line += ldelta;
			range_line = line;
		}
		if (end > offset)
			return range_line;
	}
	return -1;
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

static int read_svarint(const uint8_t **pos, const uint8_t *end, int *out)
{
	uint32_t u;

	if (read_varint(pos, end, &u))
		return -1;
	*out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
	return 0;
}

/* 3.11+: entries 1kkkklll: lll + 1 code units; kind 15 no location, 14 long form, 13 no
 * columns (both: signed varint line delta first), 10-12 one-line forms (delta kind - 10),
 * 0-9 short forms (same line). Entries start at bytes with the top bit set.
 */
static int locations_line(const uint8_t *tab, size_t size, int line, uint32_t offset)
{
	const uint8_t *pos = tab, *end = tab + size;
	uint64_t addr = 0;

	while (pos < end) {
		uint8_t first = *pos;
		unsigned int kind = (first >> 3) & 15;
		const uint8_t *p = pos + 1;
		int delta = 0, range_line;

		if (!(first & 128))
			return -1; /* not at an entry start: corrupt */
		if (kind == 13 || kind == 14) {
			if (read_svarint(&p, end, &delta))
				return -1;
		} else if (kind >= 10 && kind <= 12) {
			delta = (int)kind - 10;
		}
		line += delta;
		range_line = kind == 15 ? -1 : line;
		addr += ((first & 7) + 1) * 2;
		if (addr > offset)
			return range_line;
		pos++;
		while (pos < end && !(*pos & 128))
			pos++;
	}
	return -1;
}

int python_lines__line(enum python_line_format fmt, const uint8_t *tab, size_t size,
		       int firstlineno, uint32_t offset)
{
	if (offset == UINT32_MAX)
		return firstlineno;
	if (!tab)
		size = 0;
	switch (fmt) {
	case PYTHON_LINES_LNOTAB:
		return lnotab_line(tab, size, firstlineno, offset);
	case PYTHON_LINES_LINETABLE:
		return linetable_line(tab, size, firstlineno, offset);
	case PYTHON_LINES_LOCATIONS:
		return locations_line(tab, size, firstlineno, offset);
	}
	return -1;
}
