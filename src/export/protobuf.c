/* Protobuf wire-format encoder (see protobuf.h). The buffer doubles up to max_sz; a nested
 * field's length is patched in by pb_buf__end(), which shifts the body by at most
 * PB_LEN_RESERVE - 1 bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "export/protobuf.h"
#include "formats/varint.h"

void pb_buf__init(struct pb_buf *b, size_t max_sz)
{
	memset(b, 0, sizeof(*b));
	b->max_sz = max_sz;
}

void pb_buf__free(struct pb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

int pb_buf__err(const struct pb_buf *b)
{
	return b->err;
}

static int pb_buf__fail(struct pb_buf *b, int err)
{
	if (!b->err)
		b->err = err;
	return b->err;
}

/* Ensures room for n more bytes. */
static int pb_buf__reserve(struct pb_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (n > b->max_sz || b->len > b->max_sz - n)
		return pb_buf__fail(b, -EMSGSIZE);
	if (array__reserve_bounded((void **)&b->data, &b->cap, b->len + n, 1, 256, b->max_sz))
		return pb_buf__fail(b, -ENOMEM);
	return 0;
}

int pb_buf__raw(struct pb_buf *b, const void *data, size_t len)
{
	int err = pb_buf__reserve(b, len);

	if (err)
		return err;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

int pb_buf__raw_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t enc[VARINT_MAX_SZ];

	return pb_buf__raw(b, enc, varint__put(enc, v));
}

int pb_buf__tag(struct pb_buf *b, uint32_t field, enum pb_wire wire)
{
	return pb_buf__raw_varint(b, ((uint64_t)field << 3) | wire);
}

int pb_buf__varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_buf__tag(b, field, PB_WIRE_VARINT);
	return pb_buf__raw_varint(b, v);
}

/* A fixed-width field: n little-endian bytes of v. */
static int pb_buf__fixed(struct pb_buf *b, uint32_t field, enum pb_wire wire, uint64_t v, size_t n)
{
	uint8_t le[8];
	size_t i;

	for (i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pb_buf__tag(b, field, wire);
	return pb_buf__raw(b, le, n);
}

int pb_buf__fixed64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	return pb_buf__fixed(b, field, PB_WIRE_I64, v, 8);
}

int pb_buf__fixed32(struct pb_buf *b, uint32_t field, uint32_t v)
{
	return pb_buf__fixed(b, field, PB_WIRE_I32, v, 4);
}

int pb_buf__bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_buf__tag(b, field, PB_WIRE_LEN);
	pb_buf__raw_varint(b, len);
	return pb_buf__raw(b, data, len);
}

int pb_buf__string(struct pb_buf *b, uint32_t field, const char *s)
{
	return pb_buf__bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

int pb_buf__begin(struct pb_buf *b, uint32_t field, size_t *mark)
{
	int err;

	*mark = 0;
	pb_buf__tag(b, field, PB_WIRE_LEN);
	err = pb_buf__reserve(b, PB_LEN_RESERVE);
	if (err)
		return err;
	b->len += PB_LEN_RESERVE;
	*mark = b->len;
	return 0;
}

int pb_buf__end(struct pb_buf *b, size_t mark)
{
	uint8_t len_buf[VARINT_MAX_SZ];
	size_t body, n;

	if (b->err)
		return b->err;
	if (mark < PB_LEN_RESERVE || mark > b->len)
		return pb_buf__fail(b, -EINVAL);
	body = b->len - mark;
	if (body > UINT32_MAX)
		return pb_buf__fail(b, -EMSGSIZE);
	n = varint__put(len_buf, body);
	memcpy(b->data + mark - PB_LEN_RESERVE, len_buf, n);
	if (n < PB_LEN_RESERVE) {
		memmove(b->data + mark - PB_LEN_RESERVE + n, b->data + mark, body);
		b->len -= PB_LEN_RESERVE - n;
	}
	return 0;
}

int pb_buf__packed_varints(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t mark, i;

	if (!n)
		return b->err;
	pb_buf__begin(b, field, &mark);
	for (i = 0; i < n; i++)
		pb_buf__raw_varint(b, v[i]);
	return pb_buf__end(b, mark);
}
