/* Bounded readers of V8 heap objects (v8_heap.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/v8/v8_heap.h"

#define V8_ARRAY_MAX (1u << 24) /* elements of an array we accept */

static int64_t smi(uint64_t v)
{
	return (int64_t)v >> 32;
}

/* An object a GC is moving: while a scavenge or a compaction runs (the process stopped in it
 * while we read), the old copy's map word is the address of its new copy, untagged (V8's
 * MapWord::FromForwardingAddress; its other words are still the object's). The new copy's
 * tagged address, or obj itself when it is not being moved (or unreadable: the caller's read
 * fails). Measured: a script's source forwarded at a run's first reads cost its frames every
 * line until the next try, 512 lookups later (20 to 52 % of a test_node case's samples).
 */
static uint64_t forwarded(pid_t pid, uint64_t obj)
{
	uint64_t word;

	if ((obj & 3) != 1 || interp__read_u64(pid, obj - 1, &word) || !word || (word & 7))
		return obj;
	return word + 1;
}

int v8_heap__type(pid_t pid, const struct v8_layout *l, uint64_t obj, uint16_t *type)
{
	uint64_t map;

	if ((obj & 3) != 1 || interp__read_u64(pid, obj - 1, &map) || (map & 3) != 1 ||
	    interp__read_mem(pid, map - 1 + l->map_type, type, sizeof(*type)))
		return -EFAULT;
	return 0;
}

/* UTF-8 being built: at most cap - 1 bytes, cut at a character. */
struct utf8_out {
	char *buf;
	size_t cap, len;
	uint32_t high; /* a pending high surrogate */
};

static void put_cp(struct utf8_out *o, uint32_t c)
{
	char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18);
		b[1] = (char)(0x80 | (c >> 12 & 0x3f));
		b[2] = (char)(0x80 | (c >> 6 & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	if (o->len + n >= o->cap)
		return;
	memcpy(o->buf + o->len, b, n);
	o->len += n;
}

/* One UTF-16 code unit (or Latin-1 character); lone surrogates become U+FFFD. */
static void put_unit(struct utf8_out *o, uint32_t u)
{
	if (u >= 0xd800 && u < 0xdc00) {
		if (o->high)
			put_cp(o, 0xfffd);
		o->high = u;
		return;
	}
	if (u >= 0xdc00 && u < 0xe000 && o->high) {
		put_cp(o, 0x10000 + ((o->high - 0xd800) << 10) + (u - 0xdc00));
		o->high = 0;
		return;
	}
	if (o->high)
		put_cp(o, 0xfffd);
	o->high = 0;
	put_cp(o, u >= 0xd800 && u < 0xe000 ? 0xfffd : u);
}

/* Characters [start, start + count) of the string obj; count is cut to what fits. */
static int append(pid_t pid, const struct v8_layout *l, uint64_t obj, uint32_t start,
		  uint32_t count, struct utf8_out *o, int depth)
{
	uint8_t chars[V8_STRING_MAX * 2];
	uint64_t a, b;
	uint16_t type;
	int32_t len;
	size_t csize, i;
	int err;

	if (depth > V8_STRING_DEPTH)
		return -ELOOP;
	if ((err = v8_heap__type(pid, l, obj, &type)))
		return err;
	if (type >= l->first_nonstring)
		return -EINVAL;
	if (interp__read_mem(pid, obj - 1 + l->str_length, &len, sizeof(len)) || len < 0)
		return -EFAULT;
	if (start > (uint32_t)len)
		return -EINVAL;
	if (count > (uint32_t)len - start)
		count = (uint32_t)len - start;
	if ((type & l->str_repr_mask) == l->str_seq) {
		csize = (type & l->str_enc_mask) == l->str_one_byte ? 1 : 2;
		if (count > V8_STRING_MAX)
			count = V8_STRING_MAX;
		if (interp__read_mem(pid, obj - 1 + l->seq_chars + start * csize, chars,
				     count * csize))
			return -EFAULT;
		for (i = 0; i < count; i++)
			put_unit(o, csize == 1 ? chars[i]
					       : (uint32_t)(chars[2 * i] | chars[2 * i + 1] << 8));
		return 0;
	}
	if ((type & l->str_repr_mask) == l->str_cons) {
		int32_t flen;

		if (interp__read_u64(pid, obj - 1 + l->cons_first, &a) ||
		    interp__read_u64(pid, obj - 1 + l->cons_second, &b) ||
		    interp__read_mem(pid, a - 1 + l->str_length, &flen, sizeof(flen)) || flen < 0)
			return -EFAULT;
		if (start < (uint32_t)flen) {
			uint32_t n = count < (uint32_t)flen - start ? count
								    : (uint32_t)flen - start;

			if ((err = append(pid, l, a, start, n, o, depth + 1)))
				return err;
			start = (uint32_t)flen;
			count -= n;
		}
		return count ? append(pid, l, b, start - (uint32_t)flen, count, o, depth + 1) : 0;
	}
	if ((type & l->str_repr_mask) == l->str_thin) {
		if (interp__read_u64(pid, obj - 1 + l->thin_actual, &a))
			return -EFAULT;
		return append(pid, l, a, start, count, o, depth + 1);
	}
	if ((type & l->str_repr_mask) == l->str_sliced) {
		if (interp__read_u64(pid, obj - 1 + l->sliced_parent, &a) ||
		    interp__read_u64(pid, obj - 1 + l->sliced_offset, &b) || smi(b) < 0)
			return -EFAULT;
		return append(pid, l, a, start + (uint32_t)smi(b), count, o, depth + 1);
	}
	return -ENOTSUP; /* external strings: their characters live outside the heap */
}

int v8_heap__string(pid_t pid, const struct v8_layout *l, uint64_t obj, char *out, size_t cap)
{
	struct utf8_out o = { .buf = out, .cap = cap };
	int err;

	if (!cap)
		return -EINVAL;
	err = append(pid, l, obj, 0, V8_STRING_MAX, &o, 0);
	if (o.high)
		put_cp(&o, 0xfffd);
	out[o.len] = '\0';
	return err;
}

int v8_heap__seq_chars(pid_t pid, const struct v8_layout *l, uint64_t obj, size_t max,
		       uint8_t **out, size_t *len, size_t *char_size)
{
	uint64_t chars;
	uint16_t type;
	int32_t n;
	uint8_t *buf;
	size_t csize;
	int err;

	obj = forwarded(pid, obj);
	if ((err = v8_heap__type(pid, l, obj, &type)))
		return err;
	/* A thin string (a string V8 internalized since: until the next GC rewrites the
	 * references, a script's source is one) forwards to its actual, sequential string.
	 */
	if (type < l->first_nonstring && (type & l->str_repr_mask) == l->str_thin &&
	    (interp__read_u64(pid, obj - 1 + l->thin_actual, &obj) ||
	     (err = v8_heap__type(pid, l, obj = forwarded(pid, obj), &type))))
		return err ? err : -EFAULT;
	if (type >= l->first_nonstring)
		return -ENOTSUP;
	if ((type & l->str_repr_mask) == l->str_seq) {
		chars = obj - 1 + l->seq_chars;
	} else if (l->ext_data && (type & l->str_repr_mask) == l->str_external &&
		   !(type & l->str_uncached)) {
		if (interp__read_u64(pid, obj - 1 + l->ext_data, &chars) || !chars)
			return -EFAULT;
	} else {
		return -ENOTSUP;
	}
	if (interp__read_mem(pid, obj - 1 + l->str_length, &n, sizeof(n)) || n < 0)
		return -EFAULT;
	csize = (type & l->str_enc_mask) == l->str_one_byte ? 1 : 2;
	if ((size_t)n > max)
		n = (int32_t)max;
	buf = malloc((size_t)n * csize + 1);
	if (!buf)
		return -ENOMEM;
	if (interp__read_mem(pid, chars, buf, (size_t)n * csize)) {
		free(buf);
		return -EFAULT;
	}
	*out = buf;
	*len = (size_t)n;
	*char_size = csize;
	return 0;
}

int v8_heap__array(pid_t pid, const struct v8_layout *l, uint64_t obj, uint16_t type,
		   uint64_t *data, size_t *len)
{
	uint16_t t;
	uint64_t n;
	int err;

	obj = forwarded(pid, obj);
	if ((err = v8_heap__type(pid, l, obj, &t)))
		return err;
	if (t != type)
		return -EINVAL;
	if (interp__read_u64(pid, obj - 1 + l->array_length, &n) || (n & 1) || smi(n) < 0 ||
	    smi(n) > V8_ARRAY_MAX)
		return -EFAULT;
	*len = (size_t)smi(n);
	*data = obj - 1 + (type == l->type_fixed_array ? l->fixed_data : l->array_length + 8);
	return 0;
}
