/* The ProcessContext decoder (process_context_pb.h): two passes of protobuf_read.h over the
 * payload's window, no recursion past AnyValue. Every decision is the header's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "export/process_context_pb.h"
#include "export/protobuf_read.h"

enum {
	PC_RESOURCE = 1,
	PC_ATTRIBUTES = 2,
	RES_ATTRIBUTES = 1,
	KV_KEY = 1,
	KV_VALUE = 2,
	ANY_STRING = 1,
	ANY_BOOL = 2,
	ANY_INT = 3,
	ANY_DOUBLE = 4,
	ANY_ARRAY = 5,
	ARRAY_VALUES = 1,
};

/* A clean C string of s[0..len): valid UTF-8, control bytes as '?'. NULL on ENOMEM. */
static char *clean_string(const uint8_t *s, size_t len)
{
	char *out = utf8__sanitize((const char *)s, len);
	unsigned char *c;

	for (c = (unsigned char *)out; c && *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	return out;
}

/* One AnyValue into a (type and value; no key). 0, 1 (a value not kept), -EBADMSG, -ENOMEM. */
static int read_value(struct pb_reader r, struct pctx_attr *a)
{
	struct pb_field f;
	char num[40];
	int err, kind = 0;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		switch (f.num) {
		case ANY_STRING:
			if (f.wire != PB_WIRE_LEN)
				return -EBADMSG;
			kind = pb_reader__left(&f.body) > PCTX_VALUE_MAX ? -1 : ANY_STRING;
			if (kind > 0) {
				free(a->str);
				a->str = clean_string(f.body.p, pb_reader__left(&f.body));
				if (!a->str)
					return -ENOMEM;
			}
			break;
		case ANY_BOOL:
		case ANY_INT:
			if (f.wire != PB_WIRE_VARINT)
				return -EBADMSG;
			kind = (int)f.num;
			a->b = f.v != 0;
			a->i = (int64_t)f.v;
			break;
		case ANY_DOUBLE:
			if (f.wire != PB_WIRE_I64)
				return -EBADMSG;
			kind = ANY_DOUBLE;
			memcpy(&a->d, &f.v, sizeof(a->d));
			break;
		default: /* array, kvlist, bytes, strindex, unknown: not read */
			kind = -1;
			break;
		}
	}
	/* a oneof: the last member on the wire is the value */
	if (kind == ANY_STRING) {
		a->type = PCTX_STRING;
		return 0;
	}
	if (kind == ANY_BOOL)
		snprintf(num, sizeof(num), "%s", a->b ? "true" : "false");
	else if (kind == ANY_INT)
		snprintf(num, sizeof(num), "%" PRId64, a->i);
	else if (kind == ANY_DOUBLE)
		snprintf(num, sizeof(num), "%.17g", a->d);
	else
		return 1;
	a->type = kind == ANY_BOOL ? PCTX_BOOL : kind == ANY_INT ? PCTX_INT : PCTX_DOUBLE;
	free(a->str);
	a->str = strdup(num);
	return a->str ? 0 : -ENOMEM;
}

/* Whether AnyValue r's value is its member num (a oneof: the last member on the wire counts),
 * that member's body in *body. 1: it is, 0: it is not, -EBADMSG (malformed, or member num not
 * length-delimited).
 */
static int any_value_is(struct pb_reader r, uint32_t num, struct pb_reader *body)
{
	struct pb_field f;
	int err, is = 0;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		if (f.num == num && f.wire != PB_WIRE_LEN)
			return -EBADMSG;
		is = f.num == num;
		if (is)
			*body = f.body;
	}
	return is;
}

/* The name an ArrayValue element (an AnyValue) gives its key index: a clean copy of its string
 * value, or NULL in *name when it is none (another type, empty, too long). 0, -EBADMSG, -ENOMEM.
 */
static int read_key_name(struct pb_reader r, char **name)
{
	struct pb_reader str = { 0 };
	int is = any_value_is(r, ANY_STRING, &str);

	*name = NULL;
	if (is <= 0 || str.p == str.end || pb_reader__left(&str) > PCTX_KEY_MAX)
		return is < 0 ? is : 0;
	*name = clean_string(str.p, pb_reader__left(&str));
	return *name ? 0 : -ENOMEM;
}

/* The key map's AnyValue into out->key_map. 0, 1 (not an array: no map), -EBADMSG, -ENOMEM. */
static int read_key_map(struct pb_reader r, struct pctx_attrs *out)
{
	struct pb_reader array = { 0 };
	struct pb_field f;
	int err = any_value_is(r, ANY_ARRAY, &array);

	if (err <= 0)
		return err < 0 ? err : 1;
	out->key_map = calloc(PCTX_KEY_MAP_MAX, sizeof(*out->key_map));
	if (!out->key_map)
		return -ENOMEM;
	while (array.p < array.end) {
		err = pb_reader__field(&array, &f);
		if (err)
			return err;
		if (f.num != ARRAY_VALUES)
			continue;
		if (f.wire != PB_WIRE_LEN)
			return -EBADMSG;
		if (out->key_map_cnt == PCTX_KEY_MAP_MAX)
			continue; /* no key index reaches it; the rest is still checked */
		err = read_key_name(f.body, &out->key_map[out->key_map_cnt]);
		if (err)
			return err;
		out->key_map_cnt++;
	}
	return 0;
}

static void attr__clear(struct pctx_attr *a)
{
	free(a->key);
	free(a->str);
	memset(a, 0, sizeof(*a));
}

/* One KeyValue appended to out (or counted as skipped). 0, -EBADMSG or -ENOMEM. */
static int read_key_value(struct pb_reader r, uint8_t source, struct pctx_attrs *out)
{
	struct pctx_attr a = { .source = source };
	struct pb_reader key = { 0 }, value = { 0 };
	bool have_key = false, have_value = false;
	struct pb_field f;
	int err = 0;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		if ((f.num == KV_KEY || f.num == KV_VALUE) && f.wire != PB_WIRE_LEN)
			return -EBADMSG;
		if (f.num == KV_KEY) {
			key = f.body;
			have_key = true;
		} else if (f.num == KV_VALUE) {
			value = f.body;
			have_value = true;
		}
	}
	if (source == PCTX_FROM_EXTRA && have_value && !out->key_map &&
	    pb_reader__left(&key) == strlen(PCTX_KEY_MAP) &&
	    !memcmp(key.p, PCTX_KEY_MAP, strlen(PCTX_KEY_MAP))) {
		err = read_key_map(value, out);
		if (err <= 0)
			return err; /* the caller clears out, half-read map included */
	}
	if (!have_key || !have_value || key.p == key.end || pb_reader__left(&key) > PCTX_KEY_MAX ||
	    out->cnt >= PCTX_ATTR_MAX)
		goto skip;
	a.key = clean_string(key.p, pb_reader__left(&key));
	if (!a.key) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (pctx_attrs__find(out, a.key))
		goto skip;
	err = read_value(value, &a);
	if (err < 0)
		goto cleanup;
	if (err > 0)
		goto skip;
	out->attrs[out->cnt++] = a;
	return 0;
skip:
	/* a value not kept must still be well formed: check it as read_value would */
	if (have_value) {
		struct pctx_attr tmp = { 0 };

		err = read_value(value, &tmp);
		attr__clear(&tmp);
		if (err < 0)
			goto cleanup;
	}
	err = 0;
	out->skipped++;
cleanup:
	attr__clear(&a);
	return err;
}

static int read_resource(struct pb_reader r, struct pctx_attrs *out)
{
	struct pb_field f;
	int err;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		if (f.num != RES_ATTRIBUTES)
			continue; /* dropped_attributes_count, entity_refs */
		if (f.wire != PB_WIRE_LEN)
			return -EBADMSG;
		err = read_key_value(f.body, PCTX_FROM_RESOURCE, out);
		if (err)
			return err;
	}
	return 0;
}

int pctx_attrs__decode(const void *buf, size_t len, struct pctx_attrs *out)
{
	struct pb_reader r = pb_reader__make(buf, len);
	struct pb_field f;
	int pass, err = 0;

	memset(out, 0, sizeof(*out));
	if (len > PCTX_PAYLOAD_MAX || (len && !buf))
		return -EBADMSG;
	out->attrs = calloc(PCTX_ATTR_MAX, sizeof(*out->attrs));
	if (!out->attrs)
		return -ENOMEM;
	/* the resource's attributes first, wherever the fields are on the wire */
	for (pass = PC_RESOURCE; !err && pass <= PC_ATTRIBUTES; pass++) {
		r = pb_reader__make(buf, len);
		while (!err && r.p < r.end) {
			err = pb_reader__field(&r, &f);
			if (err || f.num != (uint32_t)pass)
				continue;
			if (f.wire != PB_WIRE_LEN)
				err = -EBADMSG;
			else if (pass == PC_RESOURCE)
				err = read_resource(f.body, out);
			else
				err = read_key_value(f.body, PCTX_FROM_EXTRA, out);
		}
	}
	if (err)
		pctx_attrs__clear(out);
	return err;
}

void pctx_attrs__clear(struct pctx_attrs *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->cnt; i++)
		attr__clear(&a->attrs[i]);
	free(a->attrs);
	for (i = 0; i < a->key_map_cnt; i++)
		free(a->key_map[i]);
	free(a->key_map);
	memset(a, 0, sizeof(*a));
}

const struct pctx_attr *pctx_attrs__find(const struct pctx_attrs *a, const char *key)
{
	size_t i;

	for (i = 0; a && i < a->cnt; i++) {
		if (!strcmp(a->attrs[i].key, key))
			return &a->attrs[i];
	}
	return NULL;
}

int pctx_attrs__copy(struct pctx_attrs *dst, const struct pctx_attrs *src)
{
	size_t i;

	memset(dst, 0, sizeof(*dst));
	dst->skipped = src->skipped;
	if (src->key_map) {
		dst->key_map = calloc(PCTX_KEY_MAP_MAX, sizeof(*dst->key_map));
		if (!dst->key_map)
			return -ENOMEM;
		for (i = 0; i < src->key_map_cnt; i++) {
			if (src->key_map[i] && !(dst->key_map[i] = strdup(src->key_map[i]))) {
				dst->key_map_cnt = i;
				pctx_attrs__clear(dst);
				return -ENOMEM;
			}
		}
		dst->key_map_cnt = src->key_map_cnt;
	}
	if (!src->cnt)
		return 0;
	dst->attrs = calloc(src->cnt, sizeof(*dst->attrs));
	if (!dst->attrs) {
		pctx_attrs__clear(dst);
		return -ENOMEM;
	}
	for (i = 0; i < src->cnt; i++) {
		struct pctx_attr *d = &dst->attrs[dst->cnt];

		*d = src->attrs[i];
		d->key = strdup(src->attrs[i].key);
		d->str = strdup(src->attrs[i].str);
		if (!d->key || !d->str) {
			free(d->key);
			free(d->str);
			memset(d, 0, sizeof(*d));
			pctx_attrs__clear(dst);
			return -ENOMEM;
		}
		dst->cnt++;
	}
	return 0;
}
