/* Unit tests for the OTLP profiles request decoder (src/export/otlp_read.c), the receiver's
 * reading of untrusted network input.
 *
 * Round trip: a profile with every kind of frame (kernel, native with and without lines and
 * inlining, runtime, error), threads, labels and both sample shapes is encoded by the project's
 * exporter (export/otlp.c), decoded, and every sample's stack, names, lines, count, pid, tid,
 * thread and labels compared with the original. Hostile input: every truncation and every
 * byte flipped of a valid request, indexes out of range, lying lengths, a non-empty
 * string_table[0], 10 million locations, stacks and sample counts past the caps; each must
 * come back as -EBADMSG or -E2BIG (or a valid decode), never a crash (ASan in asan-test).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp.h"
#include "export/otlp_read.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "test.h"

#define T0 1700000000000000000ULL
#define PERIOD (1000000000ULL / 19)

struct fixture {
	struct profile *p;
	uint32_t f_kernel, f_native, f_inline, f_py, f_err;
};

/* A profile of two processes; timestamps_cap decides the shape the encoder writes. */
static void fixture_make(struct fixture *fx, size_t timestamps_cap)
{
	struct profile_opts po = { .period_ns = PERIOD,
				   .start_time_ns = T0,
				   .timestamps_cap = timestamps_cap };
	struct profile_mapping exe = { "/usr/bin/app", "0123abcd", 0x1000, 0x9000, 0x1000 };
	struct profile_line k_line[] = { { "do_syscall_64", NULL, 0, 0 } };
	struct profile_line inl[] = { { "inner_inlined", "app.c", 12, 3 },
				      { "outer", "app.c", 40, 0 } };
	struct profile_line py[] = { { "handler", "/srv/app.py", 7, 0 } };
	struct profile_line err[] = { { "[unwind: no CFI]", NULL, 0, 0 } };
	struct profile_label labels[] = { { "route", "/api" } };
	uint32_t m, st1[4], st2[2], i;

	memset(fx, 0, sizeof(*fx));
	fx->p = profile__new(&po);
	REQUIRE(fx->p);
	m = profile__add_mapping(fx->p, &exe);
	REQUIRE(m);
	fx->f_kernel = profile__add_frame(
		fx->p, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffffffff81000010, k_line, 1 });
	fx->f_native = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_NATIVE, m, 0x1234,
									  NULL, 0 });
	fx->f_inline = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_NATIVE, m, 0x2345,
									  inl, 2 });
	fx->f_py = profile__add_frame(fx->p, &(struct profile_frame){ .kind = FRAME_RUNTIME,
								      .lines = py,
								      .line_cnt = 1,
								      .runtime = "cpython" });
	fx->f_err = profile__add_frame(fx->p, &(struct profile_frame){ FRAME_ERROR, 0, 0, err, 1 });
	REQUIRE(fx->f_kernel && fx->f_native && fx->f_inline && fx->f_py && fx->f_err);
	st1[0] = fx->f_kernel;
	st1[1] = fx->f_native;
	st1[2] = fx->f_inline;
	st1[3] = fx->f_py;
	st2[0] = fx->f_err;
	st2[1] = fx->f_inline;
	for (i = 0; i < 5; i++) {
		struct profile_sample s = { st1,           4, 100,    101, "app", "worker", i % 2,
					    T0 + 1000 * i, 1, labels, 1 };

		REQUIRE(profile__add_sample(fx->p, &s) == 0);
	}
	for (i = 0; i < 3; i++) {
		struct profile_sample s = {
			st2, 2, 200, 200, "other", "other", 1, T0 + 7000 * i, 2
		};

		REQUIRE(profile__add_sample(fx->p, &s) == 0);
	}
	profile__set_end_time(fx->p, T0 + 1000000000ULL);
}

static int lookup(void *ctx, uint32_t pid, struct otlp_process *out)
{
	out->exe_path = pid == 100 ? "/usr/bin/app" : "/usr/bin/other";
	out->container_id = pid == 100 ? "c0ffee" : NULL;
	return 0;
}

/* The fixture as one request (b initialized here; the caller frees it). */
static void encode(struct fixture *fx, struct pb_buf *b)
{
	static const struct otlp_attr extra[] = { { "service.name", "checkout" } };
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	struct otlp_host host;

	REQUIRE(e);
	memset(&host, 0, sizeof(host));
	snprintf(host.host_name, sizeof(host.host_name), "box-a");
	snprintf(host.os_type, sizeof(host.os_type), "linux");
	host.extra = extra;
	host.extra_cnt = 1;
	pb_buf__init(b, (size_t)64 << 20);
	REQUIRE(otlp_encoder__encode(e, fx->p, &host, lookup, NULL, b) == 0);
	otlp_encoder__free(e);
}

/* Label key of a decoded sample, or NULL. */
static const char *label_of(const struct profile *p, const struct profile_agg_sample *s,
			    const char *key)
{
	struct profile_label l;
	uint32_t i;

	for (i = 0; profile__label(p, s->labels, i, &l); i++)
		if (!strcmp(l.key, key))
			return l.value;
	return NULL;
}

/* Whether frames a (of pa) and b (of pb) are the same frame. */
static bool frame_same(const struct profile *pa, uint32_t a, const struct profile *pb, uint32_t b)
{
	const struct profile_frame *x = profile__frame(pa, a), *y = profile__frame(pb, b);
	uint32_t i;

	if (!x || !y || x->kind != y->kind || x->line_cnt != y->line_cnt)
		return false;
	if (x->kind != FRAME_ERROR && x->kind != FRAME_RUNTIME && x->address != y->address)
		return false;
	if ((x->runtime == NULL) != (y->runtime == NULL) ||
	    (x->runtime && strcmp(x->runtime, y->runtime)))
		return false;
	for (i = 0; i < x->line_cnt; i++) {
		const struct profile_line *l = &x->lines[i], *m = &y->lines[i];

		if (strcmp(l->function, m->function) || (l->file == NULL) != (m->file == NULL) ||
		    (l->file && strcmp(l->file, m->file)) || l->line != m->line ||
		    l->column != m->column)
			return false;
	}
	if (x->kind == FRAME_NATIVE) {
		const struct profile_mapping *mx = profile__mapping(pa, x->mapping),
					     *my = profile__mapping(pb, y->mapping);

		/* the exporter sends the file's basename, as upstream does */
		if (!mx || !my || strcmp(my->path, "app") || mx->start != my->start ||
		    mx->limit != my->limit || mx->file_offset != my->file_offset)
			return false;
	}
	return true;
}

/* Every sample of orig is in got, with its count, process, thread, stack and labels. */
static void check_same(const struct profile *orig, const struct profile *got)
{
	size_t i, j;

	CHECK_EQ_U64(profile__total_samples(got), profile__total_samples(orig));
	CHECK_EQ_U64(profile__period_ns(got), PERIOD);
	CHECK(profile__start_time_ns(got) <= T0);
	CHECK(profile__end_time_ns(got) >= T0 + 1000000000ULL - 1);
	for (i = 0; i < profile__sample_cnt(orig); i++) {
		const struct profile_agg_sample *a = profile__sample(orig, i);
		const uint32_t *fa, *fb;
		uint32_t na, nb, k;
		uint64_t count = 0;
		bool found = false;

		fa = profile__stack(orig, a->stack, &na);
		/* the exporter splits a sample per CPU: add up the decoded ones */
		for (j = 0; j < profile__sample_cnt(got); j++) {
			const struct profile_agg_sample *b = profile__sample(got, j);

			fb = profile__stack(got, b->stack, &nb);
			if (b->pid != a->pid || b->tid != a->tid || nb != na)
				continue;
			for (k = 0; k < na && frame_same(orig, fa[k], got, fb[k]); k++)
				;
			if (k < na)
				continue;
			found = true;
			count += b->count;
			CHECK_STR(b->thread_comm, a->thread_comm);
			CHECK_STR(b->comm, a->pid == 100 ? "app" : "other");
			CHECK_STR(label_of(got, b, "host.name"), "box-a");
			CHECK_STR(label_of(got, b, "service.name"), "checkout");
			if (a->pid == 100)
				CHECK_STR(label_of(got, b, "route"), "/api");
		}
		CHECK(found);
		CHECK_EQ_U64(count, a->count);
	}
}

static void round_trip(size_t timestamps_cap)
{
	struct otlp_request *q = NULL;
	struct fixture fx;
	struct pb_buf b;
	char why[128];
	const struct otlp_read_process *proc;

	fixture_make(&fx, timestamps_cap);
	encode(&fx, &b);
	REQUIRE(otlp_request__decode(b.data, b.len, NULL, &q, why, sizeof(why)) == 0);
	CHECK_EQ_U64(q->profiles_rejected, 0);
	CHECK_EQ_U64(q->profiles_accepted, 2); /* one CPU Profile per process */
	CHECK_EQ_U64(q->samples, 11);
	check_same(fx.p, q->profile);
	proc = otlp_request__process(q, 100);
	REQUIRE(proc);
	CHECK_STR(proc->exe, "/usr/bin/app");
	CHECK_STR(proc->container, "c0ffee");
	proc = otlp_request__process(q, 200);
	REQUIRE(proc);
	CHECK_STR(proc->exe, "/usr/bin/other");
	CHECK(!proc->container);
	CHECK(!otlp_request__process(q, 300));
	otlp_request__free(q);
	pb_buf__free(&b);
	profile__free(fx.p);
}

TEST(round_trip_timestamps)
{
	round_trip(1000); /* every event kept: the shape "timestamps only" */
}

TEST(round_trip_aggregated)
{
	round_trip(0); /* no event kept: one aggregated value per sample */
}

/* Every prefix of a valid request, and the request with each byte changed: a clean error
 * or a decode, whatever the byte.
 */
TEST(truncated_and_flipped)
{
	struct otlp_request *q = NULL;
	struct fixture fx;
	struct pb_buf b;
	uint8_t *copy;
	size_t i, ok = 0, bad = 0;
	char why[128];
	int err;

	fixture_make(&fx, 1000);
	encode(&fx, &b);
	copy = malloc(b.len);
	REQUIRE(copy);
	for (i = 0; i < b.len; i++) {
		err = otlp_request__decode(b.data, i, NULL, &q, why, sizeof(why));
		CHECK(err == 0 || err == -EBADMSG || err == -E2BIG);
		if (err)
			CHECK(why[0]); /* a reason is always given */
		ok += !err;
		bad += err != 0;
		otlp_request__free(q);
		q = NULL;
	}
	CHECK(bad > 0); /* most prefixes cut a field */
	for (i = 0; i < b.len; i++) {
		static const uint8_t flips[] = { 0xff, 0x80 };

		for (size_t k = 0; k < sizeof(flips); k++) {
			memcpy(copy, b.data, b.len);
			copy[i] ^= flips[k] ?: copy[i];
			err = otlp_request__decode(copy, b.len, NULL, &q, why, sizeof(why));
			CHECK(err == 0 || err == -EBADMSG || err == -E2BIG);
			otlp_request__free(q);
			q = NULL;
		}
	}
	free(copy);
	pb_buf__free(&b);
	profile__free(fx.p);
}

/* A request of one dictionary and one resource with one Profile of one sample; the sample's
 * stack index, the stack's location index and the first string are the test's.
 */
static void tiny_request(struct pb_buf *b, uint64_t stack_idx, uint64_t loc_idx,
			 const char *string0, const char *type)
{
	size_t dict, mark, rp, sp, prof, vt;

	pb_buf__init(b, (size_t)1 << 20);
	pb_buf__begin(b, 2, &dict);
	pb_buf__string(b, 5, string0);
	pb_buf__string(b, 5, type);
	pb_buf__string(b, 5, "count");
	pb_buf__begin(b, 2, &mark); /* location 0 */
	pb_buf__end(b, mark);
	pb_buf__begin(b, 2, &mark); /* location 1: an address */
	pb_buf__varint(b, 2, 0x1234);
	pb_buf__end(b, mark);
	pb_buf__begin(b, 7, &mark); /* stack 0 */
	pb_buf__end(b, mark);
	pb_buf__begin(b, 7, &mark); /* stack 1 */
	pb_buf__begin(b, 1, &vt);
	pb_buf__raw_varint(b, loc_idx);
	pb_buf__end(b, vt);
	pb_buf__end(b, mark);
	pb_buf__end(b, dict);
	pb_buf__begin(b, 1, &rp);
	pb_buf__begin(b, 2, &sp);
	pb_buf__begin(b, 2, &prof);
	pb_buf__begin(b, 1, &vt);
	pb_buf__varint(b, 1, 1);
	pb_buf__varint(b, 2, 2);
	pb_buf__end(b, vt);
	pb_buf__begin(b, 2, &mark);
	pb_buf__varint(b, 1, stack_idx);
	pb_buf__begin(b, 4, &vt);
	pb_buf__raw_varint(b, 3);
	pb_buf__end(b, vt);
	pb_buf__end(b, mark);
	pb_buf__end(b, prof);
	pb_buf__end(b, sp);
	pb_buf__end(b, rp);
	REQUIRE(!pb_buf__err(b));
}

static int decode_buf(const struct pb_buf *b, const struct otlp_read_limits *lim, char *why,
		      size_t why_sz, struct otlp_request **out)
{
	struct otlp_request *q = NULL;
	int err = otlp_request__decode(b->data, b->len, lim, &q, why, why_sz);

	if (out)
		*out = q;
	else
		otlp_request__free(q);
	return err;
}

TEST(tiny_request_decodes)
{
	struct otlp_request *q;
	struct pb_buf b;
	char why[128];

	tiny_request(&b, 1, 1, "", "samples");
	REQUIRE(decode_buf(&b, NULL, why, sizeof(why), &q) == 0);
	CHECK_EQ_U64(q->samples, 3);
	CHECK_EQ_U64(profile__sample_cnt(q->profile), 1);
	otlp_request__free(q);
	pb_buf__free(&b);
}

TEST(indexes_out_of_range)
{
	struct pb_buf b;
	char why[128];

	tiny_request(&b, 2, 1, "", "samples"); /* stack 2 of 2 */
	CHECK_EQ_INT(decode_buf(&b, NULL, why, sizeof(why), NULL), -EBADMSG);
	CHECK(strstr(why, "stack index"));
	pb_buf__free(&b);
	tiny_request(&b, 1, 2, "", "samples"); /* location 2 of 2 */
	CHECK_EQ_INT(decode_buf(&b, NULL, why, sizeof(why), NULL), -EBADMSG);
	CHECK(strstr(why, "location index"));
	pb_buf__free(&b);
	tiny_request(&b, 1, (uint64_t)-1, "", "samples"); /* int32 -1: a 10-byte varint */
	CHECK_EQ_INT(decode_buf(&b, NULL, why, sizeof(why), NULL), -EBADMSG);
	pb_buf__free(&b);
	tiny_request(&b, 1, 1, "x", "samples"); /* string_table[0] must be "" */
	CHECK_EQ_INT(decode_buf(&b, NULL, why, sizeof(why), NULL), -EBADMSG);
	CHECK(strstr(why, "string_table[0]"));
	pb_buf__free(&b);
}

TEST(other_sample_type_is_partial_success)
{
	struct otlp_request *q;
	struct pb_buf b;
	char why[128];

	tiny_request(&b, 1, 1, "", "alloc_objects");
	REQUIRE(decode_buf(&b, NULL, why, sizeof(why), &q) == 0);
	CHECK_EQ_U64(q->profiles_rejected, 1);
	CHECK_EQ_U64(q->profiles_accepted, 0);
	CHECK_EQ_U64(profile__sample_cnt(q->profile), 0);
	CHECK(strstr(q->rejected_why, "alloc_objects/count"));
	otlp_request__free(q);
	pb_buf__free(&b);
}

/* Lengths that say more than there is, varints that never end. */
TEST(lying_lengths_and_bad_varints)
{
	static const uint8_t cases[][12] = {
		{ 0x12, 0x7f, 0x2a, 0x00 },             /* dictionary of 127 bytes, 2 there */
		{ 0x12, 0x04, 0x2a, 0x7f, 0x00, 0x00 }, /* a string past its dictionary */
		{ 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
		{ 0x12, 0x02, 0x3a, 0x05 }, /* a stack past its end */
		{ 0x1f, 0x8b, 0x08, 0x00 }, /* gzip magic: wire type 7 */
		{ 0x0b, 0x00 },             /* a group */
	};
	static const size_t lens[] = { 4, 6, 12, 4, 4, 2 };
	struct otlp_request *q = NULL;
	char why[128];
	size_t i;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK_EQ_INT(otlp_request__decode(cases[i], lens[i], NULL, &q, why, sizeof(why)),
			     -EBADMSG);
		CHECK(!q);
	}
}

/* 10 million empty locations: refused at the table cap, before they are decoded. */
TEST(ten_million_locations)
{
	size_t n = 10 * 1000 * 1000, body = 2 * n, i;
	struct otlp_request *q = NULL;
	uint8_t *buf = malloc(body + 16), *p = buf;
	uint64_t v = body;
	char why[128];

	REQUIRE(buf);
	*p++ = 0x12; /* dictionary */
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	for (i = 0; i < n; i++) {
		*p++ = 0x12; /* location_table entry, empty */
		*p++ = 0x00;
	}
	CHECK_EQ_INT(otlp_request__decode(buf, (size_t)(p - buf), NULL, &q, why, sizeof(why)),
		     -E2BIG);
	CHECK(strstr(why, "table"));
	CHECK(!q);
	free(buf);
}

TEST(caps_of_samples_and_frames)
{
	struct otlp_read_limits lim = {
		.table_max = 1000,
		.resource_max = 10,
		.sample_max = 1000,
		.stack_max = 3,
		.frames_max = 1000,
		.string_max = 1000,
	};
	struct fixture fx;
	struct pb_buf b;
	char why[128];

	fixture_make(&fx, 1000);
	encode(&fx, &b);
	/* the first stack has 4 locations, the cap 3 */
	CHECK_EQ_INT(decode_buf(&b, &lim, why, sizeof(why), NULL), -E2BIG);
	CHECK(strstr(why, "stack deeper"));
	lim.stack_max = 16;
	lim.frames_max = 5; /* 4 + 2 per pair of samples: passed at the second */
	CHECK_EQ_INT(decode_buf(&b, &lim, why, sizeof(why), NULL), -E2BIG);
	CHECK(strstr(why, "frames"));
	lim.frames_max = 1000;
	lim.sample_max = 1;
	CHECK_EQ_INT(decode_buf(&b, &lim, why, sizeof(why), NULL), -E2BIG);
	CHECK(strstr(why, "samples"));
	lim.sample_max = 1000;
	lim.string_max = 4; /* "do_syscall_64" is longer */
	CHECK_EQ_INT(decode_buf(&b, &lim, why, sizeof(why), NULL), -E2BIG);
	lim.string_max = 1000;
	CHECK_EQ_INT(decode_buf(&b, &lim, why, sizeof(why), NULL), 0);
	pb_buf__free(&b);
	profile__free(fx.p);
}

int main(void)
{
	RUN(round_trip_timestamps);
	RUN(round_trip_aggregated);
	RUN(truncated_and_flipped);
	RUN(tiny_request_decodes);
	RUN(indexes_out_of_range);
	RUN(other_sample_type_is_partial_success);
	RUN(lying_lengths_and_bad_varints);
	RUN(ten_million_locations);
	RUN(caps_of_samples_and_frames);
	return test_summary();
}
