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

/* A code offset past any the walk is asked for (they are 32-bit): deltas are clamped to it,
 * so that the sum of hostile deltas never overflows and stays past every offset.
 */
#define CODE_PAST ((int64_t)1 << 40)

/* One entry of the walk from the state in *m (advanced); 0, or -1 at the table's end. The
 * source position's sum wraps (hostile deltas), the code offset saturates at CODE_PAST.
 */
static int next_entry(const uint8_t *tab, size_t size, struct v8_spt_mark *m, int *first_done)
{
	int64_t dcode, dsource;
	size_t pos = m->pos;
	uint64_t step;

	if (read_int(tab, size, &pos, &dcode) || read_int(tab, size, &pos, &dsource))
		return -1;
	/* -dcode - 1 without overflow: a non-statement position's delta */
	step = dcode >= 0 ? (uint64_t)dcode : (uint64_t)(-(dcode + 1));
	if (!*first_done && dcode == -1)
		m->code = -1; /* the function-entry position (kFunctionEntryBytecodeOffset) */
	else
		m->code = step >= (uint64_t)(CODE_PAST - m->code) ? CODE_PAST
								  : m->code + (int64_t)step;
	*first_done = 1;
	m->source = (int64_t)((uint64_t)m->source + (uint64_t)dsource);
	m->pos = (uint32_t)pos;
	return 0;
}

/* The walk from mark m (found: the position at it, -1 before the first entry). */
static int64_t position_from(const uint8_t *tab, size_t size, struct v8_spt_mark m, int first_done,
			     int64_t found, uint32_t code_offset)
{
	while (!next_entry(tab, size, &m, &first_done)) {
		if (m.code > (int64_t)code_offset)
			break;
		found = m.source;
	}
	return found;
}

int64_t v8_lines__position(const uint8_t *tab, size_t size, uint32_t code_offset)
{
	return position_from(tab, size, (struct v8_spt_mark){ 0 }, 0, -1, code_offset);
}

size_t v8_lines__spt_marks(const uint8_t *tab, size_t size, struct v8_spt_mark *out, size_t cap)
{
	struct v8_spt_mark m = { 0 };
	size_t entries = 0, n = 0;
	int first_done = 0;

	if (size > UINT32_MAX)
		return 0;
	while (n < cap && !next_entry(tab, size, &m, &first_done))
		if (++entries % V8_SPT_MARK_EVERY == 0)
			out[n++] = m;
	return n;
}

int64_t v8_lines__position_marked(const uint8_t *tab, size_t size, const struct v8_spt_mark *marks,
				  size_t n_marks, uint32_t code_offset)
{
	size_t lo = 0, hi = n_marks;

	while (lo < hi) { /* the first mark past code_offset */
		size_t mid = lo + (hi - lo) / 2;

		if (marks[mid].code <= (int64_t)code_offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Code offsets never decrease along the table: every entry up to the mark before is at
	 * or before code_offset, the walk's answer there is that mark's position.
	 */
	if (!lo)
		return v8_lines__position(tab, size, code_offset);
	return position_from(tab, size, marks[lo - 1], 1, marks[lo - 1].source, code_offset);
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

int64_t v8_lines__script_offset_marked(const uint8_t *tab, size_t size,
				       const struct v8_spt_mark *marks, size_t n_marks,
				       uint32_t code_offset)
{
	return position_offset(v8_lines__position_marked(tab, size, marks, n_marks, code_offset));
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
