/* POST /api/diff's uploads under limits: see upload.h.
 *
 * The walk mirrors export/pprof_read.c's decoder: it allocates, for each top-level item, one
 * struct in an array sized by a first counting pass (samples, mappings, locations, functions,
 * strings with their bytes, sample types, comments), and pools for the nested items of all
 * samples and locations (location ids, values, labels, lines), plus, for a gzipped file, the
 * inflated bytes in a buffer grown by doubling (at most twice their size), and an id slot per
 * mapping, location and function. The estimate adds the same structs' sizes, so that it is
 * never less than what the decoder takes. A field the walk cannot read (a bad varint, a
 * group, a truncated body) ends it with 422: the decoder would refuse the file too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "export/pprof_fields.h"
#include "export/pprof_read.h"
#include "export/protobuf_read.h"
#include "profile/profile.h"
#include "serve/upload.h"
#include "store/pprof_import.h"

#define INFLATE_CHUNK ((size_t)64 << 10)
#define ID_SLOT_SZ 16 /* the decoder's (id, index) pair per mapping, location, function */
#define HEAD_MAX 20   /* a field's tag and its value or length: two varints of 10 bytes */

struct upload_walk {
	const struct upload_limits *lim;
	uint64_t decoded; /* the decoder's allocations, both files so far */
	uint64_t raw;     /* the message's bytes, this file so far */
	uint64_t frames;  /* location ids of all samples so far */
	/* the top-level field being read */
	uint8_t head[HEAD_MAX];
	size_t head_len;
	uint32_t num, wire;
	uint64_t skip;   /* bytes of its body still to pass over */
	uint8_t *item;   /* UPLOAD_ITEM_MAX bytes: a sample's or location's body */
	size_t item_len; /* collected so far of item_want */
	size_t item_want;
	int status; /* the refusal, 0 while none */
	char *why;
	size_t why_sz;
};

/* CPU time of the calling thread (the server's): what the others wait for, whatever the load. */
static uint64_t cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sets the refusal (the first one stays); returns status. */
static int refuse(struct upload_walk *w, int status, const char *fmt, size_t value)
{
	if (!w->status) {
		w->status = status;
		snprintf(w->why, w->why_sz, fmt, value);
	}
	return status;
}

static int refuse_malformed(struct upload_walk *w)
{
	return refuse(w, 422, "not a pprof profile stackscope reads", 0);
}

/* Checks the running totals against the limits. */
static int walk__limits(struct upload_walk *w)
{
	const struct upload_limits *l = w->lim;

	if (w->decoded > l->decoded_max)
		return refuse(w, 413,
			      "the files decode to more than %zu MiB: too large to compare here",
			      l->decoded_max >> 20);
	if (w->frames > l->frames_max)
		return refuse(w, 413,
			      "the files hold more than %zu frames in all: too large to "
			      "compare here",
			      l->frames_max);
	return 0;
}

/* A sample's body: its location ids, values and labels. */
static int walk__sample(struct upload_walk *w, struct pb_reader r)
{
	size_t ids = 0, values = 0, labels = 0;
	struct pb_field f;

	while (r.p < r.end) {
		if (pb_reader__field(&r, &f))
			return refuse_malformed(w);
		if (f.num == SAMPLE_LOCATION_ID) {
			if (pb_field__varints(&f, NULL, 0, &ids))
				return refuse_malformed(w);
		} else if (f.num == SAMPLE_VALUE) {
			if (pb_field__varints(&f, NULL, 0, &values))
				return refuse_malformed(w);
		} else if (f.num == SAMPLE_LABEL && f.wire == PB_WIRE_LEN) {
			labels++;
		}
	}
	if (ids > w->lim->sample_frames_max)
		return refuse(w, 413, "a sample of more than %zu frames",
			      w->lim->sample_frames_max);
	w->frames += ids ? ids : 1; /* a sample without frames costs the import one too */
	w->decoded += sizeof(struct pprof_sample) + (ids + values) * sizeof(uint64_t) +
		      labels * sizeof(struct pprof_label);
	return walk__limits(w);
}

/* A location's body: its lines. */
static int walk__location(struct upload_walk *w, struct pb_reader r)
{
	struct pb_field f;
	size_t lines = 0;

	while (r.p < r.end) {
		if (pb_reader__field(&r, &f))
			return refuse_malformed(w);
		lines += f.num == LOCATION_LINE && f.wire == PB_WIRE_LEN;
	}
	w->decoded +=
		sizeof(struct pprof_location) + ID_SLOT_SZ + lines * sizeof(struct pprof_line);
	return walk__limits(w);
}

/* A top-level field whose head is read: its value (VARINT), or its length (LEN) v. */
static int walk__field(struct upload_walk *w, uint64_t v)
{
	if (w->wire == PB_WIRE_VARINT) {
		if (w->num == PROFILE_COMMENT)
			w->decoded += sizeof(int64_t);
		return walk__limits(w);
	}
	switch (w->num) { /* LEN */
	case PROFILE_SAMPLE:
	case PROFILE_LOCATION:
		if (v > UPLOAD_ITEM_MAX)
			return refuse(w, 413, "a sample or location of more than %zu KiB",
				      UPLOAD_ITEM_MAX >> 10);
		w->item_want = (size_t)v;
		w->item_len = 0;
		return 0;
	case PROFILE_STRING_TABLE:
		if (v > w->lim->string_max)
			return refuse(w, 413, "a string (a name) of more than %zu KiB",
				      w->lim->string_max >> 10);
		w->decoded += sizeof(struct pprof_str) + v + 1;
		break;
	case PROFILE_SAMPLE_TYPE:
		w->decoded += sizeof(struct pprof_value_type);
		break;
	case PROFILE_MAPPING:
		w->decoded += sizeof(struct pprof_mapping) + ID_SLOT_SZ;
		break;
	case PROFILE_FUNCTION:
		w->decoded += sizeof(struct pprof_function) + ID_SLOT_SZ;
		break;
	case PROFILE_COMMENT: /* packed: at most one value a byte */
		w->decoded += v * sizeof(int64_t);
		break;
	}
	w->skip = v;
	return walk__limits(w);
}

/* The item collected whole. */
static int walk__item(struct upload_walk *w)
{
	struct pb_reader r = pb_reader__make(w->item, w->item_len);

	w->item_want = 0;
	return w->num == PROFILE_SAMPLE ? walk__sample(w, r) : walk__location(w, r);
}

/* The next byte of a field's head; 0 and more to come, or the field handled. */
static int walk__head_byte(struct upload_walk *w, uint8_t b)
{
	struct pb_reader r;
	uint64_t tag, v;

	if (w->head_len == HEAD_MAX)
		return refuse_malformed(w);
	w->head[w->head_len++] = b;
	if (b & 0x80)
		return 0; /* the varint goes on */
	r = pb_reader__make(w->head, w->head_len);
	if (pb_reader__varint(&r, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
		return refuse_malformed(w);
	if (r.p == r.end) { /* the tag alone so far */
		w->num = (uint32_t)(tag >> 3);
		w->wire = (uint32_t)(tag & 7);
		if (w->wire == PB_WIRE_VARINT || w->wire == PB_WIRE_LEN)
			return 0;
		if (w->wire != PB_WIRE_I64 && w->wire != PB_WIRE_I32)
			return refuse_malformed(w);
		w->skip = w->wire == PB_WIRE_I64 ? 8 : 4;
		w->head_len = 0;
		return 0;
	}
	if (pb_reader__varint(&r, &v))
		return refuse_malformed(w);
	w->head_len = 0;
	return walk__field(w, v);
}

/* Walks the next n bytes of a message. 0 or the refusal. */
static int walk__feed(struct upload_walk *w, const uint8_t *p, size_t n)
{
	size_t k;
	int err;

	while (n) {
		if (w->skip) {
			k = w->skip < n ? (size_t)w->skip : n;
			w->skip -= k;
		} else if (w->item_want) {
			k = w->item_want - w->item_len < n ? w->item_want - w->item_len : n;
			memcpy(w->item + w->item_len, p, k);
			w->item_len += k;
			if (w->item_len == w->item_want && (err = walk__item(w)))
				return err;
		} else {
			k = 1;
			err = walk__head_byte(w, *p);
			if (err)
				return err;
			/* a sample or location of 0 bytes is complete at once */
			if (!w->head_len && w->wire == PB_WIRE_LEN && !w->skip && !w->item_want &&
			    (w->num == PROFILE_SAMPLE || w->num == PROFILE_LOCATION) &&
			    (err = walk__item(w)))
				return err;
		}
		p += k;
		n -= k;
	}
	return 0;
}

/* The end of a file's message: not inside a field. */
static int walk__end(struct upload_walk *w)
{
	if (w->head_len || w->skip || w->item_want)
		return refuse_malformed(w);
	return 0;
}

/* Walks a gzipped file (one or more members), inflating a chunk at a time. */
static int walk__gzip(struct upload_walk *w, const uint8_t *buf, size_t len, uint8_t *out)
{
	z_stream zs;
	size_t made;
	int ret, err = 0;

	memset(&zs, 0, sizeof(zs));
	if (len > UINT32_MAX)
		return refuse(w, 413, "a file of more than %zu GiB", (size_t)4);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return refuse(w, 503, "out of memory", 0);
	zs.next_in = (Bytef *)buf;
	zs.avail_in = (uInt)len;
	for (;;) {
		zs.next_out = out;
		zs.avail_out = (uInt)INFLATE_CHUNK;
		ret = inflate(&zs, Z_NO_FLUSH);
		made = INFLATE_CHUNK - zs.avail_out;
		w->raw += made;
		w->decoded += 2 * (uint64_t)made; /* the decoder's buffer, grown by doubling */
		err = walk__limits(w) ?: walk__feed(w, out, made);
		if (err)
			break;
		if (ret == Z_STREAM_END) {
			if (!zs.avail_in)
				break;
			/* another member must follow, nothing else */
			if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b ||
			    inflateReset(&zs) != Z_OK) {
				err = refuse_malformed(w);
				break;
			}
			continue;
		}
		if (ret == Z_OK)
			continue;
		/* Z_BUF_ERROR: no progress with all the input given, a truncated stream */
		err = ret == Z_MEM_ERROR ? refuse(w, 503, "out of memory", 0) : refuse_malformed(w);
		break;
	}
	inflateEnd(&zs);
	return err ?: walk__end(w);
}

/* The bytes of names the import of pp hashes (see upload.h), added to *sum; over max: 413. */
static int import_work(const struct pprof_profile *pp, uint64_t *sum, uint64_t max)
{
	uint64_t *loc_cost = calloc(pp->location_cnt ? pp->location_cnt : 1, sizeof(*loc_cost));
	size_t i, j;
	int err = 0;

#define STR_LEN(idx) ((idx) >= 0 && (uint64_t)(idx) < pp->string_cnt ? pp->strings[idx].len : 0)
	if (!loc_cost)
		return 503;
	for (i = 0; i < pp->location_cnt; i++) {
		const struct pprof_location *loc = &pp->locations[i];
		const struct pprof_mapping *m = pprof_profile__mapping(pp, loc->mapping_id);

		for (j = 0; j < loc->line_cnt; j++) {
			const struct pprof_function *fn =
				pprof_profile__function(pp, loc->lines[j].function_id);

			if (fn)
				loc_cost[i] += STR_LEN(fn->name) + STR_LEN(fn->filename);
		}
		if (m)
			loc_cost[i] += STR_LEN(m->filename) + STR_LEN(m->build_id);
	}
	for (i = 0; i < pp->sample_cnt && !err; i++) {
		const struct pprof_sample *s = &pp->samples[i];

		for (j = 0; j < s->location_cnt; j++) {
			const struct pprof_location *loc =
				pprof_profile__location(pp, s->location_ids[j]);

			*sum += loc ? loc_cost[loc - pp->locations] : 0;
		}
		for (j = 0; j < s->label_cnt; j++)
			*sum += STR_LEN(s->labels[j].key) + STR_LEN(s->labels[j].str);
		if (*sum > max)
			err = 413;
	}
#undef STR_LEN
	free(loc_cost);
	return err;
}

int upload__import(const uint8_t *body, size_t len, size_t a_len, const struct upload_limits *lim,
		   struct profile *out[2], char *why, size_t why_sz)
{
	static const struct upload_limits defaults = {
		.decoded_max = UPLOAD_DECODED_MAX,
		.frames_max = UPLOAD_FRAMES_MAX,
		.sample_frames_max = UPLOAD_SAMPLE_FRAMES_MAX,
		.string_max = UPLOAD_STRING_MAX,
		.intern_max = UPLOAD_INTERN_MAX,
		.time_max_ms = UPLOAD_TIME_MAX_MS,
	};
	struct upload_walk w = { .lim = lim ?: &defaults, .why = why, .why_sz = why_sz };
	size_t off[3] = { 0, a_len, len }, raw[2];
	struct pprof_profile *pp = NULL;
	uint64_t t0 = cpu_ms(), work = 0;
	uint8_t *chunk = NULL;
	unsigned s;
	int err = 0;

	out[0] = out[1] = NULL;
	snprintf(why, why_sz, "out of memory");
	w.item = malloc(UPLOAD_ITEM_MAX);
	chunk = malloc(INFLATE_CHUNK);
	if (!w.item || !chunk) {
		err = 503;
		goto out;
	}
	/* both files walked before either is decoded */
	for (s = 0; s < 2 && !err; s++) {
		const uint8_t *f = body + off[s];
		size_t n = off[s + 1] - off[s];

		w.raw = 0;
		if (n >= 2 && f[0] == 0x1f && f[1] == 0x8b)
			err = walk__gzip(&w, f, n, chunk);
		else
			err = walk__feed(&w, f, n) ?: walk__end(&w);
		raw[s] = w.raw ?: n;
		if (err == 422)
			snprintf(why, why_sz, "the %s file is not a pprof profile stackscope reads",
				 s ? "second" : "first");
	}
	free(w.item);
	free(chunk);
	w.item = chunk = NULL;
	for (s = 0; s < 2 && !err; s++) {
		/* max_sz: the size walked, so that the decoder's buffer is no larger */
		err = pprof_profile__decode(body + off[s], off[s + 1] - off[s], raw[s], &pp);
		if (!err && import_work(pp, &work, w.lim->intern_max) == 413)
			err = refuse(&w, 413,
				     "the files name more than %zu MiB of functions and files in "
				     "their samples: too large to compare here",
				     w.lim->intern_max >> 20);
		else if (!err)
			err = pprof_import(pp, &out[s]);
		pprof_profile__free(pp);
		pp = NULL;
		if (err == -ENOMEM || err == 503) {
			snprintf(why, why_sz, "out of memory");
			err = 503;
		} else if (err == -EFBIG) { /* larger than walked: cannot be, but say so */
			err = refuse(&w, 413, "the files decode to more than %zu MiB",
				     w.lim->decoded_max >> 20);
		} else if (err < 0) {
			snprintf(why, why_sz, "the %s file is not a pprof profile stackscope reads",
				 s ? "second" : "first");
			err = 422;
		}
		if (!err && cpu_ms() - t0 > w.lim->time_max_ms)
			err = refuse(&w, 503,
				     "reading the files took more than %zu ms of CPU: try "
				     "smaller files",
				     w.lim->time_max_ms);
	}
out:
	free(w.item);
	free(chunk);
	if (err) {
		profile__free(out[0]);
		profile__free(out[1]);
		out[0] = out[1] = NULL;
	}
	return err;
}
