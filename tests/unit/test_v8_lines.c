/* V8 source positions (src/interp/v8/v8_lines.c): a source-position table measured from
 * Node 20's V8 11.3 (function `top` of a three-call loop; the expected positions are what
 * `node --print-bytecode` printed for each bytecode offset), line ends of a script, and
 * truncated or random tables that must never be read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/v8/v8_lines.h"
#include "test.h"

/* function top() { ... while (...) { total += a() + b() + c(); } ... } under V8 11.3:
 * its table as read from the process, and --print-bytecode's (offset, position) pairs.
 */
static const uint8_t top_table[] = {
	0x01, 0xac, 0x08, 0x02, 0x4c, 0x09, 0x14, 0x0b, 0x00, 0x09, 0x18, 0x0e, 0x58, 0x04,
	0x5c, 0x09, 0x17, 0x0b, 0x00, 0x0f, 0x18, 0x0a, 0x34, 0x07, 0x24, 0x0f, 0x18, 0x07,
	0x07, 0x0f, 0x20, 0x07, 0x07, 0x15, 0xc7, 0x01, 0x08, 0xa0, 0x02, 0x04, 0x34,
};

static const struct {
	uint32_t offset;
	int64_t position;
} top_positions[] = {
	{ 0, 285 },  { 3, 285 },  { 4, 290 },  { 9, 290 },  { 13, 296 }, { 20, 318 },   { 22, 341 },
	{ 26, 335 }, { 31, 335 }, { 38, 341 }, { 43, 354 }, { 46, 363 }, { 53, 369 },   { 56, 367 },
	{ 63, 375 }, { 66, 373 }, { 76, 323 }, { 80, 395 }, { 82, 408 }, { 1000, 408 },
};

TEST(measured_table)
{
	size_t i;

	for (i = 0; i < sizeof(top_positions) / sizeof(top_positions[0]); i++)
		CHECK_EQ_INT(v8_lines__script_offset(top_table, sizeof(top_table),
						     top_positions[i].offset),
			     top_positions[i].position);
}

TEST(line_ends)
{
	const char *src = "a\nbb\n\nccc";
	uint32_t ends[8];
	size_t n = v8_lines__line_ends((const uint8_t *)src, strlen(src), 1, ends, 8);
	int col = -1;

	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(ends[0], 1);
	CHECK_EQ_INT(ends[3], 9); /* the last line ends at the source's end */
	CHECK_EQ_INT(v8_lines__line(ends, n, 0, &col), 1);
	CHECK_EQ_INT(col, 0);
	CHECK_EQ_INT(v8_lines__line(ends, n, 3, &col), 2);
	CHECK_EQ_INT(col, 1);
	CHECK_EQ_INT(v8_lines__line(ends, n, 5, &col), 3);
	CHECK_EQ_INT(v8_lines__line(ends, n, 8, &col), 4);
	CHECK_EQ_INT(col, 2);
	CHECK_EQ_INT(v8_lines__line(ends, n, 10, &col), 0); /* past the end */
	CHECK_EQ_INT(v8_lines__line(ends, 0, 0, &col), 0);
	/* two-byte sources, and a capacity that cuts the table */
	{
		const uint8_t two[] = { 'x', 0, '\n', 0, 'y', 0 };

		n = v8_lines__line_ends(two, 3, 2, ends, 8);
		CHECK_EQ_INT(n, 2);
		CHECK_EQ_INT(ends[0], 1);
		CHECK_EQ_INT(v8_lines__line_ends((const uint8_t *)src, strlen(src), 1, ends, 2), 2);
	}
}

TEST(hostile_tables)
{
	uint8_t buf[64];
	size_t i, len;

	/* Truncated: every prefix of the real table gives a position or -1, never past it. */
	for (len = 0; len <= sizeof(top_table); len++) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, top_table, len);
		CHECK(v8_lines__script_offset(copy, len, 82) >= -1);
		free(copy);
	}
	/* An overlong VLQ and random bytes (run under ASan by make check). */
	memset(buf, 0xff, sizeof(buf));
	CHECK_EQ_INT(v8_lines__script_offset(buf, sizeof(buf), 10), -1);
	srand(12);
	for (i = 0; i < 10000; i++) {
		size_t k;

		len = (size_t)rand() % sizeof(buf);
		for (k = 0; k < len; k++)
			buf[k] = (uint8_t)rand();
		CHECK(v8_lines__script_offset(buf, len, (uint32_t)rand() % 300) >= -1);
	}
}

/* zigzag VLQ of v at *at */
static void put_int(uint8_t *buf, size_t *at, int64_t v)
{
	uint64_t z = (uint64_t)v << 1 ^ (uint64_t)(v >> 63);

	do {
		buf[(*at)++] = (uint8_t)(z & 0x7f) | (z > 0x7f ? 0x80 : 0);
		z >>= 7;
	} while (z);
}

/* Lookups through marks give the walk's answers on every offset: a long table of the shape a
 * huge function has (statements and expressions, both signs of source deltas), random tables,
 * and deltas made to overflow a sum (UBSan build).
 */
TEST(marked_tables)
{
	static uint8_t tab[40000];
	static struct v8_spt_mark marks[40000 / (2 * V8_SPT_MARK_EVERY) + 1];
	size_t at = 0, n, i, cap = sizeof(marks) / sizeof(marks[0]);
	uint32_t off;
	int bad = 0;

	put_int(tab, &at, -1);
	put_int(tab, &at, 266);
	srand(39);
	while (at + 24 < sizeof(tab)) {
		int64_t d = rand() % 9;

		put_int(tab, &at, rand() % 3 ? d : -d - 1);
		put_int(tab, &at, rand() % 40 - 12);
	}
	n = v8_lines__spt_marks(tab, at, marks, cap);
	CHECK(n > 100 && n < cap);
	for (off = 0; off < 60000; off += 7)
		bad += v8_lines__position_marked(tab, at, marks, n, off) !=
		       v8_lines__position(tab, at, off);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(v8_lines__script_offset_marked(top_table, sizeof(top_table), NULL, 0, 43),
		     354);
	/* Random bytes: the same answers, never outside the table. */
	for (i = 0; i < 2000; i++) {
		size_t len = (size_t)rand() % 2000, k;

		for (k = 0; k < len; k++)
			tab[k] = (uint8_t)rand();
		n = v8_lines__spt_marks(tab, len, marks, cap);
		off = (uint32_t)rand();
		bad += v8_lines__position_marked(tab, len, marks, n, off % 5000) !=
		       v8_lines__position(tab, len, off % 5000);
		bad += v8_lines__position_marked(tab, len, marks, n, off) !=
		       v8_lines__position(tab, len, off);
	}
	CHECK_EQ_INT(bad, 0);
	/* Deltas at the ends of int64: the sums saturate or wrap, never overflow. */
	at = 0;
	for (i = 0; i < 200; i++) {
		put_int(tab, &at, i & 1 ? INT64_MIN : INT64_MAX);
		put_int(tab, &at, i & 2 ? INT64_MIN : INT64_MAX);
	}
	n = v8_lines__spt_marks(tab, at, marks, cap);
	CHECK_EQ_INT(v8_lines__position_marked(tab, at, marks, n, UINT32_MAX),
		     v8_lines__position(tab, at, UINT32_MAX));
}

/* Baseline code: one pc delta per bytecode after the prologue's; a Wide prefix scales the
 * bytecode after it (sizes: opcode 0-3 prefixes of size 1, 4: 2 bytes at single scale, 3
 * Wide, 5 ExtraWide; 5: 1 byte at every scale).
 */
TEST(baseline_offsets)
{
	static const uint8_t sizes[3 * 6] = {
		1, 1, 1, 1, 2, 1, /* single */
		1, 1, 1, 1, 3, 1, /* Wide */
		1, 1, 1, 1, 5, 1, /* ExtraWide */
	};
	/* bytecodes: @0 op4 (2 bytes), @2 Wide op4 (1 + 3), @6 op5, @7 ExtraWide op4 (1 + 5) */
	static const uint8_t bc[] = { 4, 9, 0, 4, 9, 9, 5, 1, 4, 9, 9, 9, 9 };
	/* prologue 10 bytes of code, then 5, 200 (a two-byte VLQ), 3, 4 */
	static const uint8_t table[] = { 10, 5, 0xc8, 0x01, 3, 4 };

	/* pc offset into the code -> bytecode offset; -1 in the prologue (function entry) and past
	 * the table
	 */
	static const struct {
		uint32_t pc;
		int64_t bytecode;
	} pcs[] = {
		{ 1, -1 },  { 10, -1 }, { 11, 0 },  { 15, 0 },   { 16, 2 },
		{ 215, 2 }, { 216, 6 }, { 222, 7 }, { 223, -1 },
	};
	size_t i;

	for (i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++) {
		int64_t got = v8_lines__baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes,
							6, pcs[i].pc);

		CHECK_EQ_INT(got, pcs[i].bytecode);
		if (got != pcs[i].bytecode)
			printf("  at pc offset %u\n", pcs[i].pc);
	}
	/* past the bytecodes, or an unknown opcode: none */
	CHECK_EQ_INT(v8_lines__baseline_offset(table, sizeof(table), bc, 3, sizes, 6, 222), -1);
	CHECK_EQ_INT(v8_lines__baseline_offset(table, sizeof(table), bc, sizeof(bc), sizes, 4, 16),
		     -1);
	CHECK_EQ_INT(v8_lines__baseline_offset(table, 0, bc, sizeof(bc), sizes, 6, 16), -1);
}

/* A raw source position: script offset `off`, inlining id `id` (-1: the code's own). */
static int64_t position(int64_t off, int64_t id)
{
	return (off + 1) << 1 | (id + 1) << 31;
}

/* Inlining position `i` of table t: the call at raw position `call` into literal `fn`. */
static void inlining_entry(uint8_t *t, size_t i, int64_t call, int32_t fn)
{
	memset(t + i * V8_INLINING_POSITION_SIZE, 0xee, V8_INLINING_POSITION_SIZE); /* padding */
	memcpy(t + i * V8_INLINING_POSITION_SIZE, &call, sizeof(call));
	memcpy(t + i * V8_INLINING_POSITION_SIZE + 8, &fn, sizeof(fn));
}

/* outer (the code's function) calls mid at offset 300, inlined as id 0 (literal 1); mid calls
 * leaf at 120, inlined as id 1 (literal 0); the pc sits in leaf at offset 40.
 */
TEST(inlining_stack)
{
	uint8_t t[3 * V8_INLINING_POSITION_SIZE];
	struct v8_inlined_pos out[4];

	inlining_entry(t, 0, position(300, -1), 1);
	inlining_entry(t, 1, position(120, 0), 0);
	CHECK_EQ_INT(v8_lines__inlining_stack(position(40, 1), t, 2 * V8_INLINING_POSITION_SIZE, 2,
					      out, 4),
		     3);
	CHECK_EQ_INT(out[0].function, 0);
	CHECK_EQ_INT(out[0].script_offset, 40);
	CHECK_EQ_INT(out[1].function, 1);
	CHECK_EQ_INT(out[1].script_offset, 120);
	CHECK_EQ_INT(out[2].function, -1);
	CHECK_EQ_INT(out[2].script_offset, 300);
	/* not inlined: the code's own function alone */
	CHECK_EQ_INT(v8_lines__inlining_stack(position(7, -1), t, sizeof(t), 2, out, 4), 1);
	CHECK_EQ_INT(out[0].function, -1);
	CHECK_EQ_INT(out[0].script_offset, 7);
	/* too small a cap, an id past the table, a literal past the functions, a cycle: none */
	CHECK_EQ_INT(v8_lines__inlining_stack(position(40, 1), t, sizeof(t), 2, out, 2), 0);
	CHECK_EQ_INT(v8_lines__inlining_stack(position(40, 2), t, 2 * V8_INLINING_POSITION_SIZE, 2,
					      out, 4),
		     0);
	CHECK_EQ_INT(v8_lines__inlining_stack(position(40, 1), t, sizeof(t), 1, out, 4), 0);
	inlining_entry(t, 2, position(5, 2), 0);
	CHECK_EQ_INT(v8_lines__inlining_stack(position(40, 2), t, sizeof(t), 2, out, 4), 0);
	CHECK_EQ_INT(v8_lines__inlining_stack(-1, t, sizeof(t), 2, out, 4), 0);
	/* the raw position of a table entry, as v8_lines__script_offset's */
	CHECK_EQ_INT(v8_lines__position(top_table, sizeof(top_table), 20) >> 1 & ((1 << 30) - 1),
		     318 + 1);
}

int main(void)
{
	RUN(measured_table);
	RUN(line_ends);
	RUN(hostile_tables);
	RUN(marked_tables);
	RUN(baseline_offsets);
	RUN(inlining_stack);
	return test_summary();
}
