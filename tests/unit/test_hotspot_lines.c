/* HotSpot's compressed line-number tables and UNSIGNED5 numbers
 * (src/interp/hotspot/hotspot_lines.c), in both encodings (JDK < 20: no excluded byte; JDK 20+:
 * byte 0 excluded), on tables written by hand from HotSpot's encoder rules, plus random bytes
 * that must never be read out of bounds. The whole chain against live JVMs (their own tables,
 * read from memory) is tests/system/test_jvm.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "interp/hotspot/hotspot_lines.h"
#include "random_buffers.h"
#include "test.h"

static uint32_t u5(const uint8_t *buf, size_t len, unsigned excluded, size_t *pos, int *err)
{
	uint32_t v = 0;

	*err = hotspot_lines__unsigned5(buf, len, pos, excluded, &v);
	return v;
}

TEST(unsigned5)
{
	/* 5 in one byte; 200 in two: (200 - L) % 64 over L, then the rest (0) as a low byte. */
	static const uint8_t old[] = { 5, 200, 0 }, new[] = { 6, 201, 1 };
	/* Five bytes at most: the fifth is taken whatever its value. */
	static const uint8_t longest[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 7 };
	size_t pos = 0;
	int err;

	CHECK_EQ_INT(u5(old, 3, 0, &pos, &err), 5);
	CHECK_EQ_INT(u5(old, 3, 0, &pos, &err), 200);
	CHECK(!err && pos == 3);
	pos = 0;
	CHECK_EQ_INT(u5(new, 3, 1, &pos, &err), 5);
	CHECK_EQ_INT(u5(new, 3, 1, &pos, &err), 200);
	CHECK(!err && pos == 3);
	pos = 0;
	u5(longest, sizeof(longest), 0, &pos, &err);
	CHECK(!err && pos == 5);
	/* Truncated, and an excluded byte. */
	pos = 0;
	u5(old + 1, 1, 0, &pos, &err);
	CHECK(err);
	pos = 0;
	u5((const uint8_t *)"\0", 1, 1, &pos, &err);
	CHECK(err);
}

TEST(line_tables)
{
	/* bci 0 line 10 (escaped: signed 0, +10), bci 2 line 13 (short: 2 << 3 | 3),
	 * bci 42 line 11 (escaped: +40, -2), end. Signed numbers are zigzag: 10 -> 20, 40 -> 80,
	 * -2 -> 3; JDK 20+ adds 1 to every byte of a number.
	 */
	static const uint8_t old[] = { 0xff, 0, 20, 19, 0xff, 80, 3, 0 };
	static const uint8_t new[] = { 0xff, 1, 21, 19, 0xff, 81, 4, 0 };
	const struct {
		uint32_t bci;
		int line;
	} want[] = { { 0, 10 }, { 1, 10 }, { 2, 13 }, { 30, 13 }, { 42, 11 }, { 1000, 11 } };
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_INT(hotspot_lines__line(old, sizeof(old), 0, want[i].bci), want[i].line);
		CHECK_EQ_INT(hotspot_lines__line(new, sizeof(new), 1, want[i].bci), want[i].line);
	}
	CHECK_EQ_INT(hotspot_lines__table_len(old, sizeof(old), 0), sizeof(old));
	CHECK_EQ_INT(hotspot_lines__table_len(new, sizeof(new), 1), sizeof(new));
	/* Not terminated within the buffer: no length; the lines read so far still count. */
	CHECK_EQ_INT(hotspot_lines__table_len(old, 4, 0), 0);
	CHECK_EQ_INT(hotspot_lines__line(old, 4, 0, 5), 13);
	CHECK_EQ_INT(hotspot_lines__line(old, 0, 0, 5), 0);
}

static void check_index_equals_walk(const uint8_t *tab, size_t len, unsigned excluded);

static void decode_random(const uint8_t *tab, size_t len, unsigned int i, unsigned int *seed)
{
	hotspot_lines__line(tab, len, i & 1, (uint32_t)(rand_r(seed) % 512));
	hotspot_lines__table_len(tab, len, i & 1);
	check_index_equals_walk(tab, len, i & 1);
}

/* The index gives what the walk gives, for every bci: on a table whose bcis go back and
 * repeat (the stable order among equal bcis decides), on random tables (each terminated), and
 * refuses what the walk cannot end.
 */
static void check_index_equals_walk(const uint8_t *tab, size_t len, unsigned excluded)
{
	struct hotspot_line *idx;
	size_t cnt;
	uint32_t bci;

	if (hotspot_lines__index(tab, len, excluded, &idx, &cnt)) {
		CHECK_EQ_INT(hotspot_lines__table_len(tab, len, excluded) == 0 || cnt == 0, 1);
		return;
	}
	for (bci = 0; bci < 600; bci++)
		if (hotspot_lines__index_line(idx, cnt, bci) !=
		    hotspot_lines__line(tab, len, excluded, bci)) {
			CHECK_EQ_INT(hotspot_lines__index_line(idx, cnt, bci),
				     hotspot_lines__line(tab, len, excluded, bci));
			break;
		}
	free(idx);
}

TEST(line_index)
{
	/* bci 16 line 5, back to bci 8 line 7 (escaped: zigzag +16 +5, -8 +2), bci 8 again
	 * line 9 (short: 0 << 3 | 2), on to bci 24 line 3 (+16, -6).
	 */
	static const uint8_t back[] = { 0xff, 32, 10, 0xff, 15, 4, 0x02, 0xff, 32, 0xb, 0 };
	static const uint8_t old[] = { 0xff, 0, 20, 19, 0xff, 80, 3, 0 };
	struct hotspot_line *idx;
	size_t cnt, i;
	uint8_t tab[512];
	unsigned seed = 7;

	CHECK_EQ_INT(hotspot_lines__index(back, sizeof(back), 0, &idx, &cnt), 0);
	CHECK_EQ_INT(cnt, 4);
	CHECK_EQ_INT(hotspot_lines__index_line(idx, cnt, 8), 7);  /* the first of bci 8 */
	CHECK_EQ_INT(hotspot_lines__index_line(idx, cnt, 12), 9); /* the last below */
	CHECK_EQ_INT(hotspot_lines__index_line(idx, cnt, 4), 0);
	free(idx);
	check_index_equals_walk(back, sizeof(back), 0);
	check_index_equals_walk(old, sizeof(old), 0);
	/* Not terminated, empty: refused, nothing allocated. */
	CHECK_EQ_INT(hotspot_lines__index(old, 4, 0, &idx, &cnt), -EBADMSG);
	CHECK(!idx && !cnt);
	CHECK_EQ_INT(hotspot_lines__index((const uint8_t *)"", 1, 0, &idx, &cnt), -EBADMSG);
	for (i = 0; i < 2000; i++) {
		size_t len = 1 + (size_t)rand_r(&seed) % sizeof(tab), k;

		for (k = 0; k < len; k++)
			tab[k] = (uint8_t)(rand_r(&seed) % 4 ? 1 + rand_r(&seed) % 255 : 0xff);
		tab[len - 1] = 0;
		check_index_equals_walk(tab, len, (unsigned)(i & 1));
	}
}

/* A hostile line: deltas that would overflow a signed sum wrap (UBSan build), both ways. */
TEST(line_overflow)
{
	/* +0x7fffffff twice (zigzag 0xfffffffe: five UNSIGNED5 bytes), then a short pair. */
	static const uint8_t tab[] = { 0xff, 0,    0xfe, 0xff, 0xff, 0xff, 0x0f, 0xff,
				       0,    0xfe, 0xff, 0xff, 0xff, 0x0f, 0x0f, 0 };
	struct hotspot_line *idx;
	size_t cnt;

	hotspot_lines__line(tab, sizeof(tab), 0, 1);
	if (!hotspot_lines__index(tab, sizeof(tab), 0, &idx, &cnt)) {
		hotspot_lines__index_line(idx, cnt, 1);
		free(idx);
	}
	CHECK(1);
}

/* Random tables: the decoder stays inside the buffer (ASan build). */
TEST(random_tables)
{
	test_random_buffers(4242, 20000, 64, decode_random);
	CHECK(1);
}

int main(void)
{
	RUN(unsigned5);
	RUN(line_tables);
	RUN(line_index);
	RUN(line_overflow);
	RUN(random_tables);
	return test_summary();
}
