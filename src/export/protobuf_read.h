/* A protobuf wire-format reader over borrowed bytes (pprof files, test decoders, gRPC
 * answers): the counterpart of the encoder in protobuf.h.
 *
 * A reader is a window [p, end) on a message; reading a field advances p past it. A
 * length-delimited field's body is itself a reader (a nested message is read with it), so no
 * read ever leaves the window of the message it belongs to.
 *
 *	while (r.p < r.end) {
 *		err = pb_reader__field(&r, &f);
 *		if (err)
 *			return err;
 *		if (f.num == 1 && f.wire == PB_WIRE_LEN)
 *			err = read_nested(f.body);
 *	}
 *
 * Untrusted input: every length is checked against the window, varints longer than 10
 * bytes or over 64 bits are rejected, so is a field number of 0 or over 2^29 - 1, and the
 * deprecated group wire types (3, 4) and the reserved ones (6, 7). Fields of known wire types
 * are returned whatever their number: skipping an unknown field is not reading it.
 * Errors: -EBADMSG (malformed or truncated). The reader does not allocate.
 */
#ifndef STACKSCOPE_PROTOBUF_READ_H
#define STACKSCOPE_PROTOBUF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "export/protobuf.h"

struct pb_reader {
	const uint8_t *p, *end; /* borrowed; p == end: nothing left */
};

struct pb_field {
	uint32_t num;          /* 1 .. 2^29 - 1 */
	uint32_t wire;         /* enum pb_wire */
	uint64_t v;            /* VARINT, I64 and I32 (little-endian) values; 0 for LEN */
	struct pb_reader body; /* LEN: the body, inside the reader's window; else empty */
};

/* A reader over len bytes at data (borrowed for as long as the reader is used). */
static inline struct pb_reader pb_reader__make(const void *data, size_t len)
{
	struct pb_reader r = { data, (const uint8_t *)data + len };

	return r;
}

static inline size_t pb_reader__left(const struct pb_reader *r)
{
	return (size_t)(r->end - r->p);
}

/* One varint (no tag), e.g. inside a packed field. 0 or -EBADMSG.
 * After an error the reader's position is unspecified: stop reading with it.
 */
int pb_reader__varint(struct pb_reader *r, uint64_t *v);

/* The next field of a reader that is not empty. 0 or -EBADMSG. */
int pb_reader__field(struct pb_reader *r, struct pb_field *f);

/* Values of a repeated varint field, packed (LEN) or one unpacked (VARINT), appended at
 * dst[*n], *n advanced. With dst NULL they are only counted (cap ignored). A field of another
 * wire type adds nothing. 0 or -EBADMSG (a bad varint, or more than cap values in dst).
 */
int pb_field__varints(const struct pb_field *f, uint64_t *dst, size_t cap, size_t *n);

#endif
