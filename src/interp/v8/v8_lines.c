/* V8 source positions (v8_lines.h): the source-position table's VLQ walk and the line-ends
 * search, bounded by their inputs.
 */
#include "interp/v8/v8_lines.h"

#include <string.h>

#include "formats/varint.h"

/* One zigzag VLQ integer at *pos; 0, or -1 at the end of the table or on an overlong one. */
static int read_int(const uint8_t *tab, size_t size, size_t *pos, int64_t *out)
{
	uint64_t v;

	if (varint__get(tab, size, pos, &v))
		return -1;
	*out = zigzag__decode(v);
	return 0;
}

int64_t v8_lines__position(const uint8_t *tab, size_t size, uint32_t code_offset)
{
	int64_t code = 0, source = 0, dcode, dsource, found = -1;
	size_t pos = 0;
	int first_done = 0;

	while (!read_int(tab, size, &pos, &dcode) && !read_int(tab, size, &pos, &dsource)) {
		if (!first_done && dcode == -1)
			code = -1; /* the function-entry position (kFunctionEntryBytecodeOffset) */
		else
			code += dcode >= 0 ? dcode : -dcode - 1;
		first_done = 1;
		source += dsource;
		if (code > code_offset)
			break;
		found = source;
	}
	return found;
}

/* The script offset a source position holds (bits 1..30: the offset + 1), or -1. */
static int64_t position_offset(int64_t raw)
{
	int64_t off = (raw >> 1) & ((1 << 30) - 1);

	return raw < 0 || (raw & 1) ? -1 : off - 1;
}

int64_t v8_lines__script_offset(const uint8_t *tab, size_t size, uint32_t code_offset)
{
	return position_offset(v8_lines__position(tab, size, code_offset));
}

size_t v8_lines__inlining_stack(int64_t raw, const uint8_t *inlining, size_t inlining_len,
				size_t n_functions, struct v8_inlined_pos *out, size_t cap)
{
	size_t n = 0, entries = inlining_len / V8_INLINING_POSITION_SIZE;

	while (n < cap && raw >= 0) {
		uint64_t id = (uint64_t)raw >> 31 & 0xffff; /* the inlining id + 1; 0: none */
		int64_t next;
		int32_t fn;

		out[n].script_offset = position_offset(raw);
		if (!id) {
			out[n++].function = -1;
			return n;
		}
		if (id - 1 >= entries)
			return 0; /* a position outside the table: corrupt, no frame at all */
		memcpy(&next, inlining + (id - 1) * V8_INLINING_POSITION_SIZE, sizeof(next));
		memcpy(&fn, inlining + (id - 1) * V8_INLINING_POSITION_SIZE + 8, sizeof(fn));
		if (fn < 0 || (size_t)fn >= n_functions)
			return 0;
		out[n++].function = fn;
		raw = next;
	}
	return 0; /* deeper than cap, or a cycle: corrupt */
}

int64_t v8_lines__baseline_offset(const uint8_t *table, size_t table_len, const uint8_t *bytecodes,
				  size_t bytecodes_len, const uint8_t *sizes, size_t n_bytecodes,
				  uint64_t pc_off)
{
	uint64_t end, delta;
	size_t tpos = 0, off = 0;
	int64_t current = -1; /* the prologue: kFunctionEntryBytecodeOffset */

	if (varint__get(table, table_len, &tpos, &end))
		return -1;
	while (end < pc_off) {
		size_t scale = 0, at = off, size;
		uint8_t op;

		if (off >= bytecodes_len || varint__get(table, table_len, &tpos, &delta))
			return -1;
		op = bytecodes[off];
		if (op <= 3) { /* a prefix: Wide / ExtraWide (and the DebugBreak forms) */
			scale = op & 1 ? 2 : 1;
			if (++off >= bytecodes_len)
				return -1;
			op = bytecodes[off];
		}
		if (op >= n_bytecodes || !(size = sizes[scale * n_bytecodes + op]))
			return -1;
		off += size;
		current = (int64_t)at;
		end += delta;
	}
	return current;
}

int v8_lines__line(const uint32_t *line_ends, size_t n, uint32_t pos, int *col)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first line end at or after pos */
		size_t mid = lo + (hi - lo) / 2;

		if (line_ends[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n)
		return 0;
	if (col)
		*col = (int)(pos - (lo ? line_ends[lo - 1] + 1 : 0));
	return (int)lo + 1;
}

size_t v8_lines__line_ends(const uint8_t *src, size_t len, size_t char_size, uint32_t *out,
			   size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < len && n < cap; i++) {
		uint16_t c = char_size == 2 ? (uint16_t)(src[2 * i] | src[2 * i + 1] << 8) : src[i];

		if (c == '\n')
			out[n++] = (uint32_t)i;
	}
	if (n < cap)
		out[n++] = (uint32_t)len;
	return n;
}
