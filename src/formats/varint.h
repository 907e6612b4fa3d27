/* LEB128 varints (7 bits a byte, the top bit says "more", least significant group first): the
 * one encoding of protobuf, Go's pc-value tables, V8's source-position tables and the store's
 * blobs. Readers are bounded by their buffer and refuse an overlong varint: at most 10 bytes,
 * the 10th holding bit 63 only. (CPython's line tables use 6-bit groups: python_lines.c.)
 */
#ifndef STACKSCOPE_VARINT_H
#define STACKSCOPE_VARINT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_SZ 10

/* The varint at buf[*pos] of buf[0..len): 0 and *pos past it, or -EBADMSG (the buffer ends
 * inside it, or it is overlong) with *pos somewhere inside it.
 */
static inline int varint__get(const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t acc = 0;
	unsigned int shift = 0;

	while (*pos < len) {
		uint8_t b = buf[(*pos)++];

		if (shift == 63 && b > 1)
			return -EBADMSG;
		acc |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = acc;
			return 0;
		}
		shift += 7;
	}
	return -EBADMSG;
}

/* Writes v at out (room for VARINT_MAX_SZ bytes); returns the bytes written (1-10). */
static inline size_t varint__put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Zigzag: 0, -1, 1, -2 ... as 0, 1, 2, 3 ... */
static inline int64_t zigzag__decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
