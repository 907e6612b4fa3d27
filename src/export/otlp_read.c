/* ExportProfilesServiceRequest -> profile. See otlp_read.h.
 *
 * Two passes over the request. The first finds the dictionary (a request may hold several
 * dictionary fields: protobuf merges them, so their tables are appended) and keeps a reader
 * per table entry, counting against the caps before anything is allocated for them. The second
 * walks the resources, scopes, profiles and samples, and turns each dictionary entry a sample
 * reaches into profile strings, mappings and frames on first use (a location's frame id and a
 * mapping's id are cached per index), so an entry is decoded once whatever the samples.
 *
 * Invariants: every index read from the request is checked against its table before it is
 * used; a sample's locations are counted against frames_max before they are decoded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp_fields.h"
#include "export/otlp_read.h"
#include "export/protobuf_read.h"
#include "profile/profile.h"

#define DICT_TABLE_CNT 8  /* tables indexed by their field number; 0 unused */
#define LINES_MAX 64      /* inlining levels of one location */
#define ATTRS_MAX 64      /* attribute indices of one sample, location or mapping */
#define VALUE_TEXT_MAX 32 /* an int, bool or double attribute as text */
#define LABEL_PREFIX "process.context.label."

/* Resource attributes kept as labels of every sample of the resource. */
static const char *const resource_labels[] = {
	"host.name",           "service.name",       "service.namespace",
	"service.instance.id", "k8s.namespace.name", "k8s.pod.name",
};
#define RESOURCE_LABEL_CNT (sizeof(resource_labels) / sizeof(resource_labels[0]))

struct dict_table {
	struct pb_reader *items;
	size_t cnt, cap;
};

struct resource {
	uint32_t pid;
	const char *comm;
	struct profile_label labels[RESOURCE_LABEL_CNT];
	uint32_t label_cnt;
};

struct dec {
	const struct otlp_read_limits *lim;
	struct otlp_request *req;
	struct profile *p;
	struct dict_table t[DICT_TABLE_CNT];
	char **strs;         /* string_table as C strings, made on first use */
	uint32_t *loc_frame; /* location index -> profile frame id, 0: not yet */
	uint32_t *map_id;    /* mapping index -> profile mapping id + 1, 0: not yet */
	uint32_t *frames;    /* one sample's frame ids (stack_max) */
	size_t resources, samples, frames_total;
	uint64_t period_ns, start_ns, end_ns;
	char *why;
	size_t why_sz;
};

static int dec__fail(struct dec *d, int err, const char *what)
{
	if (d->why && !d->why[0])
		snprintf(d->why, d->why_sz, "%s", what);
	return err;
}

static int dec__bad(struct dec *d, const char *what)
{
	return dec__fail(d, -EBADMSG, what);
}

/* Keeps a NUL-terminated copy of body; NULL on ENOMEM. */
static const char *dec__keep(struct dec *d, struct pb_reader body)
{
	struct otlp_request *r = d->req;
	size_t n = pb_reader__left(&body);
	char *s, **grown;

	if (r->owned_cnt == r->owned_cap) {
		size_t cap = r->owned_cap ? r->owned_cap * 2 : 64;

		grown = realloc(r->owned, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		r->owned = grown;
		r->owned_cap = cap;
	}
	s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, body.p, n);
	s[n] = '\0';
	r->owned[r->owned_cnt++] = s;
	return s;
}

/* ---- pass 1: the dictionary ---- */

static int table__add(struct dec *d, struct dict_table *t, struct pb_reader body)
{
	struct pb_reader *grown;

	if (t->cnt == d->lim->table_max)
		return dec__fail(d, -E2BIG, "a dictionary table past its cap");
	if (t->cnt == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;

		if (cap > d->lim->table_max)
			cap = d->lim->table_max;
		grown = realloc(t->items, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->items = grown;
		t->cap = cap;
	}
	t->items[t->cnt++] = body;
	return 0;
}

static int dec__dictionary(struct dec *d, struct pb_reader r)
{
	struct pb_field f;
	int err;

	while (r.p < r.end) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed dictionary");
		if (f.num >= DICT_TABLE_CNT || f.num == DICT_LINK)
			continue;
		if (f.wire != PB_WIRE_LEN)
			return dec__bad(d, "a dictionary entry of the wrong wire type");
		if (f.num == DICT_STRING && pb_reader__left(&f.body) > d->lim->string_max)
			return dec__fail(d, -E2BIG, "a string past its cap");
		err = table__add(d, &d->t[f.num], f.body);
		if (err)
			return err;
	}
	return 0;
}

/* String idx, or NULL with *err set (out of range, ENOMEM). "" is a string like others. */
static const char *dec__str(struct dec *d, uint64_t idx, int *err)
{
	struct dict_table *t = &d->t[DICT_STRING];

	if (*err)
		return NULL;
	if (idx >= t->cnt) {
		*err = dec__bad(d, "a string index out of range");
		return NULL;
	}
	if (!d->strs[idx]) {
		d->strs[idx] = (char *)dec__keep(d, t->items[idx]);
		if (!d->strs[idx])
			*err = -ENOMEM;
	}
	return d->strs[idx];
}

/* String idx, NULL for "" (and for errors, with *err set). */
static const char *dec__str_or_null(struct dec *d, uint64_t idx, int *err)
{
	const char *s = dec__str(d, idx, err);

	return s && *s ? s : NULL;
}

/* ---- attributes ---- */

/* An AnyValue as text: strings as they are, ints, bools and doubles formatted into buf.
 * NULL (no error) for the other kinds (arrays, lists, bytes) and an unset value.
 */
static const char *dec__any(struct dec *d, struct pb_reader r, char *buf, int *err)
{
	const char *s = NULL;
	struct pb_field f;
	double dv;

	while (r.p < r.end && !*err) {
		if (pb_reader__field(&r, &f)) {
			*err = dec__bad(d, "malformed attribute value");
			return NULL;
		}
		if (f.num == ANY_STRING && f.wire == PB_WIRE_LEN) {
			if (pb_reader__left(&f.body) > d->lim->string_max) {
				*err = dec__fail(d, -E2BIG, "a string past its cap");
				return NULL;
			}
			s = dec__keep(d, f.body);
			if (!s)
				*err = -ENOMEM;
		} else if (f.num == ANY_STRING_STRINDEX && f.wire == PB_WIRE_VARINT) {
			s = dec__str(d, f.v, err);
		} else if (f.num == ANY_INT && f.wire == PB_WIRE_VARINT) {
			snprintf(buf, VALUE_TEXT_MAX, "%lld", (long long)(int64_t)f.v);
			s = buf;
		} else if (f.num == ANY_BOOL && f.wire == PB_WIRE_VARINT) {
			s = f.v ? "true" : "false";
		} else if (f.num == ANY_DOUBLE && f.wire == PB_WIRE_I64) {
			memcpy(&dv, &f.v, sizeof(dv));
			snprintf(buf, VALUE_TEXT_MAX, "%g", dv);
			s = buf;
		}
	}
	return *err ? NULL : s;
}

/* Attribute table entry idx: its key and value (as text, NULL if not a scalar). */
static int dec__attr(struct dec *d, uint64_t idx, const char **key, const char **value, char *buf)
{
	struct dict_table *t = &d->t[DICT_ATTRIBUTE];
	struct pb_reader r;
	struct pb_field f;
	int err = 0;

	*key = *value = NULL;
	if (idx >= t->cnt)
		return dec__bad(d, "an attribute index out of range");
	r = t->items[idx];
	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed attribute");
		if (f.num == KVU_KEY && f.wire == PB_WIRE_VARINT)
			*key = dec__str(d, f.v, &err);
		else if (f.num == KVU_VALUE && f.wire == PB_WIRE_LEN)
			*value = dec__any(d, f.body, buf, &err);
	}
	return err;
}

/* Up to ATTRS_MAX attribute indices of a repeated field (packed or not) appended at v[*n]. */
static int dec__indices(struct dec *d, const struct pb_field *f, uint64_t *v, size_t *n)
{
	int err = pb_field__varints(f, v, ATTRS_MAX, n);

	if (err)
		return dec__fail(d, err, "malformed or too many attribute indices");
	return 0;
}

/* ---- frames ---- */

/* Profile mapping id (0: none, e.g. the kernel's) of mapping index idx. */
static uint32_t dec__mapping(struct dec *d, uint64_t idx, bool *kernel, int *err)
{
	struct profile_mapping m = { 0 };
	struct pb_reader r;
	struct pb_field f;
	uint32_t id;

	*kernel = false;
	if (!idx || *err)
		return 0;
	if (idx >= d->t[DICT_MAPPING].cnt) {
		*err = dec__bad(d, "a mapping index out of range");
		return 0;
	}
	if (d->map_id[idx]) {
		*kernel = d->map_id[idx] == 1;
		return d->map_id[idx] - 1;
	}
	r = d->t[DICT_MAPPING].items[idx];
	while (r.p < r.end && !*err) {
		if (pb_reader__field(&r, &f)) {
			*err = dec__bad(d, "malformed mapping");
			return 0;
		}
		if (f.wire != PB_WIRE_VARINT)
			continue;
		if (f.num == MAP_START)
			m.start = f.v;
		else if (f.num == MAP_LIMIT)
			m.limit = f.v;
		else if (f.num == MAP_OFFSET)
			m.file_offset = f.v;
		else if (f.num == MAP_FILENAME)
			m.path = dec__str(d, f.v, err);
	}
	if (*err)
		return 0;
	if (!m.path)
		m.path = "";
	if (!strcmp(m.path, "vmlinux") && !m.start && !m.limit) {
		*kernel = true;
		d->map_id[idx] = 1;
		return 0;
	}
	id = profile__add_mapping(d->p, &m);
	if (!id)
		*err = -ENOMEM;
	d->map_id[idx] = id + 1;
	return id;
}

/* Function index idx's name (name, else system name) and file. */
static int dec__function(struct dec *d, uint64_t idx, struct profile_line *ln)
{
	const char *system_name = NULL;
	struct pb_reader r;
	struct pb_field f;
	int err = 0;

	if (idx >= d->t[DICT_FUNCTION].cnt)
		return dec__bad(d, "a function index out of range");
	r = d->t[DICT_FUNCTION].items[idx];
	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed function");
		if (f.wire != PB_WIRE_VARINT)
			continue;
		if (f.num == FN_NAME)
			ln->function = dec__str_or_null(d, f.v, &err);
		else if (f.num == FN_SYSTEM_NAME)
			system_name = dec__str_or_null(d, f.v, &err);
		else if (f.num == FN_FILENAME)
			ln->file = dec__str_or_null(d, f.v, &err);
	}
	if (!ln->function)
		ln->function = system_name;
	return err;
}

static int dec__line(struct dec *d, struct pb_reader r, struct profile_line *ln)
{
	struct pb_field f;
	int err = 0;

	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed line");
		if (f.wire != PB_WIRE_VARINT)
			continue;
		if (f.num == LINE_FUNCTION && f.v)
			err = dec__function(d, f.v, ln);
		else if (f.num == LINE_LINE)
			ln->line = (int64_t)f.v > 0 && f.v <= UINT32_MAX ? (uint32_t)f.v : 0;
		else if (f.num == LINE_COLUMN)
			ln->column = (int64_t)f.v > 0 && f.v <= UINT32_MAX ? (uint32_t)f.v : 0;
	}
	return err;
}

/* The frame of location index idx (>= 1), made on first use. 0 with *err set on failure. */
static uint32_t dec__location(struct dec *d, uint64_t idx, int *err)
{
	struct profile_line lines[LINES_MAX];
	struct profile_frame fr = { 0 };
	uint64_t attrs[ATTRS_MAX], map_idx = 0;
	const char *type = NULL;
	size_t attr_cnt = 0, i;
	struct pb_reader r;
	struct pb_field f;
	bool kernel;
	char buf[VALUE_TEXT_MAX];

	if (*err)
		return 0;
	if (!idx || idx >= d->t[DICT_LOCATION].cnt) {
		*err = dec__bad(d, "a location index out of range");
		return 0;
	}
	if (d->loc_frame[idx])
		return d->loc_frame[idx];
	r = d->t[DICT_LOCATION].items[idx];
	while (r.p < r.end && !*err) {
		if (pb_reader__field(&r, &f)) {
			*err = dec__bad(d, "malformed location");
			return 0;
		}
		if (f.num == LOC_MAPPING && f.wire == PB_WIRE_VARINT) {
			map_idx = f.v;
		} else if (f.num == LOC_ADDRESS && f.wire == PB_WIRE_VARINT) {
			fr.address = f.v;
		} else if (f.num == LOC_LINES && f.wire == PB_WIRE_LEN) {
			if (fr.line_cnt == LINES_MAX) {
				*err = dec__fail(d, -E2BIG, "a location of too many lines");
				return 0;
			}
			lines[fr.line_cnt] = (struct profile_line){ 0 };
			*err = dec__line(d, f.body, &lines[fr.line_cnt++]);
		} else if (f.num == LOC_ATTRS) {
			*err = dec__indices(d, &f, attrs, &attr_cnt);
		}
	}
	for (i = 0; i < attr_cnt && !*err; i++) {
		const char *key, *value;

		*err = dec__attr(d, attrs[i], &key, &value, buf);
		if (!*err && key && value && !strcmp(key, "profile.frame.type"))
			type = value;
	}
	fr.mapping = dec__mapping(d, map_idx, &kernel, err);
	if (*err)
		return 0;
	fr.lines = lines;
	if (type && !strcmp(type, "kernel")) {
		fr.kind = FRAME_KERNEL;
		fr.mapping = 0;
	} else if (kernel) {
		fr.kind = FRAME_KERNEL;
	} else if (type && !strcmp(type, "abort-marker")) {
		fr.kind = FRAME_ERROR;
		fr.mapping = 0;
	} else if (!type || !strcmp(type, "native") || (!strcmp(type, "go") && fr.mapping)) {
		fr.kind = fr.mapping || !fr.line_cnt ? FRAME_NATIVE : FRAME_RUNTIME;
		fr.runtime = fr.kind == FRAME_NATIVE && type && !strcmp(type, "go") ? "go" : NULL;
	} else {
		fr.kind = FRAME_RUNTIME;
		fr.runtime = type;
	}
	d->loc_frame[idx] = profile__add_frame(d->p, &fr);
	if (!d->loc_frame[idx])
		*err = errno == EINVAL ? dec__bad(d, "a frame the profile refuses") : -ENOMEM;
	return d->loc_frame[idx];
}

/* ---- samples ---- */

enum sample_kind {
	KIND_COUNT = 1, /* samples/count */
	KIND_CPU_NS,    /* cpu/nanoseconds: divided by the period */
	KIND_OFF_CPU,   /* off_cpu/nanoseconds */
};

static int dec__sample(struct dec *d, struct pb_reader r, const struct resource *res,
		       enum sample_kind kind, uint64_t period)
{
	struct profile_label labels[PROFILE_MAX_LABELS];
	struct profile_sample s = { .pid = res->pid, .comm = res->comm, .labels = labels };
	uint64_t attrs[ATTRS_MAX], stack = 0, sum = 0, v, stamps = 0, first_stamp = 0;
	size_t attr_cnt = 0, value_cnt = 0, i;
	struct pb_reader sr;
	struct pb_field f;
	char buf[ATTRS_MAX][VALUE_TEXT_MAX];
	int err = 0;

	if (++d->samples > d->lim->sample_max)
		return dec__fail(d, -E2BIG, "more samples than the cap");
	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed sample");
		if (f.num == SAMPLE_STACK && f.wire == PB_WIRE_VARINT) {
			stack = f.v;
		} else if (f.num == SAMPLE_ATTRS) {
			err = dec__indices(d, &f, attrs, &attr_cnt);
		} else if (f.num == SAMPLE_VALUES && f.wire == PB_WIRE_LEN) {
			struct pb_reader vr = f.body;

			while (vr.p < vr.end) {
				if (pb_reader__varint(&vr, &v))
					return dec__bad(d, "malformed sample values");
				if ((int64_t)v > 0)
					sum = profile__count_add(sum, v);
				value_cnt++;
			}
		} else if (f.num == SAMPLE_VALUES && f.wire == PB_WIRE_VARINT) {
			if ((int64_t)f.v > 0)
				sum = profile__count_add(sum, f.v);
			value_cnt++;
		} else if (f.num == SAMPLE_TIMESTAMPS && f.wire == PB_WIRE_LEN) {
			size_t n = pb_reader__left(&f.body);

			if (n % 8)
				return dec__bad(d, "packed timestamps not a multiple of 8 bytes");
			for (i = 0; n && !stamps && i < 8; i++) /* little-endian on the wire */
				first_stamp |= (uint64_t)f.body.p[i] << (8 * i);
			stamps += n / 8;
		} else if (f.num == SAMPLE_TIMESTAMPS && f.wire == PB_WIRE_I64) {
			if (!stamps)
				first_stamp = f.v;
			stamps++;
		}
	}
	if (err)
		return err;
	/* the stack: leaf first, every location checked before one is decoded */
	if (stack >= d->t[DICT_STACK].cnt)
		return dec__bad(d, "a stack index out of range");
	sr = d->t[DICT_STACK].items[stack];
	while (sr.p < sr.end && !err) {
		if (pb_reader__field(&sr, &f))
			return dec__bad(d, "malformed stack");
		if (f.num != STACK_LOCATIONS)
			continue;
		if (f.wire == PB_WIRE_LEN) {
			struct pb_reader lr = f.body;

			while (lr.p < lr.end && !err) {
				if (pb_reader__varint(&lr, &v))
					return dec__bad(d, "malformed stack");
				if (s.frame_cnt == d->lim->stack_max)
					return dec__fail(d, -E2BIG, "a stack deeper than the cap");
				if (++d->frames_total > d->lim->frames_max)
					return dec__fail(d, -E2BIG, "more frames than the cap");
				d->frames[s.frame_cnt++] = dec__location(d, v, &err);
			}
		} else if (f.wire == PB_WIRE_VARINT) {
			if (s.frame_cnt == d->lim->stack_max)
				return dec__fail(d, -E2BIG, "a stack deeper than the cap");
			if (++d->frames_total > d->lim->frames_max)
				return dec__fail(d, -E2BIG, "more frames than the cap");
			d->frames[s.frame_cnt++] = dec__location(d, f.v, &err);
		}
	}
	if (err)
		return err;
	s.frames = d->frames;
	memcpy(labels, res->labels, res->label_cnt * sizeof(labels[0]));
	s.label_cnt = res->label_cnt;
	for (i = 0; i < attr_cnt && !err; i++) {
		const char *key, *value;

		err = dec__attr(d, attrs[i], &key, &value, buf[i]);
		if (err || !key || !value)
			continue;
		if (!strcmp(key, "thread.name"))
			s.thread_comm = value;
		else if (!strcmp(key, "thread.id"))
			s.tid = (uint32_t)strtoul(value, NULL, 10);
		else if (!strcmp(key, "cpu.logical_number"))
			s.cpu = (uint32_t)strtoul(value, NULL, 10);
		else if (!strncmp(key, LABEL_PREFIX, sizeof(LABEL_PREFIX) - 1) &&
			 s.label_cnt < PROFILE_MAX_LABELS)
			labels[s.label_cnt++] =
				(struct profile_label){ key + sizeof(LABEL_PREFIX) - 1, value };
	}
	if (err)
		return err;
	/* shapes: timestamps only (one each), values (summed), or both (values summed) */
	switch (kind) {
	case KIND_COUNT:
		s.count = value_cnt ? sum : stamps;
		break;
	case KIND_CPU_NS:
		s.count = value_cnt ? sum / period : stamps;
		if (value_cnt && sum && !s.count)
			s.count = 1;
		break;
	case KIND_OFF_CPU:
		s.off_cpu_ns = sum;
		s.count = stamps ? stamps : 1;
		if (!sum)
			return 0;
		break;
	}
	if (!s.count)
		return 0;
	s.time_ns = first_stamp;
	err = profile__add_sample(d->p, &s);
	if (err == -EINVAL)
		return dec__bad(d, "a sample the profile refuses");
	if (!err)
		d->req->samples = profile__count_add(d->req->samples, s.count);
	return err;
}

/* The kind of sample type (type, unit) string indices, 0 for one not kept. */
static enum sample_kind dec__kind(struct dec *d, struct pb_reader r, char *name, size_t name_sz,
				  int *err)
{
	const char *type = "", *unit = "";
	struct pb_field f;

	while (r.p < r.end && !*err) {
		if (pb_reader__field(&r, &f)) {
			*err = dec__bad(d, "malformed sample type");
			return 0;
		}
		if (f.num == VT_TYPE && f.wire == PB_WIRE_VARINT)
			type = dec__str(d, f.v, err);
		else if (f.num == VT_UNIT && f.wire == PB_WIRE_VARINT)
			unit = dec__str(d, f.v, err);
	}
	if (*err)
		return 0;
	snprintf(name, name_sz, "%.40s/%.40s", type, unit);
	if (!strcmp(type, "samples") && !strcmp(unit, "count"))
		return KIND_COUNT;
	if (!strcmp(type, "cpu") && !strcmp(unit, "nanoseconds"))
		return KIND_CPU_NS;
	if (!strcmp(type, "off_cpu") && !strcmp(unit, "nanoseconds"))
		return KIND_OFF_CPU;
	return 0;
}

/* One Profile: with res NULL (the window pass) only its period and window are taken, else
 * its samples are added.
 */
static int dec__profile(struct dec *d, struct pb_reader r, const struct resource *res)
{
	struct pb_reader scan = r;
	enum sample_kind kind = 0;
	uint64_t period = 0, time = 0, duration = 0;
	struct pb_field f;
	char name[96] = "none/none";
	int err = 0;

	/* the sample type, period and window first: fields come in any order */
	while (scan.p < scan.end && !err) {
		if (pb_reader__field(&scan, &f))
			return dec__bad(d, "malformed profile");
		if (f.num == PROFILE_SAMPLE_TYPE && f.wire == PB_WIRE_LEN)
			kind = dec__kind(d, f.body, name, sizeof(name), &err);
		else if (f.num == PROFILE_PERIOD && f.wire == PB_WIRE_VARINT)
			period = (int64_t)f.v > 0 ? f.v : 0;
		else if (f.num == PROFILE_TIME && f.wire == PB_WIRE_I64)
			time = f.v;
		else if (f.num == PROFILE_DURATION && f.wire == PB_WIRE_VARINT)
			duration = f.v;
	}
	if (err)
		return err;
	if (!kind || (kind == KIND_CPU_NS && !period)) {
		if (res && !d->req->profiles_rejected)
			snprintf(d->req->rejected_why, sizeof(d->req->rejected_why),
				 "sample type %s is not stored", name);
		d->req->profiles_rejected += res != NULL;
		return 0;
	}
	if (!res) {
		if (kind != KIND_OFF_CPU && period && !d->period_ns)
			d->period_ns = period;
		if (time && (!d->start_ns || time < d->start_ns))
			d->start_ns = time;
		if (time && profile__count_add(time, duration) > d->end_ns)
			d->end_ns = profile__count_add(time, duration);
		return 0;
	}
	d->req->profiles_accepted++;
	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed profile");
		if (f.num == PROFILE_SAMPLES && f.wire == PB_WIRE_LEN)
			err = dec__sample(d, f.body, res, kind, period);
	}
	return err;
}

/* The Resource's attributes this decoder keeps (plain KeyValue, or key_strindex). */
static int dec__resource(struct dec *d, struct pb_reader r, struct resource *res, const char **exe,
			 const char **container)
{
	struct pb_field f, g;
	char buf[VALUE_TEXT_MAX];
	size_t i;
	int err = 0;

	while (r.p < r.end && !err) {
		const char *key = NULL, *value = NULL;
		struct pb_reader kv;

		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed resource");
		if (f.num != RESOURCE_ATTRIBUTES || f.wire != PB_WIRE_LEN)
			continue;
		kv = f.body;
		while (kv.p < kv.end && !err) {
			if (pb_reader__field(&kv, &g))
				return dec__bad(d, "malformed resource attribute");
			if (g.num == KV_KEY && g.wire == PB_WIRE_LEN) {
				if (pb_reader__left(&g.body) > d->lim->string_max)
					return dec__fail(d, -E2BIG, "a string past its cap");
				key = dec__keep(d, g.body);
				if (!key)
					return -ENOMEM;
			} else if (g.num == KV_KEY_STRINDEX && g.wire == PB_WIRE_VARINT) {
				key = dec__str(d, g.v, &err);
			} else if (g.num == KV_VALUE && g.wire == PB_WIRE_LEN) {
				value = dec__any(d, g.body, buf, &err);
			}
		}
		if (err || !key || !value)
			continue;
		if (!strcmp(key, "process.pid")) {
			res->pid = (uint32_t)strtoul(value, NULL, 10);
		} else if (!strcmp(key, "process.executable.name")) {
			res->comm = value == buf ? NULL : value;
		} else if (!strcmp(key, "process.executable.path")) {
			*exe = value == buf ? NULL : value;
		} else if (!strcmp(key, "container.id")) {
			*container = value == buf ? NULL : value;
		} else {
			for (i = 0; i < RESOURCE_LABEL_CNT; i++)
				if (!strcmp(key, resource_labels[i]) && value != buf &&
				    res->label_cnt < RESOURCE_LABEL_CNT)
					res->labels[res->label_cnt++] =
						(struct profile_label){ key, value };
		}
	}
	return err;
}

static int proc__cmp(const void *a, const void *b)
{
	const struct otlp_read_process *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* One ResourceProfiles; window: only its Profiles' periods and windows (dec__profile()). */
static int dec__resource_profiles(struct dec *d, struct pb_reader r, bool window)
{
	struct resource res = { 0 };
	const char *exe = NULL, *container = NULL;
	struct pb_reader scan = r;
	struct pb_field f, g;
	int err = 0;

	while (scan.p < scan.end && !err && !window) {
		if (pb_reader__field(&scan, &f))
			return dec__bad(d, "malformed resource profiles");
		if (f.num == RP_RESOURCE && f.wire == PB_WIRE_LEN)
			err = dec__resource(d, f.body, &res, &exe, &container);
	}
	if (err)
		return err;
	if (!window && (exe || container)) {
		struct otlp_request *q = d->req;

		q->procs[q->proc_cnt++] = (struct otlp_read_process){ res.pid, exe, container };
	}
	while (r.p < r.end && !err) {
		struct pb_reader sp;

		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed resource profiles");
		if (f.num != RP_SCOPE_PROFILES || f.wire != PB_WIRE_LEN)
			continue;
		sp = f.body;
		while (sp.p < sp.end && !err) {
			if (pb_reader__field(&sp, &g))
				return dec__bad(d, "malformed scope profiles");
			if (g.num == SP_PROFILES && g.wire == PB_WIRE_LEN)
				err = dec__profile(d, g.body, window ? NULL : &res);
		}
	}
	return err;
}

/* Pass 1: the dictionary's tables, the resources counted. */
static int dec__scan(struct dec *d, struct pb_reader r)
{
	struct pb_field f;
	int err = 0;

	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed request");
		if (f.num == REQ_DICTIONARY && f.wire == PB_WIRE_LEN)
			err = dec__dictionary(d, f.body);
		else if (f.num == REQ_RESOURCE_PROFILES && f.wire == PB_WIRE_LEN &&
			 ++d->resources > d->lim->resource_max)
			err = dec__fail(d, -E2BIG, "more resources than the cap");
	}
	return err;
}

static int dec__run(struct dec *d, const void *buf, size_t len)
{
	struct pb_reader r = pb_reader__make(buf, len), w = r;
	struct profile_opts po = { .off_cpu = true };
	struct pb_field f;
	int err;

	err = dec__scan(d, r);
	if (err)
		return err;
	/* every table's entry 0 must be there; string 0 must be "" */
	if (d->t[DICT_STRING].cnt && pb_reader__left(&d->t[DICT_STRING].items[0]))
		return dec__bad(d, "string_table[0] is not empty");
	d->strs = calloc(d->t[DICT_STRING].cnt ?: 1, sizeof(*d->strs));
	d->loc_frame = calloc(d->t[DICT_LOCATION].cnt ?: 1, sizeof(*d->loc_frame));
	d->map_id = calloc(d->t[DICT_MAPPING].cnt ?: 1, sizeof(*d->map_id));
	d->frames = calloc(d->lim->stack_max ?: 1, sizeof(*d->frames));
	d->req->procs = calloc(d->resources ?: 1, sizeof(*d->req->procs));
	if (!d->strs || !d->loc_frame || !d->map_id || !d->frames || !d->req->procs)
		return -ENOMEM;
	/* the period and window first: a profile takes them at its creation */
	while (w.p < w.end && !err) {
		if (pb_reader__field(&w, &f))
			return dec__bad(d, "malformed request");
		if (f.num == REQ_RESOURCE_PROFILES && f.wire == PB_WIRE_LEN)
			err = dec__resource_profiles(d, f.body, true);
	}
	if (err)
		return err;
	po.period_ns = d->period_ns ?: 1000000000ull / 20; /* upstream's default, 20 Hz */
	po.start_time_ns = d->start_ns;
	d->p = profile__new(&po);
	if (!d->p)
		return -ENOMEM;
	profile__set_end_time(d->p, d->end_ns ?: d->start_ns);
	while (r.p < r.end && !err) {
		if (pb_reader__field(&r, &f))
			return dec__bad(d, "malformed request");
		if (f.num == REQ_RESOURCE_PROFILES && f.wire == PB_WIRE_LEN)
			err = dec__resource_profiles(d, f.body, false);
	}
	return err;
}

int otlp_request__decode(const void *buf, size_t len, const struct otlp_read_limits *lim,
			 struct otlp_request **out, char *why, size_t why_sz)
{
	static const struct otlp_read_limits defaults = {
		.table_max = OTLP_READ_TABLE_MAX,
		.resource_max = OTLP_READ_RESOURCE_MAX,
		.sample_max = OTLP_READ_SAMPLE_MAX,
		.stack_max = OTLP_READ_STACK_MAX,
		.frames_max = OTLP_READ_FRAMES_MAX,
		.string_max = OTLP_READ_STRING_MAX,
	};
	struct dec d = { .lim = lim ?: &defaults, .why = why, .why_sz = why_sz };
	size_t i;
	int err;

	*out = NULL;
	if (why && why_sz)
		why[0] = '\0';
	d.req = calloc(1, sizeof(*d.req));
	if (!d.req)
		return -ENOMEM;
	err = dec__run(&d, buf, len);
	for (i = 0; i < DICT_TABLE_CNT; i++)
		free(d.t[i].items);
	free(d.strs);
	free(d.loc_frame);
	free(d.map_id);
	free(d.frames);
	if (err) {
		if (err == -ENOMEM && why && why_sz && !why[0])
			snprintf(why, why_sz, "out of memory");
		profile__free(d.p);
		otlp_request__free(d.req);
		return err;
	}
	d.req->profile = d.p;
	qsort(d.req->procs, d.req->proc_cnt, sizeof(*d.req->procs), proc__cmp);
	*out = d.req;
	return 0;
}

void otlp_request__free(struct otlp_request *r)
{
	size_t i;

	if (!r)
		return;
	profile__free(r->profile);
	for (i = 0; i < r->owned_cnt; i++)
		free(r->owned[i]);
	free(r->owned);
	free(r->procs);
	free(r);
}

const struct otlp_read_process *otlp_request__process(const struct otlp_request *r, uint32_t pid)
{
	struct otlp_read_process key = { .pid = pid };

	if (!r->proc_cnt)
		return NULL;
	/* the first of equal pids: bsearch may land on any */
	for (const struct otlp_read_process *p =
		     bsearch(&key, r->procs, r->proc_cnt, sizeof(key), proc__cmp);
	     p; p--) {
		if (p == r->procs || p[-1].pid != pid)
			return p;
	}
	return NULL;
}
