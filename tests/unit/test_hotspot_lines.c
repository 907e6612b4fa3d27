/* HotSpot's compressed line-number tables and UNSIGNED5 numbers
 * (src/interp/hotspot/hotspot_lines.c), in both encodings (JDK < 20: no excluded byte; JDK 20+:
 * byte 0 excluded), on tables written by hand from HotSpot's encoder rules, plus random bytes
 * that must never be read out of bounds. The whole chain against live JVMs (their own tables,
 * read from memory) is tests/system/test_jvm.sh.
 */
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

static void decode_random(const uint8_t *tab, size_t len, unsigned int i, unsigned int *seed)
{
	hotspot_lines__line(tab, len, i & 1, (uint32_t)(rand_r(seed) % 512));
	hotspot_lines__table_len(tab, len, i & 1);
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
	RUN(random_tables);
	return test_summary();
}
