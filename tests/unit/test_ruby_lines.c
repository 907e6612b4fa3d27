/* CRuby line tables (src/interp/ruby/ruby_lines.c): succinct index tables laid out as CRuby's
 * iseq.c lays them out (immediate part, then 512-position blocks), built here from their
 * definition (rank = entries starting at or before a position), against a plain search of
 * the entry starts; the positions-array form; truncated and empty tables.
 */
#include <stdlib.h>

#include "random_buffers.h"
#include "test.h"
#include "interp/ruby/ruby_lines.h"

#define MAX_POS 3000

/* The table CRuby builds for entries starting at starts[0..n) in an iseq of max_pos VALUEs. */
static uint8_t *build_succ(const uint32_t *starts, size_t n, uint32_t max_pos, size_t *size)
{
	size_t sz = ruby_lines__succ_bytes(max_pos), imm = max_pos < 54 ? (max_pos + 8) / 9 : 6;
	size_t blocks = max_pos < 54 ? 0 : (max_pos - 54 + 511) / 512, j, i, k;
	uint8_t *t = calloc(1, sz + 1);

	REQUIRE(t);
	for (j = 0; j < imm; j++) {
		uint64_t v = 0;

		for (i = 0; i < 9; i++) {
			uint64_t r = 0;

			for (k = 0; k < n; k++)
				r += starts[k] <= j * 9 + i;
			v |= r << (7 * i);
		}
		memcpy(t + 8 * j, &v, 8);
	}
	for (k = 0; k < blocks; k++) {
		uint8_t *b = t + 48 + 80 * k;
		uint32_t base = 54 + 512 * (uint32_t)k, rank = 0;
		uint64_t small = 0;

		for (i = 0; i < n; i++)
			rank += starts[i] < base;
		memcpy(b, &rank, 4);
		for (j = 0; j < 8; j++) {
			uint64_t bits = 0, before = 0;

			for (i = 0; i < n; i++) {
				if (starts[i] >= base && starts[i] < base + 64 * j)
					before++;
				if (starts[i] >= base + 64 * j && starts[i] < base + 64 * (j + 1))
					bits |= 1ULL << (starts[i] - base - 64 * j);
			}
			if (j)
				small |= before << (9 * (j - 1));
			memcpy(b + 16 + 8 * j, &bits, 8);
		}
		memcpy(b + 8, &small, 8);
	}
	*size = sz;
	return t;
}

/* The line of the last entry starting at or before pos. */
static int plain_line(const uint32_t *starts, const int32_t *lines, size_t n, uint32_t pos)
{
	size_t i, best = 0;

	for (i = 0; i < n; i++)
		if (starts[i] <= pos)
			best = i;
	return lines[best];
}

TEST(succinct_against_plain_search)
{
	static uint32_t starts[MAX_POS];
	static int32_t lines[MAX_POS];
	unsigned int seed = 4242, round;

	for (round = 0; round < 60; round++) {
		uint32_t max_pos = 1 + rand_r(&seed) % (round < 20 ? 60 : MAX_POS), pos;
		size_t n = 0, size;
		struct ruby_line_table t = { 0 };
		uint8_t *succ;
		int bad = 0;

		for (pos = 0; pos < max_pos; pos++) /* entry 0 starts at 0, as CRuby's */
			if (!pos || rand_r(&seed) % 4 == 0) {
				starts[n] = pos;
				lines[n] = (int32_t)(10 + pos / 3);
				n++;
			}
		succ = build_succ(starts, n, max_pos, &size);
		t = (struct ruby_line_table){
			.lines = lines, .cnt = n, .succ = succ, .succ_sz = size
		};
		for (pos = 0; pos < max_pos; pos++)
			bad += ruby_lines__line(&t, pos) !=
			       (n == 1 ? lines[0] : plain_line(starts, lines, n, pos));
		CHECK_EQ_INT(bad, 0);
		/* cut short: positions past what is there give -1, nothing is read beyond */
		if (size > 8 && n > 1) {
			t.succ_sz = size - 8;
			CHECK_EQ_INT(ruby_lines__line(&t, max_pos - 1) == -1 ||
					     ruby_lines__line(&t, max_pos - 1) ==
						     plain_line(starts, lines, n, max_pos - 1),
				     1);
		}
		free(succ);
	}
}

TEST(positions_and_edges)
{
	static const uint32_t pos[] = { 0, 4, 9, 30 };
	static const int32_t lines[] = { 3, 4, 6, 9 };
	struct ruby_line_table t = { .lines = lines, .cnt = 4, .positions = pos };

	CHECK_EQ_INT(ruby_lines__line(&t, 0), 3);
	CHECK_EQ_INT(ruby_lines__line(&t, 5), 4);
	CHECK_EQ_INT(ruby_lines__line(&t, 9), 6);
	CHECK_EQ_INT(ruby_lines__line(&t, 1000), 9);
	t.positions = NULL; /* neither index: unknown */
	CHECK_EQ_INT(ruby_lines__line(&t, 5), -1);
	t.cnt = 1; /* one entry covers everything */
	CHECK_EQ_INT(ruby_lines__line(&t, 5), 3);
	t.cnt = 0;
	CHECK_EQ_INT(ruby_lines__line(&t, 0), -1);
	/* the sizes CRuby allocates */
	CHECK_EQ_INT((int)ruby_lines__succ_bytes(10), 16);
	CHECK_EQ_INT((int)ruby_lines__succ_bytes(54), 48);
	CHECK_EQ_INT((int)ruby_lines__succ_bytes(55), 48 + 80);
	CHECK_EQ_INT((int)ruby_lines__succ_bytes(54 + 512), 48 + 80);
	CHECK_EQ_INT((int)ruby_lines__succ_bytes(54 + 513), 48 + 160);
}

static void decode_random(const uint8_t *tab, size_t len, unsigned int i, unsigned int *seed)
{
	static int32_t lines[64];
	struct ruby_line_table t = { .lines = lines, .cnt = 64, .succ = tab, .succ_sz = len };

	ruby_lines__line(&t, (uint32_t)(rand_r(seed) % 2000));
}

/* Random bytes as a succinct table: lookups stay inside the buffer (ASan build). */
TEST(random_tables)
{
	test_random_buffers(99, 20000, 400, decode_random);
	CHECK(1);
}

int main(void)
{
	RUN(succinct_against_plain_search);
	RUN(positions_and_edges);
	RUN(random_tables);
	return test_summary();
}
