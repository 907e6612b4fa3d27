/* The BEAM JIT's debugger records (src/interp/beam/beam_debug.c): a module record built here
 * in the layout measured on OTP 25, 27 and 29 (a function's entry range, its body with lines, a
 * function without lines), the emulator's record, and truncated or random records that must
 * never be read out of bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interp/beam/beam_debug.h"
#include "test.h"

struct rec {
	uint8_t b[1024];
	size_t n;
};

static void put(struct rec *r, const void *p, size_t n)
{
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static void put32(struct rec *r, uint32_t v)
{
	put(r, &v, 4);
}

static void put16(struct rec *r, uint16_t v)
{
	put(r, &v, 2);
}

/* A range: its 14 bytes of header, its name at 14, the next at 16 + name length (the struct's
 * size is 16: two bytes of padding after the name).
 */
static void range(struct rec *r, uint32_t start, uint32_t end, uint32_t lines, const char *name)
{
	put32(r, start);
	put32(r, end);
	put32(r, lines);
	put16(r, (uint16_t)(strlen(name) + 1));
	put(r, name, strlen(name) + 1);
	r->n += 2;
}

/* A line: 10 bytes of header, the file at 10, the next at 12 + file length. */
static void line(struct rec *r, uint32_t start, uint32_t no, const char *file)
{
	put32(r, start);
	put32(r, no);
	put16(r, (uint16_t)(strlen(file) + 1));
	put(r, file, strlen(file) + 1);
	r->n += 2;
}

static void module(struct rec *r)
{
	uint64_t base = 0x7f0000001000ULL;

	memset(r, 0, sizeof(*r));
	put32(r, BEAM_DEBUG_MODULE);
	put32(r, 0);
	put(r, &base, 8);
	put32(r, 4);     /* ranges */
	put32(r, 0x100); /* code size */
	put16(r, 2);
	put(r, "m", 2);
	r->n = BEAM_DEBUG_HDR_SZ + 2;
	range(r, 0x00, 0x10, 0, "m::codeHeader");
	range(r, 0x10, 0x20, 0, "m:f/1" BEAM_DEBUG_PROLOGUE);
	range(r, 0x20, 0x80, 2, "m:f/1");
	line(r, 0x20, 5, "m.erl");
	line(r, 0x40, 6, "m.erl");
	range(r, 0x80, 0x100, 0, "m:g/0");
}

TEST(module_record)
{
	struct beam_debug_header h;
	struct beam_debug_place pl;
	struct rec r;

	module(&r);
	CHECK_EQ_INT(beam_debug__header(r.b, r.n, &h), 0);
	CHECK_EQ_INT(h.kind, BEAM_DEBUG_MODULE);
	CHECK_EQ_U64(h.base, 0x7f0000001000ULL);
	CHECK_EQ_INT(h.range_cnt, 4);
	CHECK_EQ_INT(h.code_size, 0x100);

	CHECK_EQ_INT(beam_debug__lookup(r.b, r.n, 0x45, &pl), 0);
	CHECK_STR(pl.function, "m:f/1");
	CHECK_STR(pl.file, "m.erl");
	CHECK_EQ_INT(pl.line, 6);
	CHECK_EQ_INT(pl.prologue, 0);
	CHECK_EQ_INT(beam_debug__lookup(r.b, r.n, 0x20, &pl), 0);
	CHECK_EQ_INT(pl.line, 5);
	/* a function's entry: the first line of its body */
	CHECK_EQ_INT(beam_debug__lookup(r.b, r.n, 0x18, &pl), 0);
	CHECK_STR(pl.function, "m:f/1" BEAM_DEBUG_PROLOGUE);
	CHECK_EQ_INT(pl.prologue, 1);
	CHECK_EQ_INT(pl.line, 5);
	CHECK_STR(pl.file, "m.erl");
	/* a function compiled without lines */
	CHECK_EQ_INT(beam_debug__lookup(r.b, r.n, 0x90, &pl), 0);
	CHECK_STR(pl.function, "m:g/0");
	CHECK(pl.file == NULL);
	CHECK_EQ_INT(pl.line, 0);
	CHECK_EQ_INT(beam_debug__lookup(r.b, r.n, 0x100, &pl), -ENOENT);
}

/* The shared code's ranges found by name (the JIT's process_main, global::process_main). */
TEST(range_by_name)
{
	uint32_t lo = 0, hi = 0;
	struct rec r;

	module(&r);
	CHECK_STR(beam_debug__module(r.b, r.n), "m");
	CHECK_EQ_INT(beam_debug__range(r.b, r.n, "m:f/1", &lo, &hi), 0);
	CHECK_EQ_INT(lo, 0x20);
	CHECK_EQ_INT(hi, 0x80);
	/* after a range with lines */
	CHECK_EQ_INT(beam_debug__range(r.b, r.n, "m:g/0", &lo, &hi), 0);
	CHECK_EQ_INT(lo, 0x80);
	CHECK_EQ_INT(hi, 0x100);
	CHECK_EQ_INT(beam_debug__range(r.b, r.n, "m:f", &lo, &hi), -ENOENT);
	/* the last range's name cut */
	CHECK_EQ_INT(beam_debug__range(r.b, r.n - 3, "m:h/0", &lo, &hi), -EINVAL);
	CHECK(beam_debug__module(r.b, 27) == NULL); /* the name cut */
}

TEST(emulator_record)
{
	struct beam_debug_header h;
	uint8_t b[BEAM_DEBUG_HDR_SZ] = { 0 };
	uint64_t exit_cp = 0x7f0000000c30ULL;

	memcpy(b + 16, &exit_cp, 8);
	CHECK_EQ_INT(beam_debug__header(b, sizeof(b), &h), 0);
	CHECK_EQ_INT(h.kind, BEAM_DEBUG_EMULATOR);
	CHECK_EQ_U64(h.normal_exit, exit_cp);
	b[0] = 7;
	CHECK_EQ_INT(beam_debug__header(b, sizeof(b), &h), -EINVAL);
	CHECK_EQ_INT(beam_debug__header(b, sizeof(b) - 1, &h), -EINVAL);
}

TEST(hostile_records)
{
	struct beam_debug_place pl;
	struct rec r;
	uint32_t lo, hi;
	size_t len, i;
	int k;

	module(&r);
	/* every truncation: an error or a place inside the record, never a read past it */
	for (len = 0; len < r.n; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, r.b, len);
		k = beam_debug__lookup(copy, len, 0x45, &pl);
		CHECK(k == 0 || k == -EINVAL || k == -ENOENT);
		k = beam_debug__range(copy, len, "m:g/0", &lo, &hi);
		CHECK(k == 0 || k == -EINVAL || k == -ENOENT);
		beam_debug__module(copy, len);
		free(copy);
	}
	/* random bytes in the ranges */
	srand(31);
	for (i = 0; i < 2000; i++) {
		struct rec c = r;
		size_t at = BEAM_DEBUG_HDR_SZ + (size_t)rand() % (r.n - BEAM_DEBUG_HDR_SZ);

		c.b[at] = (uint8_t)rand();
		k = beam_debug__lookup(c.b, c.n, (uint64_t)rand() % 0x120, &pl);
		CHECK(k == 0 || k == -EINVAL || k == -ENOENT);
		k = beam_debug__range(c.b, c.n, "m:g/0", &lo, &hi);
		CHECK(k == 0 || k == -EINVAL || k == -ENOENT);
	}
}

int main(void)
{
	RUN(module_record);
	RUN(range_by_name);
	RUN(emulator_record);
	RUN(hostile_records);
	return test_summary();
}
