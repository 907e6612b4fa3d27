/* pprof reader and re-writer (see pprof_read.h for what is kept and what "valid" means).
 *
 * Decoding runs twice over the message: the first pass only counts (top-level items, and the
 * nested repeated items of all samples and locations together, and the string bytes), the
 * second fills arrays allocated once with those counts. Nested repeated items live in shared
 * pools (one per kind); an item's slice is contiguous because items are decoded one at a
 * time. Both passes run the same code, so they see the same counts; the fill pass still
 * checks every pool bound.
 *
 * Invariants after a successful decode: every string, id and reference is valid (checked
 * once, after the fill pass); `index` holds the (id, array index) pairs of mappings,
 * locations and functions sorted by id. Strings added later by pprof_profile__intern() and
 * lines set by pprof_profile__set_lines() are owned one by one; the decoded ones live in the
 * arena and the pools.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/id_index.h"
#include "export/pprof.h"
#include "export/pprof_fields.h"
#include "export/pprof_read.h"
#include "export/protobuf_read.h"

#define CHUNK_MAX ((size_t)1 << 30) /* zlib counts in uInt */

struct id_slot {
	uint64_t id;
	size_t idx;
};

struct pprof_index {
	struct id_slot *mappings, *locations, *functions; /* sorted by id */
	size_t function_slot_cap;
	size_t function_cap;  /* capacity of profile->functions */
	size_t string_cap;    /* capacity of profile->strings */
	size_t arena_str_cnt; /* strings[0..arena_str_cnt) live in arena */
	char *arena;
	void *pools[4];          /* location ids, values, labels, lines */
	struct id_index str_idx; /* id: string idx + 1; built on the first intern */
	struct id_index fn_idx;  /* id: function array idx + 1; built on the first add */
};

/* ---- decoding ---- */

enum { POOL_LOCATION_IDS, POOL_VALUES, POOL_LABELS, POOL_LINES, POOL_CNT };

struct pprof_dec {
	struct pprof_profile *p;
	bool fill;                 /* second pass */
	size_t pool_cnt[POOL_CNT]; /* counted in the first pass, filled up to in the second */
	size_t pool_cap[POOL_CNT];
	size_t sample_type_i, sample_i, mapping_i, location_i, function_i, string_i, comment_i;
	size_t str_bytes, arena_used;
};

/* Where a message's scalar (VARINT) fields go, indexed by field number: the member's offset
 * and size (8: an int64_t or uint64_t, set to the value's bits; 1: a bool, set to v != 0; 0:
 * not a scalar field).
 */
struct scalar_slot {
	uint8_t sz;
	uint16_t off;
};

/* S(mapping, id): the slot of member id of struct pprof_mapping */
#define S(msg, member)                                                                          \
	{                                                                                       \
		sizeof(((struct pprof_##msg *)0)->member), offsetof(struct pprof_##msg, member) \
	}
#define SCALARS_OF(table) table, sizeof(table) / sizeof(table[0])

static const struct scalar_slot value_type_slots[] = {
	[VALUE_TYPE_TYPE] = S(value_type, type), [VALUE_TYPE_UNIT] = S(value_type, unit)
};
static const struct scalar_slot label_slots[] = { [LABEL_KEY] = S(label, key),
						  [LABEL_STR] = S(label, str),
						  [LABEL_NUM] = S(label, num),
						  [LABEL_NUM_UNIT] = S(label, num_unit) };
static const struct scalar_slot mapping_slots[] = {
	[MAPPING_ID] = S(mapping, id),
	[MAPPING_MEMORY_START] = S(mapping, memory_start),
	[MAPPING_MEMORY_LIMIT] = S(mapping, memory_limit),
	[MAPPING_FILE_OFFSET] = S(mapping, file_offset),
	[MAPPING_FILENAME] = S(mapping, filename),
	[MAPPING_BUILD_ID] = S(mapping, build_id),
	[MAPPING_HAS_FUNCTIONS] = S(mapping, has_functions),
	[MAPPING_HAS_FILENAMES] = S(mapping, has_filenames),
	[MAPPING_HAS_LINE_NUMBERS] = S(mapping, has_line_numbers),
	[MAPPING_HAS_INLINE_FRAMES] = S(mapping, has_inline_frames)
};
static const struct scalar_slot line_slots[] = { [LINE_FUNCTION_ID] = S(line, function_id),
						 [LINE_LINE] = S(line, line),
						 [LINE_COLUMN] = S(line, column) };
static const struct scalar_slot location_slots[] = {
	[LOCATION_ID] = S(location, id),
	[LOCATION_MAPPING_ID] = S(location, mapping_id),
	[LOCATION_ADDRESS] = S(location, address),
	[LOCATION_IS_FOLDED] = S(location, is_folded)
};
static const struct scalar_slot function_slots[] = {
	[FUNCTION_ID] = S(function, id),
	[FUNCTION_NAME] = S(function, name),
	[FUNCTION_SYSTEM_NAME] = S(function, system_name),
	[FUNCTION_FILENAME] = S(function, filename),
	[FUNCTION_START_LINE] = S(function, start_line)
};
static const struct scalar_slot profile_slots[] = {
	[PROFILE_DROP_FRAMES] = S(profile, drop_frames),
	[PROFILE_KEEP_FRAMES] = S(profile, keep_frames),
	[PROFILE_TIME_NANOS] = S(profile, time_nanos),
	[PROFILE_DURATION_NANOS] = S(profile, duration_nanos),
	[PROFILE_PERIOD] = S(profile, period),
	[PROFILE_DEFAULT_SAMPLE_TYPE] = S(profile, default_sample_type),
	[PROFILE_DOC_URL] = S(profile, doc_url)
};

/* Sets the member of obj that slots[0..n) names for f, when f is a VARINT; else nothing. */
static void dec__scalar(void *obj, const struct scalar_slot *slots, size_t n,
			const struct pb_field *f)
{
	bool flag = f->v != 0;

	if (f->wire != PB_WIRE_VARINT || f->num >= n)
		return;
	if (slots[f->num].sz == sizeof(f->v)) /* int64_t members take the two's complement bits */
		memcpy((char *)obj + slots[f->num].off, &f->v, sizeof(f->v));
	else if (slots[f->num].sz == sizeof(flag))
		memcpy((char *)obj + slots[f->num].off, &flag, sizeof(flag));
}

/* Decodes a message of scalars only (a value type, a label, a line, a mapping, a function). */
static int dec__scalars(struct pb_reader r, void *obj, const struct scalar_slot *slots, size_t n)
{
	struct pb_field f;
	int err;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		dec__scalar(obj, slots, n, &f);
	}
	return 0;
}

/* The next item of an array counted in the first pass: arr[*i] in the fill pass (NULL past
 * cnt, a message that grew between the passes), else scratch; zeroed, *i advanced.
 */
static void *dec__next(const struct pprof_dec *d, void *arr, size_t cnt, size_t *i, size_t elem_sz,
		       void *scratch)
{
	void *item = scratch;

	if (d->fill) {
		if (*i >= cnt)
			return NULL;
		item = (char *)arr + *i * elem_sz;
	}
	(*i)++;
	memset(item, 0, elem_sz);
	return item;
}

/* The next item of pool k (see dec__next). */
static void *dec__pool_next(struct pprof_dec *d, int k, size_t elem_sz, void *scratch)
{
	return dec__next(d, d->p->index->pools[k], d->pool_cap[k], &d->pool_cnt[k], elem_sz,
			 scratch);
}

static int dec__sample(struct pprof_dec *d, struct pb_reader r)
{
	struct pprof_sample sample_scratch, *s;
	struct pprof_label label_scratch, *l;
	uint64_t *ids = NULL, *values = NULL;
	size_t ids0 = d->pool_cnt[POOL_LOCATION_IDS], values0 = d->pool_cnt[POOL_VALUES];
	size_t labels0 = d->pool_cnt[POOL_LABELS];
	struct pb_field f;
	int err;

	s = dec__next(d, d->p->samples, d->p->sample_cnt, &d->sample_i, sizeof(*s),
		      &sample_scratch);
	if (!s)
		return -EBADMSG;
	if (d->fill) {
		ids = d->p->index->pools[POOL_LOCATION_IDS];
		values = d->p->index->pools[POOL_VALUES];
	}
	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		switch (f.num) {
		case SAMPLE_LOCATION_ID:
			err = pb_field__varints(&f, ids, d->pool_cap[POOL_LOCATION_IDS],
						&d->pool_cnt[POOL_LOCATION_IDS]);
			break;
		case SAMPLE_VALUE:
			err = pb_field__varints(&f, values, d->pool_cap[POOL_VALUES],
						&d->pool_cnt[POOL_VALUES]);
			break;
		case SAMPLE_LABEL:
			if (f.wire != PB_WIRE_LEN)
				break;
			l = dec__pool_next(d, POOL_LABELS, sizeof(*l), &label_scratch);
			err = l ? dec__scalars(f.body, l, SCALARS_OF(label_slots)) : -EBADMSG;
			break;
		}
		if (err)
			return err;
	}
	if (d->fill) {
		s->location_ids = ids + ids0;
		s->location_cnt = d->pool_cnt[POOL_LOCATION_IDS] - ids0;
		s->values = (int64_t *)values + values0;
		s->value_cnt = d->pool_cnt[POOL_VALUES] - values0;
		s->labels = (struct pprof_label *)d->p->index->pools[POOL_LABELS] + labels0;
		s->label_cnt = d->pool_cnt[POOL_LABELS] - labels0;
	}
	return 0;
}

static int dec__location(struct pprof_dec *d, struct pb_reader r)
{
	struct pprof_location loc_scratch, *loc;
	struct pprof_line line_scratch, *l;
	size_t lines0 = d->pool_cnt[POOL_LINES];
	struct pb_field f;
	int err = 0;

	loc = dec__next(d, d->p->locations, d->p->location_cnt, &d->location_i, sizeof(*loc),
			&loc_scratch);
	if (!loc)
		return -EBADMSG;
	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		if (f.num != LOCATION_LINE || f.wire != PB_WIRE_LEN) {
			dec__scalar(loc, SCALARS_OF(location_slots), &f);
			continue;
		}
		l = dec__pool_next(d, POOL_LINES, sizeof(*l), &line_scratch);
		err = l ? dec__scalars(f.body, l, SCALARS_OF(line_slots)) : -EBADMSG;
		if (err)
			return err;
	}
	if (d->fill) {
		loc->lines = (struct pprof_line *)d->p->index->pools[POOL_LINES] + lines0;
		loc->line_cnt = d->pool_cnt[POOL_LINES] - lines0;
	}
	return 0;
}

/* A mapping or a function: a top-level item of scalars only. */
static int dec__item(struct pprof_dec *d, struct pb_reader r, void *arr, size_t cnt, size_t *i,
		     size_t elem_sz, const struct scalar_slot *slots, size_t n)
{
	union {
		struct pprof_mapping m;
		struct pprof_function fn;
	} scratch;
	void *item = dec__next(d, arr, cnt, i, elem_sz, &scratch);

	return item ? dec__scalars(r, item, slots, n) : -EBADMSG;
}

static int dec__string(struct pprof_dec *d, const struct pb_field *f)
{
	size_t len = (size_t)(f->body.end - f->body.p);
	struct pprof_str *s;
	char *dst;

	if (!d->fill) {
		d->string_i++;
		d->str_bytes += len + 1; /* bounded by twice the message size */
		return 0;
	}
	if (d->string_i >= d->p->string_cnt || len + 1 > d->str_bytes - d->arena_used)
		return -EBADMSG;
	dst = d->p->index->arena + d->arena_used;
	memcpy(dst, f->body.p, len);
	dst[len] = 0;
	d->arena_used += len + 1;
	s = &d->p->strings[d->string_i++];
	s->s = dst;
	s->len = len;
	return 0;
}

static int dec__profile(struct pprof_dec *d, struct pb_reader r)
{
	struct pprof_profile *p = d->p;
	struct pprof_value_type scratch, *vt;
	struct pb_field f;
	int err = 0;

	while (r.p < r.end) {
		err = pb_reader__field(&r, &f);
		if (err)
			return err;
		if (f.num == PROFILE_COMMENT) { /* packed (LEN) or one unpacked (VARINT) */
			err = pb_field__varints(&f, d->fill ? (uint64_t *)p->comments : NULL,
						p->comment_cnt, &d->comment_i);
			if (err)
				return err;
			continue;
		}
		if (f.wire == PB_WIRE_LEN) {
			switch (f.num) {
			case PROFILE_SAMPLE_TYPE:
				vt = dec__next(d, p->sample_types, p->sample_type_cnt,
					       &d->sample_type_i, sizeof(*vt), &scratch);
				err = vt ? dec__scalars(f.body, vt, SCALARS_OF(value_type_slots))
					 : -EBADMSG;
				break;
			case PROFILE_SAMPLE:
				err = dec__sample(d, f.body);
				break;
			case PROFILE_MAPPING:
				err = dec__item(d, f.body, p->mappings, p->mapping_cnt,
						&d->mapping_i, sizeof(*p->mappings),
						SCALARS_OF(mapping_slots));
				break;
			case PROFILE_LOCATION:
				err = dec__location(d, f.body);
				break;
			case PROFILE_FUNCTION:
				err = dec__item(d, f.body, p->functions, p->function_cnt,
						&d->function_i, sizeof(*p->functions),
						SCALARS_OF(function_slots));
				break;
			case PROFILE_STRING_TABLE:
				err = dec__string(d, &f);
				break;
			case PROFILE_PERIOD_TYPE: /* a message met twice is merged */
				err = dec__scalars(f.body, &p->period_type,
						   SCALARS_OF(value_type_slots));
				break;
			}
			if (err)
				return err;
			continue;
		}
		dec__scalar(p, SCALARS_OF(profile_slots), &f);
	}
	return 0;
}

/* calloc(n, sz) that also succeeds for n == 0 (returns a 1-element block). */
static void *array__alloc(size_t n, size_t sz)
{
	return calloc(n ? n : 1, sz);
}

static int dec__alloc(struct pprof_dec *d)
{
	static const size_t pool_sz[POOL_CNT] = {
		sizeof(uint64_t),
		sizeof(int64_t),
		sizeof(struct pprof_label),
		sizeof(struct pprof_line),
	};
	struct pprof_profile *p = d->p;
	struct pprof_index *ix = p->index;
	size_t i;

	p->sample_type_cnt = d->sample_type_i;
	p->sample_cnt = d->sample_i;
	p->mapping_cnt = d->mapping_i;
	p->location_cnt = d->location_i;
	p->function_cnt = d->function_i;
	p->string_cnt = d->string_i;
	p->comment_cnt = d->comment_i;
	if (p->string_cnt >= UINT32_MAX || p->function_cnt >= UINT32_MAX)
		return -EFBIG;
	p->sample_types = array__alloc(p->sample_type_cnt, sizeof(*p->sample_types));
	p->samples = array__alloc(p->sample_cnt, sizeof(*p->samples));
	p->mappings = array__alloc(p->mapping_cnt, sizeof(*p->mappings));
	p->locations = array__alloc(p->location_cnt, sizeof(*p->locations));
	p->functions = array__alloc(p->function_cnt, sizeof(*p->functions));
	p->strings = array__alloc(p->string_cnt, sizeof(*p->strings));
	p->comments = array__alloc(p->comment_cnt, sizeof(*p->comments));
	ix->arena = array__alloc(d->str_bytes, 1);
	if (!p->sample_types || !p->samples || !p->mappings || !p->locations || !p->functions ||
	    !p->strings || !p->comments || !ix->arena)
		return -ENOMEM;
	ix->function_cap = p->function_cnt ? p->function_cnt : 1;
	ix->string_cap = p->string_cnt ? p->string_cnt : 1;
	ix->arena_str_cnt = p->string_cnt;
	for (i = 0; i < POOL_CNT; i++) {
		ix->pools[i] = array__alloc(d->pool_cnt[i], pool_sz[i]);
		if (!ix->pools[i])
			return -ENOMEM;
		d->pool_cap[i] = d->pool_cnt[i];
		d->pool_cnt[i] = 0;
	}
	d->sample_type_i = d->sample_i = d->mapping_i = d->location_i = 0;
	d->function_i = d->string_i = d->comment_i = 0;
	d->fill = true;
	return 0;
}

/* Resets the scalars the first pass set, so the second pass decodes from a clean slate. */
static void dec__reset_scalars(struct pprof_profile *p)
{
	p->drop_frames = p->keep_frames = 0;
	p->time_nanos = p->duration_nanos = 0;
	memset(&p->period_type, 0, sizeof(p->period_type));
	p->period = 0;
	p->default_sample_type = p->doc_url = 0;
}

/* ---- ids ---- */

static int id_slot__cmp(const void *a, const void *b)
{
	const struct id_slot *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorted (id, idx) pairs of n items whose id is at byte offset 0 of each elem_sz item;
 * -EBADMSG for a zero or repeated id.
 */
static int id_slots__build(const void *items, size_t n, size_t elem_sz, struct id_slot **out)
{
	struct id_slot *slots = array__alloc(n, sizeof(*slots));
	size_t i;

	*out = slots;
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		memcpy(&slots[i].id, (const char *)items + i * elem_sz, sizeof(uint64_t));
		slots[i].idx = i;
		if (!slots[i].id)
			return -EBADMSG;
	}
	qsort(slots, n, sizeof(*slots), id_slot__cmp);
	for (i = 1; i < n; i++) {
		if (slots[i].id == slots[i - 1].id)
			return -EBADMSG;
	}
	return 0;
}

static const struct id_slot *id_slots__find(const struct id_slot *slots, size_t n, uint64_t id)
{
	struct id_slot key = { .id = id };

	if (!id || !n)
		return NULL;
	return bsearch(&key, slots, n, sizeof(*slots), id_slot__cmp);
}

/* The index of the item with this id among n items of elem_sz bytes (the id at offset 0):
 * id - 1 when the ids are dense there (the usual layout), else found by the sorted slots;
 * n when there is none.
 */
static size_t id_lookup(const void *items, size_t n, size_t elem_sz, const struct id_slot *slots,
			uint64_t id)
{
	const struct id_slot *s;
	uint64_t have;

	if (id && id <= n) {
		memcpy(&have, (const char *)items + (id - 1) * elem_sz, sizeof(have));
		if (have == id)
			return id - 1;
	}
	s = id_slots__find(slots, n, id);
	return s ? s->idx : n;
}

struct pprof_mapping *pprof_profile__mapping(const struct pprof_profile *p, uint64_t id)
{
	size_t i = id_lookup(p->mappings, p->mapping_cnt, sizeof(*p->mappings), p->index->mappings,
			     id);

	return i < p->mapping_cnt ? &p->mappings[i] : NULL;
}

struct pprof_location *pprof_profile__location(const struct pprof_profile *p, uint64_t id)
{
	size_t i = id_lookup(p->locations, p->location_cnt, sizeof(*p->locations),
			     p->index->locations, id);

	return i < p->location_cnt ? &p->locations[i] : NULL;
}

struct pprof_function *pprof_profile__function(const struct pprof_profile *p, uint64_t id)
{
	size_t i = id_lookup(p->functions, p->function_cnt, sizeof(*p->functions),
			     p->index->functions, id);

	return i < p->function_cnt ? &p->functions[i] : NULL;
}

static bool str_ok(const struct pprof_profile *p, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < p->string_cnt;
}

static bool value_type_ok(const struct pprof_profile *p, const struct pprof_value_type *vt)
{
	return str_ok(p, vt->type) && str_ok(p, vt->unit);
}

/* The checks of the top comment of pprof_read.h; builds the id index on the way. */
static int profile__validate(struct pprof_profile *p)
{
	struct pprof_index *ix = p->index;
	size_t i, j;
	int err;

	if (!p->string_cnt || p->strings[0].len)
		return -EBADMSG;
	err = id_slots__build(p->mappings, p->mapping_cnt, sizeof(*p->mappings), &ix->mappings);
	err = err
		      ?: id_slots__build(p->locations, p->location_cnt, sizeof(*p->locations),
					 &ix->locations);
	err = err
		      ?: id_slots__build(p->functions, p->function_cnt, sizeof(*p->functions),
					 &ix->functions);
	if (err)
		return err;
	ix->function_slot_cap = p->function_cnt ? p->function_cnt : 1;
	if (!str_ok(p, p->drop_frames) || !str_ok(p, p->keep_frames) ||
	    !value_type_ok(p, &p->period_type) || !str_ok(p, p->default_sample_type) ||
	    !str_ok(p, p->doc_url))
		return -EBADMSG;
	for (i = 0; i < p->comment_cnt; i++) {
		if (!str_ok(p, p->comments[i]))
			return -EBADMSG;
	}
	for (i = 0; i < p->sample_type_cnt; i++) {
		if (!value_type_ok(p, &p->sample_types[i]))
			return -EBADMSG;
	}
	for (i = 0; i < p->sample_cnt; i++) {
		const struct pprof_sample *s = &p->samples[i];

		if (s->value_cnt != p->sample_type_cnt)
			return -EBADMSG;
		for (j = 0; j < s->location_cnt; j++) {
			if (!pprof_profile__location(p, s->location_ids[j]))
				return -EBADMSG;
		}
		for (j = 0; j < s->label_cnt; j++) {
			const struct pprof_label *l = &s->labels[j];

			if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit))
				return -EBADMSG;
		}
	}
	for (i = 0; i < p->mapping_cnt; i++) {
		if (!str_ok(p, p->mappings[i].filename) || !str_ok(p, p->mappings[i].build_id))
			return -EBADMSG;
	}
	for (i = 0; i < p->function_cnt; i++) {
		const struct pprof_function *fn = &p->functions[i];

		if (!str_ok(p, fn->name) || !str_ok(p, fn->system_name) || !str_ok(p, fn->filename))
			return -EBADMSG;
	}
	for (i = 0; i < p->location_cnt; i++) {
		const struct pprof_location *loc = &p->locations[i];

		if (loc->mapping_id && !pprof_profile__mapping(p, loc->mapping_id))
			return -EBADMSG;
		for (j = 0; j < loc->line_cnt; j++) {
			if (loc->lines[j].function_id &&
			    !pprof_profile__function(p, loc->lines[j].function_id))
				return -EBADMSG;
		}
	}
	return 0;
}

/* ---- gzip ---- */

/* Inflates one or more gzip members into a new buffer of at most max_sz bytes. */
static int gunzip(const uint8_t *in, size_t in_sz, size_t max_sz, uint8_t **out, size_t *out_sz)
{
	z_stream zs;
	uint8_t *buf = NULL, scratch;
	size_t in_off = 0, len = 0, cap, room, left;
	int ret, err = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	cap = in_sz < max_sz / 8 ? in_sz * 8 + 4096 : max_sz;
	if (cap > max_sz)
		cap = max_sz;
	buf = malloc(cap ? cap : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		if (!zs.avail_in && in_off < in_sz) {
			left = in_sz - in_off < CHUNK_MAX ? in_sz - in_off : CHUNK_MAX;
			zs.next_in = (Bytef *)(in + in_off);
			zs.avail_in = (uInt)left;
			in_off += left;
		}
		if (len == cap && cap < max_sz &&
		    array__reserve_bounded((void **)&buf, &cap, len + 1, 1, 1, max_sz)) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (len == cap) {
			/* full: only the end of the stream may follow, not one more byte */
			zs.next_out = &scratch;
			zs.avail_out = 1;
			room = 1;
		} else {
			room = cap - len < CHUNK_MAX ? cap - len : CHUNK_MAX;
			zs.next_out = buf + len;
			zs.avail_out = (uInt)room;
		}
		ret = inflate(&zs, Z_NO_FLUSH);
		if (len == cap) {
			if (zs.avail_out == 0) {
				err = -EFBIG;
				goto cleanup;
			}
		} else {
			len += room - zs.avail_out;
		}
		if (ret == Z_STREAM_END) {
			left = in_sz - in_off + zs.avail_in;
			if (!left)
				break;
			/* another member must follow, nothing else */
			if (left < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
				err = -EBADMSG;
				goto cleanup;
			}
			if (inflateReset(&zs) != Z_OK) {
				err = -EBADMSG;
				goto cleanup;
			}
			continue;
		}
		if (ret == Z_OK)
			continue;
		if (ret == Z_BUF_ERROR && !zs.avail_in && in_off == in_sz) {
			err = -EBADMSG; /* truncated */
			goto cleanup;
		}
		if (ret == Z_BUF_ERROR)
			continue;
		err = ret == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
		goto cleanup;
	}
cleanup:
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_sz = len;
	return 0;
}

/* ---- public: decode, read, free ---- */

int pprof_profile__decode(const void *buf, size_t size, size_t max_sz, struct pprof_profile **out)
{
	struct pprof_profile *p = NULL;
	struct pprof_dec d;
	struct pb_reader r;
	uint8_t *raw = NULL;
	size_t raw_sz = size;
	int err;

	*out = NULL;
	if (!max_sz)
		max_sz = PPROF_READ_MAX_SZ;
	if (size >= 2 && ((const uint8_t *)buf)[0] == 0x1f && ((const uint8_t *)buf)[1] == 0x8b) {
		err = gunzip(buf, size, max_sz, &raw, &raw_sz);
		if (err)
			return err;
		buf = raw;
	} else if (size > max_sz) {
		return -EFBIG;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->index = calloc(1, sizeof(*p->index)))) {
		err = -ENOMEM;
		goto cleanup;
	}
	memset(&d, 0, sizeof(d));
	d.p = p;
	r.p = buf;
	r.end = r.p + raw_sz;
	err = dec__profile(&d, r);
	if (err)
		goto cleanup;
	err = dec__alloc(&d);
	if (err)
		goto cleanup;
	dec__reset_scalars(p);
	err = dec__profile(&d, r);
	err = err ?: profile__validate(p);
cleanup:
	free(raw);
	if (err) {
		pprof_profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}

int pprof_profile__read(const char *path, size_t max_sz, struct pprof_profile **out)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	*out = NULL;
	if (!max_sz)
		max_sz = PPROF_READ_MAX_SZ;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > max_sz) {
		err = -EFBIG;
		goto cleanup;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (!n)
			break; /* shrank meanwhile: decode what is there */
		len += (size_t)n;
	}
	err = pprof_profile__decode(buf, len, max_sz, out);
cleanup:
	free(buf);
	close(fd);
	return err;
}

void pprof_profile__free(struct pprof_profile *p)
{
	struct pprof_index *ix;
	size_t i;

	if (!p)
		return;
	ix = p->index;
	if (ix) {
		if (p->strings) {
			for (i = ix->arena_str_cnt; i < p->string_cnt; i++)
				free((char *)p->strings[i].s);
		}
		if (p->locations) {
			for (i = 0; i < p->location_cnt; i++) {
				if (p->locations[i].lines_owned)
					free(p->locations[i].lines);
			}
		}
		for (i = 0; i < POOL_CNT; i++)
			free(ix->pools[i]);
		free(ix->mappings);
		free(ix->locations);
		free(ix->functions);
		free(ix->arena);
		id_index__free(&ix->str_idx);
		id_index__free(&ix->fn_idx);
		free(ix);
	}
	free(p->sample_types);
	free(p->samples);
	free(p->mappings);
	free(p->locations);
	free(p->functions);
	free(p->strings);
	free(p->comments);
	free(p);
}

/* ---- changes ---- */

const char *pprof_profile__string(const struct pprof_profile *p, int64_t idx)
{
	return str_ok(p, idx) ? p->strings[idx].s : "";
}

static uint64_t str__hash(const void *key)
{
	const struct pprof_str *k = key;

	return fnv64(k->s, k->len, FNV64_INIT);
}

static bool str__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct pprof_profile *p = ctx;
	const struct pprof_str *e = &p->strings[id - 1], *k = key;

	return e->len == k->len && !memcmp(e->s, k->s, k->len);
}

/* Indexes n items (elem_sz bytes each) on the first call: an item is its own key; the
 * first of equal items wins. 0 or -ENOMEM (the index is left unbuilt then).
 */
static int idx__build(struct id_index *t, const struct pprof_profile *p, const void *items,
		      size_t n, size_t elem_sz, uint64_t (*hash)(const void *), id_index_eq_fn eq)
{
	const void *item;
	uint64_t h;
	size_t i;

	if (t->cap)
		return 0;
	for (i = 0; i < n; i++) {
		item = (const char *)items + i * elem_sz;
		h = hash(item);
		if (id_index__find(t, h, eq, p, item))
			continue;
		if (id_index__reserve(t)) {
			id_index__free(t);
			return -ENOMEM;
		}
		id_index__add(t, h, (uint32_t)i + 1);
	}
	return id_index__reserve(t); /* built, even when empty */
}

int64_t pprof_profile__intern(struct pprof_profile *p, const char *s)
{
	struct pprof_index *ix = p->index;
	struct pprof_str key = { s, strlen(s) };
	uint64_t h = str__hash(&key);
	uint32_t id;
	char *copy;

	if (!key.len)
		return 0;
	if (idx__build(&ix->str_idx, p, p->strings, p->string_cnt, sizeof(*p->strings), str__hash,
		       str__eq))
		return -ENOMEM;
	id = id_index__find(&ix->str_idx, h, str__eq, p, &key);
	if (id)
		return (int64_t)id - 1;
	if (p->string_cnt >= UINT32_MAX - 1 || id_index__reserve(&ix->str_idx) ||
	    array__reserve((void **)&p->strings, &ix->string_cap, p->string_cnt + 1,
			   sizeof(*p->strings)))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	p->strings[p->string_cnt].s = copy;
	p->strings[p->string_cnt].len = key.len;
	id_index__add(&ix->str_idx, h, (uint32_t)p->string_cnt + 1);
	return (int64_t)p->string_cnt++;
}

static uint64_t function__hash(const void *key)
{
	const struct pprof_function *fn = key;
	int64_t v[4] = { fn->name, fn->system_name, fn->filename, fn->start_line };

	return fnv64(v, sizeof(v), FNV64_INIT);
}

/* Same fields but the id. */
static bool function__eq(const void *ctx, uint32_t id, const void *key)
{
	const struct pprof_profile *p = ctx;
	const struct pprof_function *fn = &p->functions[id - 1], *k = key;

	return fn->name == k->name && fn->system_name == k->system_name &&
	       fn->filename == k->filename && fn->start_line == k->start_line;
}

uint64_t pprof_profile__add_function(struct pprof_profile *p, int64_t name, int64_t system_name,
				     int64_t filename, int64_t start_line)
{
	struct pprof_index *ix = p->index;
	struct pprof_function key = { 0, name, system_name, filename, start_line }, *fn;
	uint64_t id, h = function__hash(&key);
	uint32_t found;

	if (!str_ok(p, name) || !str_ok(p, system_name) || !str_ok(p, filename)) {
		errno = EINVAL;
		return 0;
	}
	if (idx__build(&ix->fn_idx, p, p->functions, p->function_cnt, sizeof(*p->functions),
		       function__hash, function__eq))
		goto nomem;
	found = id_index__find(&ix->fn_idx, h, function__eq, p, &key);
	if (found)
		return p->functions[found - 1].id;
	if (p->function_cnt >= UINT32_MAX - 1)
		goto nomem;
	id = p->function_cnt ? ix->functions[p->function_cnt - 1].id + 1 : 1;
	if (!id)
		goto nomem; /* ids up to UINT64_MAX taken */
	if (id_index__reserve(&ix->fn_idx) ||
	    array__reserve((void **)&p->functions, &ix->function_cap, p->function_cnt + 1,
			   sizeof(*p->functions)) ||
	    array__reserve((void **)&ix->functions, &ix->function_slot_cap, p->function_cnt + 1,
			   sizeof(*ix->functions)))
		goto nomem;
	fn = &p->functions[p->function_cnt];
	*fn = key;
	fn->id = id;
	ix->functions[p->function_cnt].id = id; /* the largest id: the slots stay sorted */
	ix->functions[p->function_cnt].idx = p->function_cnt;
	id_index__add(&ix->fn_idx, h, (uint32_t)p->function_cnt + 1);
	p->function_cnt++;
	return id;
nomem:
	errno = ENOMEM;
	return 0;
}

int pprof_profile__set_lines(struct pprof_profile *p, struct pprof_location *loc,
			     const struct pprof_line *lines, size_t n)
{
	struct pprof_line *copy;
	size_t i;

	for (i = 0; i < n; i++) {
		if (lines[i].function_id && !pprof_profile__function(p, lines[i].function_id))
			return -EINVAL;
	}
	copy = array__alloc(n, sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, lines, n * sizeof(*copy));
	if (loc->lines_owned)
		free(loc->lines);
	loc->lines = copy;
	loc->line_cnt = n;
	loc->lines_owned = true;
	return 0;
}

/* ---- encoding ---- */

static void enc__varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (v)
		pb_buf__varint(b, field, v);
}

static void enc__value_type(struct pb_buf *b, uint32_t field, const struct pprof_value_type *vt)
{
	size_t mark;

	pb_buf__begin(b, field, &mark);
	enc__varint(b, VALUE_TYPE_TYPE, (uint64_t)vt->type);
	enc__varint(b, VALUE_TYPE_UNIT, (uint64_t)vt->unit);
	pb_buf__end(b, mark);
}

static void enc__sample(struct pb_buf *b, const struct pprof_sample *s)
{
	size_t mark, lmark, i;

	pb_buf__begin(b, PROFILE_SAMPLE, &mark);
	pb_buf__packed_varints(b, SAMPLE_LOCATION_ID, s->location_ids, s->location_cnt);
	pb_buf__packed_varints(b, SAMPLE_VALUE, (const uint64_t *)s->values, s->value_cnt);
	for (i = 0; i < s->label_cnt; i++) {
		const struct pprof_label *l = &s->labels[i];

		pb_buf__begin(b, SAMPLE_LABEL, &lmark);
		enc__varint(b, LABEL_KEY, (uint64_t)l->key);
		enc__varint(b, LABEL_STR, (uint64_t)l->str);
		enc__varint(b, LABEL_NUM, (uint64_t)l->num);
		enc__varint(b, LABEL_NUM_UNIT, (uint64_t)l->num_unit);
		pb_buf__end(b, lmark);
	}
	pb_buf__end(b, mark);
}

static void enc__mapping(struct pb_buf *b, const struct pprof_mapping *m)
{
	size_t mark;

	pb_buf__begin(b, PROFILE_MAPPING, &mark);
	enc__varint(b, MAPPING_ID, m->id);
	enc__varint(b, MAPPING_MEMORY_START, m->memory_start);
	enc__varint(b, MAPPING_MEMORY_LIMIT, m->memory_limit);
	enc__varint(b, MAPPING_FILE_OFFSET, m->file_offset);
	enc__varint(b, MAPPING_FILENAME, (uint64_t)m->filename);
	enc__varint(b, MAPPING_BUILD_ID, (uint64_t)m->build_id);
	enc__varint(b, MAPPING_HAS_FUNCTIONS, m->has_functions);
	enc__varint(b, MAPPING_HAS_FILENAMES, m->has_filenames);
	enc__varint(b, MAPPING_HAS_LINE_NUMBERS, m->has_line_numbers);
	enc__varint(b, MAPPING_HAS_INLINE_FRAMES, m->has_inline_frames);
	pb_buf__end(b, mark);
}

static void enc__location(struct pb_buf *b, const struct pprof_location *loc)
{
	size_t mark, lmark, i;

	pb_buf__begin(b, PROFILE_LOCATION, &mark);
	enc__varint(b, LOCATION_ID, loc->id);
	enc__varint(b, LOCATION_MAPPING_ID, loc->mapping_id);
	enc__varint(b, LOCATION_ADDRESS, loc->address);
	for (i = 0; i < loc->line_cnt; i++) {
		pb_buf__begin(b, LOCATION_LINE, &lmark);
		enc__varint(b, LINE_FUNCTION_ID, loc->lines[i].function_id);
		enc__varint(b, LINE_LINE, (uint64_t)loc->lines[i].line);
		enc__varint(b, LINE_COLUMN, (uint64_t)loc->lines[i].column);
		pb_buf__end(b, lmark);
	}
	enc__varint(b, LOCATION_IS_FOLDED, loc->is_folded);
	pb_buf__end(b, mark);
}

static void enc__function(struct pb_buf *b, const struct pprof_function *fn)
{
	size_t mark;

	pb_buf__begin(b, PROFILE_FUNCTION, &mark);
	enc__varint(b, FUNCTION_ID, fn->id);
	enc__varint(b, FUNCTION_NAME, (uint64_t)fn->name);
	enc__varint(b, FUNCTION_SYSTEM_NAME, (uint64_t)fn->system_name);
	enc__varint(b, FUNCTION_FILENAME, (uint64_t)fn->filename);
	enc__varint(b, FUNCTION_START_LINE, (uint64_t)fn->start_line);
	pb_buf__end(b, mark);
}

int pprof_profile__encode(const struct pprof_profile *p, struct pb_buf *out)
{
	size_t i;

	for (i = 0; i < p->sample_type_cnt; i++)
		enc__value_type(out, PROFILE_SAMPLE_TYPE, &p->sample_types[i]);
	for (i = 0; i < p->sample_cnt; i++)
		enc__sample(out, &p->samples[i]);
	for (i = 0; i < p->mapping_cnt; i++)
		enc__mapping(out, &p->mappings[i]);
	for (i = 0; i < p->location_cnt; i++)
		enc__location(out, &p->locations[i]);
	for (i = 0; i < p->function_cnt; i++)
		enc__function(out, &p->functions[i]);
	for (i = 0; i < p->string_cnt; i++)
		pb_buf__bytes(out, PROFILE_STRING_TABLE, p->strings[i].s, p->strings[i].len);
	enc__varint(out, PROFILE_DROP_FRAMES, (uint64_t)p->drop_frames);
	enc__varint(out, PROFILE_KEEP_FRAMES, (uint64_t)p->keep_frames);
	enc__varint(out, PROFILE_TIME_NANOS, (uint64_t)p->time_nanos);
	enc__varint(out, PROFILE_DURATION_NANOS, (uint64_t)p->duration_nanos);
	if (p->period_type.type || p->period_type.unit)
		enc__value_type(out, PROFILE_PERIOD_TYPE, &p->period_type);
	enc__varint(out, PROFILE_PERIOD, (uint64_t)p->period);
	pb_buf__packed_varints(out, PROFILE_COMMENT, (const uint64_t *)p->comments, p->comment_cnt);
	enc__varint(out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)p->default_sample_type);
	enc__varint(out, PROFILE_DOC_URL, (uint64_t)p->doc_url);
	return pb_buf__err(out);
}

int pprof_profile__write(const struct pprof_profile *p, const char *path)
{
	struct pb_buf buf;
	int err;

	pb_buf__init(&buf, PPROF_READ_MAX_SZ);
	err = pprof_profile__encode(p, &buf);
	if (!err)
		err = pprof__write_gzip(&buf, path);
	pb_buf__free(&buf);
	return err;
}
