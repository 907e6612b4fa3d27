/* A protobuf wire-format encoder into one growable buffer (pprof, OTLP).
 *
 * Nested messages and packed repeated fields are written in place: pb_buf__begin() writes the
 * tag and reserves PB_LEN_RESERVE bytes for the length, pb_buf__end() writes the real length
 * as a minimal varint and moves the body down over the unused reserve. Begin/end pairs nest
 * like parentheses.
 *
 * Invariants:
 *  - the buffer never grows past max_sz bytes (fixed at pb_buf__init()); trying to fails.
 *  - errors are sticky: after the first failure every call returns that error and writes
 *    nothing, so an encoder may write a whole message and check once (pb_buf__err()).
 *  - fields are written exactly as asked: callers decide whether to skip default values.
 * Errors: -ENOMEM (allocation failed), -EMSGSIZE (max_sz reached, or a length-delimited
 * field over 4 GiB).
 */
#ifndef STACKSCOPE_PROTOBUF_H
#define STACKSCOPE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

enum pb_wire {
	PB_WIRE_VARINT = 0,
	PB_WIRE_I64 = 1,
	PB_WIRE_LEN = 2,
	PB_WIRE_I32 = 5,
};

#define PB_LEN_RESERVE 5 /* bytes of a varint holding any uint32 */

struct pb_buf {
	uint8_t *data; /* owned; len bytes of encoded message */
	size_t len;
	size_t cap;
	size_t max_sz;
	int err; /* 0 or the first -errno */
};

/* Starts an empty buffer that may grow up to max_sz bytes. Does not allocate. */
void pb_buf__init(struct pb_buf *b, size_t max_sz);
/* Frees the data; the buffer may be pb_buf__init()ed again. Accepts a zeroed buffer. */
void pb_buf__free(struct pb_buf *b);
/* 0 or the first error met. */
int pb_buf__err(const struct pb_buf *b);

/* Raw bytes and a raw varint (no tag), e.g. inside a packed field. */
int pb_buf__raw(struct pb_buf *b, const void *data, size_t len);
int pb_buf__raw_varint(struct pb_buf *b, uint64_t v);
int pb_buf__tag(struct pb_buf *b, uint32_t field, enum pb_wire wire);

/* Scalar fields: varint covers uint32/64, bool, enum and (two's complement) int32/64. */
int pb_buf__varint(struct pb_buf *b, uint32_t field, uint64_t v);
int pb_buf__fixed64(struct pb_buf *b, uint32_t field, uint64_t v);
int pb_buf__fixed32(struct pb_buf *b, uint32_t field, uint32_t v);
int pb_buf__bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
/* s may be NULL, encoded as "". */
int pb_buf__string(struct pb_buf *b, uint32_t field, const char *s);

/* Opens a length-delimited field (nested message, packed values); *mark is where its body
 * starts and must be passed to the matching pb_buf__end().
 */
int pb_buf__begin(struct pb_buf *b, uint32_t field, size_t *mark);
int pb_buf__end(struct pb_buf *b, size_t mark);

/* A packed repeated varint field with n values (nothing written when n == 0). */
int pb_buf__packed_varints(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);

#endif
