/* Tests of src/export/protobuf_read.c, the wire-format reader: values written by the encoder
 * (protobuf.c) come back, and hand-made bad bytes (over-long and overflowing varints, lengths
 * past the window, field number 0, groups) are -EBADMSG without reading out of bounds (the
 * bad inputs sit at the end of exact-size heap blocks, so ASan sees any overread).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "export/protobuf.h"
#include "export/protobuf_read.h"
#include "test.h"

/* Runs pb_reader__field over a heap copy of exactly n bytes (kept in *copy, for f.body; the
 * caller frees it); returns its result.
 */
static int field_of(const uint8_t *bytes, size_t n, struct pb_field *f, uint8_t **copy)
{
	struct pb_reader r;
	int err;

	*copy = malloc(n ? n : 1);
	REQUIRE(*copy);
	memcpy(*copy, bytes, n);
	r = pb_reader__make(*copy, n);
	err = pb_reader__field(&r, f);
	if (!err)
		CHECK(r.p <= r.end && f->body.p >= *copy && f->body.end <= r.end);
	return err;
}

TEST(values_written_come_back)
{
	static const uint64_t varints[] = {
		0, 1, 127, 128, 300, UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX
	};
	uint64_t packed[3] = { 5, 1000, UINT64_MAX }, got[3];
	struct pb_reader r, sub;
	struct pb_field f, g;
	struct pb_buf b;
	size_t i, n = 0, mark;

	pb_buf__init(&b, 4096);
	for (i = 0; i < sizeof(varints) / sizeof(varints[0]); i++)
		pb_buf__varint(&b, (uint32_t)i + 1, varints[i]);
	pb_buf__fixed64(&b, 100, 0x0102030405060708ULL);
	pb_buf__fixed32(&b, 101, 0xa1b2c3d4u);
	pb_buf__string(&b, 0x1fffffff, "hello");
	pb_buf__begin(&b, 7, &mark);
	pb_buf__varint(&b, 1, 42);
	pb_buf__packed_varints(&b, 2, packed, 3);
	pb_buf__end(&b, mark);
	REQUIRE(pb_buf__err(&b) == 0);

	r = pb_reader__make(b.data, b.len);
	for (i = 0; i < sizeof(varints) / sizeof(varints[0]); i++) {
		REQUIRE(pb_reader__field(&r, &f) == 0);
		CHECK_EQ_INT(f.num, i + 1);
		CHECK_EQ_INT(f.wire, PB_WIRE_VARINT);
		CHECK_EQ_U64(f.v, varints[i]);
	}
	REQUIRE(pb_reader__field(&r, &f) == 0);
	CHECK(f.num == 100 && f.wire == PB_WIRE_I64);
	CHECK_EQ_U64(f.v, 0x0102030405060708ULL);
	REQUIRE(pb_reader__field(&r, &f) == 0);
	CHECK(f.num == 101 && f.wire == PB_WIRE_I32);
	CHECK_EQ_U64(f.v, 0xa1b2c3d4u);
	REQUIRE(pb_reader__field(&r, &f) == 0);
	CHECK(f.num == 0x1fffffff && f.wire == PB_WIRE_LEN);
	CHECK(pb_reader__left(&f.body) == 5 && !memcmp(f.body.p, "hello", 5));
	REQUIRE(pb_reader__field(&r, &f) == 0);
	CHECK(f.num == 7 && f.wire == PB_WIRE_LEN);
	CHECK_EQ_INT(pb_reader__left(&r), 0); /* the nested message was the last field */

	/* the nested message, through its sub-reader */
	sub = f.body;
	REQUIRE(pb_reader__field(&sub, &g) == 0);
	CHECK(g.num == 1 && g.v == 42);
	REQUIRE(pb_reader__field(&sub, &g) == 0);
	CHECK(g.num == 2 && g.wire == PB_WIRE_LEN);
	CHECK_EQ_INT(pb_reader__left(&sub), 0);
	CHECK(sub.end == f.body.end);
	CHECK_EQ_INT(pb_field__varints(&g, NULL, 0, &n), 0); /* counting only */
	CHECK_EQ_INT(n, 3);
	n = 0;
	CHECK_EQ_INT(pb_field__varints(&g, got, 3, &n), 0);
	CHECK(n == 3 && got[0] == 5 && got[1] == 1000 && got[2] == UINT64_MAX);
	n = 0;
	CHECK_EQ_INT(pb_field__varints(&g, got, 2, &n), -EBADMSG); /* over cap */
	pb_buf__free(&b);
}

TEST(repeated_varints_unpacked_and_other_wires)
{
	const uint8_t one[] = { 0x08, 0x96, 0x01 };              /* field 1 = 150 */
	const uint8_t fixed[] = { 0x0d, 1, 0, 0, 0 };            /* field 1, I32 */
	const uint8_t bad_packed[] = { 0x0a, 0x02, 0x80, 0x80 }; /* varint runs off the body */
	uint64_t v[2] = { 0 };
	uint8_t *c1, *c2, *c3;
	struct pb_field f;
	size_t n = 1;

	REQUIRE(field_of(one, sizeof(one), &f, &c1) == 0);
	CHECK_EQ_INT(pb_field__varints(&f, v, 2, &n), 0);
	CHECK(n == 2 && v[1] == 150);
	CHECK_EQ_INT(pb_field__varints(&f, v, 2, &n), -EBADMSG); /* full */
	n = 0;
	REQUIRE(field_of(fixed, sizeof(fixed), &f, &c2) == 0);
	CHECK_EQ_INT(pb_field__varints(&f, v, 2, &n), 0);
	CHECK_EQ_INT(n, 0);
	REQUIRE(field_of(bad_packed, sizeof(bad_packed), &f, &c3) == 0);
	CHECK_EQ_INT(pb_field__varints(&f, NULL, 0, &n), -EBADMSG);
	free(c1);
	free(c2);
	free(c3);
}

TEST(malformed_fields_are_rejected)
{
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t n;
	} bad[] = {
		{ "empty", { 0 }, 0 },
		{ "truncated tag", { 0x80 }, 1 },
		{ "field number 0", { 0x00, 0x01 }, 2 },
		{ "field number 2^29", { 0x80, 0x80, 0x80, 0x80, 0x10, 0x00 }, 6 },
		{ "start group", { 0x0b }, 1 },
		{ "end group", { 0x0c }, 1 },
		{ "wire type 6", { 0x0e, 0x00 }, 2 },
		{ "wire type 7", { 0x0f, 0x00 }, 2 },
		{ "truncated varint", { 0x08, 0xff, 0xff }, 3 },
		{ "varint of 11 bytes",
		  { 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
		  12 },
		{ "varint over 64 bits",
		  { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 },
		  11 },
		{ "truncated fixed64", { 0x09, 1, 2, 3, 4, 5, 6, 7 }, 8 },
		{ "truncated fixed32", { 0x0d, 1, 2, 3 }, 4 },
		{ "length past the end", { 0x0a, 0x03, 'a', 'b' }, 4 },
		{ "length of 2^64 - 1",
		  { 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
		  11 },
		{ "truncated length", { 0x0a, 0x80 }, 2 },
	};
	const uint8_t max_varint[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x01 };
	struct pb_field f;
	uint8_t *copy;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (field_of(bad[i].bytes, bad[i].n, &f, &copy) != -EBADMSG)
			test__fail("%s: accepted", bad[i].what);
		free(copy);
	}
	/* the largest 10-byte varint is fine */
	REQUIRE(field_of(max_varint, sizeof(max_varint), &f, &copy) == 0);
	CHECK_EQ_U64(f.v, UINT64_MAX);
	free(copy);
}

TEST(nested_reader_stays_in_its_window)
{
	/* field 1 = LEN 2 { field 2 = LEN 5 ... }: the inner length runs past the outer body
	 * although the outer message has bytes enough after it
	 */
	const uint8_t msg[] = { 0x0a, 0x02, 0x12, 0x05, 'a', 'b', 'c', 'd', 'e' };
	struct pb_reader r = pb_reader__make(msg, sizeof(msg)), sub;
	struct pb_field f, g;

	REQUIRE(pb_reader__field(&r, &f) == 0);
	CHECK_EQ_INT(pb_reader__left(&f.body), 2);
	sub = f.body;
	CHECK_EQ_INT(pb_reader__field(&sub, &g), -EBADMSG);
	/* the outer reader goes on after the nested message */
	CHECK_EQ_INT(pb_reader__left(&r), 5);
}

int main(void)
{
	RUN(values_written_come_back);
	RUN(repeated_varints_unpacked_and_other_wires);
	RUN(malformed_fields_are_rejected);
	RUN(nested_reader_stays_in_its_window);
	return test_summary();
}
