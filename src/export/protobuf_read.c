/* Protobuf wire-format reader (see protobuf_read.h). */
#include <errno.h>

#include "export/protobuf_read.h"
#include "formats/varint.h"

#define PB_FIELD_MAX 0x1fffffffu

int pb_reader__varint(struct pb_reader *r, uint64_t *v)
{
	size_t pos = 0;
	int err = varint__get(r->p, pb_reader__left(r), &pos, v);

	r->p += pos;
	return err;
}

int pb_reader__field(struct pb_reader *r, struct pb_field *f)
{
	uint64_t tag, len;
	size_t n, i;
	int err;

	err = pb_reader__varint(r, &tag);
	if (err)
		return err;
	if (tag >> 3 == 0 || tag >> 3 > PB_FIELD_MAX)
		return -EBADMSG;
	f->num = (uint32_t)(tag >> 3);
	f->wire = (uint32_t)(tag & 7);
	f->v = 0;
	f->body.p = f->body.end = r->p;
	switch (f->wire) {
	case PB_WIRE_VARINT:
		return pb_reader__varint(r, &f->v);
	case PB_WIRE_I64:
	case PB_WIRE_I32:
		n = f->wire == PB_WIRE_I64 ? 8 : 4;
		if (pb_reader__left(r) < n)
			return -EBADMSG;
		for (i = 0; i < n; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 0;
	case PB_WIRE_LEN:
		err = pb_reader__varint(r, &len);
		if (err)
			return err;
		if (len > pb_reader__left(r))
			return -EBADMSG;
		f->body.p = r->p;
		f->body.end = r->p + len;
		r->p += len;
		return 0;
	default: /* groups (deprecated) and reserved wire types */
		return -EBADMSG;
	}
}

/* Appends v at dst[*n] (dst NULL: counts it). */
static int varints__put(uint64_t v, uint64_t *dst, size_t cap, size_t *n)
{
	if (dst) {
		if (*n >= cap)
			return -EBADMSG;
		dst[*n] = v;
	}
	(*n)++;
	return 0;
}

int pb_field__varints(const struct pb_field *f, uint64_t *dst, size_t cap, size_t *n)
{
	struct pb_reader r = f->body;
	uint64_t v;
	int err;

	if (f->wire == PB_WIRE_VARINT)
		return varints__put(f->v, dst, cap, n);
	if (f->wire != PB_WIRE_LEN)
		return 0;
	while (r.p < r.end) {
		err = pb_reader__varint(&r, &v);
		err = err ?: varints__put(v, dst, cap, n);
		if (err)
			return err;
	}
	return 0;
}
