/* V8 heap readers (src/interp/v8/v8_heap.c) over objects laid out in this process's own
 * memory (read back through process_vm_readv on our pid, as from a Node process): a
 * sequential string and a line-ends array read in place, and read through the forwarding
 * address a GC leaves in the map word of an object it is moving (the old copy's map word is
 * the new copy's untagged address); a thin string forwarding to a moved string; an external
 * string read where its resource keeps its characters (the word after the resource) when
 * the layout knows that, refused (-ENOTSUP) when it is uncached or the layout does not.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/v8/v8_heap.h"
#include "test.h"

/* Types and offsets of our made-up layout (V8 11.3's shapes: map word first, then fields). */
enum { T_SEQ_ONE = 0x08, T_THIN = 0x05, T_EXTERNAL = 0x0a, T_FIXED = 0xa0, T_NONSTRING = 0x80 };

static const struct v8_layout layout = {
	.first_nonstring = T_NONSTRING,
	.type_fixed_array = T_FIXED,
	.str_repr_mask = 0x7,
	.str_enc_mask = 0x8,
	.str_seq = 0x0,
	.str_cons = 0x1,
	.str_thin = 0x5,
	.str_sliced = 0x3,
	.str_one_byte = 0x8,
	.map_type = 12,
	.str_length = 12,
	.seq_chars = 16,
	.thin_actual = 16,
	.array_length = 8,
	.fixed_data = 16,
};

/* An 8-aligned heap: maps, then objects. */
static uint64_t heap[256] __attribute__((aligned(16)));

static uint64_t tagged(const void *p)
{
	return (uint64_t)(uintptr_t)p + 1;
}

/* A map of instance type t at heap[at]. */
static uint64_t map_of(size_t at, uint16_t t)
{
	memcpy((uint8_t *)&heap[at] + layout.map_type, &t, sizeof(t));
	return tagged(&heap[at]);
}

/* A sequential one-byte string "text" at heap[at]. */
static uint64_t seq_string(size_t at, uint64_t map, const char *text)
{
	int32_t n = (int32_t)strlen(text);

	heap[at] = map;
	memcpy((uint8_t *)&heap[at] + layout.str_length, &n, sizeof(n));
	memcpy((uint8_t *)&heap[at] + layout.seq_chars, text, (size_t)n);
	return tagged(&heap[at]);
}

static int read_chars(uint64_t obj, char *out, size_t cap)
{
	uint8_t *chars = NULL;
	size_t n = 0, csize = 0;
	int err = v8_heap__seq_chars(getpid(), &layout, obj, 4096, &chars, &n, &csize);

	if (!err) {
		if (csize != 1 || n >= cap)
			err = -EINVAL;
		else
			memcpy(out, chars, n), out[n] = '\0';
	}
	free(chars);
	return err;
}

TEST(strings_in_place_and_moved)
{
	uint64_t seq = map_of(0, T_SEQ_ONE), thin = map_of(4, T_THIN), ext = map_of(8, T_EXTERNAL);
	uint64_t moved = seq_string(64, seq, "function gamma(n) {}\n"), old, thin_obj;
	char buf[64];

	memset(heap + 16, 0, 48 * sizeof(uint64_t));
	CHECK_EQ_INT(read_chars(moved, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "function gamma(n) {}\n");
	/* the old copy of a string being moved: stale characters, a forwarding map word */
	old = seq_string(16, seq, "stale stale stale stale");
	heap[16] = moved - 1;
	CHECK_EQ_INT(read_chars(old, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "function gamma(n) {}\n");
	/* a thin string whose actual string is being moved */
	heap[32] = thin;
	thin_obj = tagged(&heap[32]);
	heap[32 + layout.thin_actual / 8] = old;
	CHECK_EQ_INT(read_chars(thin_obj, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "function gamma(n) {}\n");
	/* an external string: no characters in the heap */
	heap[40] = ext;
	CHECK_EQ_INT(read_chars(tagged(&heap[40]), buf, sizeof(buf)), -ENOTSUP);
	/* a map word that is neither a map nor 8-aligned: unreadable, never followed */
	heap[16] = 0x1232;
	CHECK(read_chars(old, buf, sizeof(buf)) != 0);
}

/* External one-byte strings: map, hash and length, resource, resource data. */
TEST(external_strings)
{
	static const char source[] = "'use strict';\nmodule.exports = 1;\n";
	struct v8_layout with = layout;
	uint64_t ext = map_of(8, T_EXTERNAL), uncached = map_of(12, T_EXTERNAL | 0x10), obj;
	int32_t n = (int32_t)strlen(source);
	uint8_t *chars = NULL;
	size_t len = 0, csize = 0;

	with.str_external = 0x2;
	with.str_uncached = 0x10;
	with.ext_data = 24; /* resource at 16, its data's address at 24 */
	heap[200] = ext;
	memcpy((uint8_t *)&heap[200] + layout.str_length, &n, sizeof(n));
	heap[202] = 0xdead0000; /* the resource object: never read */
	heap[203] = (uint64_t)(uintptr_t)source;
	obj = tagged(&heap[200]);
	CHECK_EQ_INT(v8_heap__seq_chars(getpid(), &with, obj, 4096, &chars, &len, &csize), 0);
	CHECK_EQ_U64(len, (uint64_t)n);
	CHECK_EQ_U64(csize, 1);
	CHECK(chars && !memcmp(chars, source, len));
	free(chars);
	chars = NULL;
	/* capped at max */
	CHECK_EQ_INT(v8_heap__seq_chars(getpid(), &with, obj, 5, &chars, &len, &csize), 0);
	CHECK_EQ_U64(len, 5);
	free(chars);
	chars = NULL;
	/* the layout without: refused */
	CHECK_EQ_INT(v8_heap__seq_chars(getpid(), &layout, obj, 4096, &chars, &len, &csize),
		     -ENOTSUP);
	/* no data address: unreadable */
	heap[203] = 0;
	CHECK_EQ_INT(v8_heap__seq_chars(getpid(), &with, obj, 4096, &chars, &len, &csize), -EFAULT);
	/* uncached: its resource keeps the characters, V8 keeps no address of them */
	heap[200] = uncached;
	heap[203] = (uint64_t)(uintptr_t)source;
	CHECK_EQ_INT(v8_heap__seq_chars(getpid(), &with, obj, 4096, &chars, &len, &csize),
		     -ENOTSUP);
	CHECK(!chars);
}

TEST(array_moved)
{
	uint64_t fixed = map_of(0, T_FIXED), data = 0, old, now;
	size_t len = 0;

	/* FixedArray: map, length (Smi), then the elements */
	heap[100] = fixed;
	heap[101] = (uint64_t)3 << 32;
	now = tagged(&heap[100]);
	CHECK_EQ_INT(v8_heap__array(getpid(), &layout, now, T_FIXED, &data, &len), 0);
	CHECK_EQ_U64(len, 3);
	CHECK_EQ_U64(data, (uint64_t)(uintptr_t)&heap[102]);
	heap[120] = now - 1; /* the old copy, forwarded */
	heap[121] = (uint64_t)7 << 32;
	old = tagged(&heap[120]);
	data = len = 0;
	CHECK_EQ_INT(v8_heap__array(getpid(), &layout, old, T_FIXED, &data, &len), 0);
	CHECK_EQ_U64(len, 3);
	CHECK_EQ_U64(data, (uint64_t)(uintptr_t)&heap[102]);
}

int main(void)
{
	RUN(strings_in_place_and_moved);
	RUN(external_strings);
	RUN(array_moved);
	return test_summary();
}
