/* Unit tests for the in-memory profile: interning, deduplication, aggregation, timestamp
 * caps, display names, top-self and the read accessors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "test.h"

TEST(profile_dedup_and_interning)
{
	struct profile_opts opts = { .period_ns = 1000 };
	struct profile *p = profile__new(&opts);
	char fn1[] = "func", fn2[] = "func", path2[] = "/usr/lib/libx.so";
	struct profile_mapping m1 = { "/usr/lib/libx.so", "beef", 0x1000, 0x2000, 0 };
	struct profile_mapping m2 = { path2, "beef", 0x1000, 0x2000, 0 };
	struct profile_mapping m3 = { "/usr/lib/libx.so", "beef", 0x1000, 0x2000, 0x1000 };
	struct profile_line a[] = { { fn1, "x.c", 3 } }, b[] = { { fn2, "x.c", 3 } };
	struct profile_line c[] = { { fn2, "x.c", 4 } };
	uint32_t id1, id2, id3, fa, fb, fc, fd;
	const struct profile_frame *f;

	REQUIRE(p);
	id1 = profile__add_mapping(p, &m1);
	id2 = profile__add_mapping(p, &m2);
	id3 = profile__add_mapping(p, &m3);
	CHECK_EQ_INT(id1, 1);
	CHECK_EQ_INT(id2, 1);
	CHECK_EQ_INT(id3, 2);
	CHECK_EQ_INT(profile__mapping_cnt(p), 2);
	CHECK(profile__mapping(p, 1)->path != m1.path); /* a copy */
	CHECK_STR(profile__mapping(p, 1)->path, "/usr/lib/libx.so");
	CHECK_STR(profile__mapping(p, 2)->build_id, "beef");
	CHECK(profile__mapping(p, 3) == NULL && profile__mapping(p, 0) == NULL);

	fa = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 1, 0x10, a, 1 });
	fb = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 1, 0x10, b, 1 });
	fc = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 1, 0x10, c, 1 });
	fd = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 1, 0x10, a, 1 });
	/* a return address and a leaf pc at one address: their lines differ once symbolized */
	CHECK(profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 1, 0x10, a, 1,
							     .call_site = true }) != fa);
	CHECK_EQ_INT(fa, 1);
	CHECK_EQ_INT(fb, 1);
	CHECK_EQ_INT(fc, 2);
	CHECK_EQ_INT(fd, 3);
	CHECK_EQ_INT(profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 9, 0, NULL, 0 }),
		     0);
	CHECK_EQ_INT(errno, EINVAL);
	f = profile__frame(p, 2);
	REQUIRE(f && f->line_cnt == 1);
	CHECK_EQ_INT(f->lines[0].line, 4);
	/* interned: equal strings are equal pointers, and the inputs were copied */
	CHECK(profile__frame(p, 1)->lines[0].function == profile__frame(p, 2)->lines[0].function);
	CHECK(profile__frame(p, 1)->lines[0].function != fn1);
	fn1[0] = 'X'; /* the caller's buffer is not referenced */
	CHECK_STR(profile__frame_name(p, 1, 0), "func");
	CHECK(profile__string_cnt(p) > 0);
	CHECK(profile__string(p, 0) == NULL);
	CHECK(profile__string(p, (uint32_t)profile__string_cnt(p)) != NULL);
	profile__free(p);
}

TEST(profile_aggregation_and_events)
{
	struct profile_opts opts = { .period_ns = 1000, .start_time_ns = 5, .timestamps_cap = 2 };
	struct profile *p = profile__new(&opts);
	struct profile_line l[] = { { "f", NULL, 0 } };
	uint32_t fr, stack[2], bad[] = { 42 }, cnt;
	const struct profile_agg_sample *s;
	const uint32_t *st;

	REQUIRE(p);
	fr = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0, 0x10, l, 1 });
	REQUIRE(fr == 1);
	stack[0] = stack[1] = fr;
	for (int i = 0; i < 3; i++) {
		char comm[] = "app"; /* a fresh buffer each time: compared by content */
		struct profile_sample smp = { stack, 2, 10, 11, comm, "t", (uint32_t)i, 100 + i, 2 };

		REQUIRE(profile__add_sample(p, &smp) == 0);
	}
	{
		struct profile_sample other_tid = { stack, 2, 10, 12, "app", "t", 0, 1, 1 };
		struct profile_sample other_stack = { stack, 1, 10, 11, "app", "t", 0, 1, 1 };
		struct profile_sample other_pid = { stack, 1, 20, 11, "app", "t", 0, 1, 1 };
		struct profile_sample invalid = { bad, 1, 1, 1, "x", "x", 0, 0, 1 };

		REQUIRE(profile__add_sample(p, &other_tid) == 0);
		REQUIRE(profile__add_sample(p, &other_stack) == 0);
		REQUIRE(profile__add_sample(p, &other_pid) == 0);
		CHECK_EQ_INT(profile__add_sample(p, &invalid), -EINVAL);
	}
	CHECK_EQ_INT(profile__sample_cnt(p), 4);
	CHECK_EQ_INT(profile__stack_cnt(p), 2);
	CHECK_EQ_U64(profile__total_samples(p), 9);
	CHECK_EQ_INT(profile__process_cnt(p), 2);
	CHECK_EQ_U64(profile__period_ns(p), 1000);
	CHECK_EQ_U64(profile__start_time_ns(p), 5);
	CHECK_EQ_U64(profile__end_time_ns(p), 0);
	profile__set_end_time(p, 77);
	CHECK_EQ_U64(profile__end_time_ns(p), 77);

	s = profile__sample(p, 0);
	REQUIRE(s);
	CHECK_EQ_U64(s->count, 6);
	CHECK_EQ_INT(s->pid, 10);
	CHECK_EQ_INT(s->tid, 11);
	CHECK_STR(s->comm, "app");
	CHECK_STR(s->thread_comm, "t");
	CHECK_EQ_INT(s->event_cnt, 2); /* capped */
	CHECK_EQ_U64(s->events[0].time_ns, 100);
	CHECK_EQ_U64(s->events[1].time_ns, 101);
	CHECK_EQ_INT(s->events[1].cpu, 1);
	CHECK_EQ_U64(s->events[1].count, 2);
	st = profile__stack(p, s->stack, &cnt);
	CHECK(st && cnt == 2 && st[0] == fr && st[1] == fr);
	CHECK(profile__stack(p, 99, &cnt) == NULL && cnt == 0);
	CHECK(profile__sample(p, 4) == NULL);
	profile__free(p);
}

TEST(profile_frame_names)
{
	struct profile_opts opts = { 0 };
	struct profile *p = profile__new(&opts);
	struct profile_mapping m = { "/opt/app/lib/libfoo.so.1", NULL, 0, 0x10000, 0 };
	struct profile_line inl[] = { { "inner", NULL, 0 }, { "outer", NULL, 0 } };
	struct profile_line err[] = { { "[unwind: no CFI]", NULL, 0 } };
	uint32_t mid, f_native, f_kernel, f_nomap, f_err, f_err0, f_inl;

	REQUIRE(p);
	mid = profile__add_mapping(p, &m);
	f_native = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, mid, 0x1234, NULL,
								  0 });
	f_kernel = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0,
								  0xffffffff8100abcdULL, NULL, 0 });
	f_nomap =
		profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0xbeef, NULL, 0 });
	f_err = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, err, 1 });
	f_err0 = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, NULL, 0 });
	f_inl = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, mid, 0x20, inl, 2 });
	CHECK_STR(profile__frame_name(p, f_native, 0), "libfoo.so.1+0x1234");
	CHECK_STR(profile__frame_name(p, f_kernel, 0), "[kernel]+0xffffffff8100abcd");
	CHECK_STR(profile__frame_name(p, f_nomap, 0), "[unknown]+0xbeef");
	CHECK_STR(profile__frame_name(p, f_err, 0), "[unwind: no CFI]");
	CHECK_STR(profile__frame_name(p, f_err0, 0), "[unknown error]");
	CHECK_STR(profile__frame_name(p, f_inl, 0), "inner");
	CHECK_STR(profile__frame_name(p, f_inl, 1), "outer");
	CHECK(profile__frame_name(p, f_inl, 2) == NULL);
	CHECK(profile__frame_name(p, f_native, 1) == NULL);
	CHECK(profile__frame_name(p, 0, 0) == NULL);
	CHECK(profile__frame_name(p, 99, 0) == NULL);
	profile__free(p);
}

TEST(profile_top_self)
{
	struct profile_opts opts = { 0 };
	struct profile *p = profile__new(&opts);
	struct profile_line inl[] = { { "inner", NULL, 0 }, { "outer", NULL, 0 } };
	struct profile_line inner2[] = { { "inner", "other.c", 9 } };
	struct profile_line b[] = { { "b", NULL, 0 } }, a[] = { { "a", NULL, 0 } };
	struct profile_top_entry top[4];
	uint32_t f_inl, f_inner2, f_a, f_b;
	size_t n;

	REQUIRE(p);
	f_inl = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 1, inl, 2 });
	f_inner2 = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 2, inner2, 1 });
	f_a = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 3, a, 1 });
	f_b = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 4, b, 1 });
	{
		uint32_t s1[] = { f_inl, f_a }, s2[] = { f_inner2 }, s3[] = { f_b, f_a },
			 s4[] = { f_a };
		struct profile_sample s[] = {
			{ s1, 2, 1, 1, "x", "x", 0, 0, 3 }, /* inner (inlined) is the leaf */
			{ s2, 1, 1, 1, "x", "x", 0, 0, 2 }, /* another frame named inner */
			{ s3, 2, 1, 1, "x", "x", 0, 0, 4 },   { s4, 1, 2, 2, "y", "y", 0, 0, 4 },
			{ NULL, 0, 3, 3, "z", "z", 0, 0, 1 }, /* empty stack: no leaf */
		};

		for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
			REQUIRE(profile__add_sample(p, &s[i]) == 0);
	}
	n = profile__top_self(p, top, 4);
	REQUIRE(n == 3);
	CHECK_STR(top[0].name, "inner");
	CHECK_EQ_U64(top[0].self, 5);
	CHECK_STR(top[1].name, "a"); /* tie with b (4): by name */
	CHECK_EQ_U64(top[1].self, 4);
	CHECK_STR(top[2].name, "b");
	CHECK_EQ_U64(top[2].self, 4);
	CHECK_EQ_INT(profile__top_self(p, top, 1), 1);
	CHECK_STR(top[0].name, "inner");
	CHECK_EQ_INT(profile__top_self(p, NULL, 0), 0);
	CHECK_EQ_U64(profile__total_samples(p), 14);
	CHECK_EQ_INT(profile__process_cnt(p), 3);
	profile__free(p);
}

/* Many samples through the hash tables (growth, collisions): every count must land. */
TEST(profile_many_samples)
{
	struct profile_opts opts = { .timestamps_cap = 1 };
	struct profile *p = profile__new(&opts);
	uint32_t frames[64], st[4];
	uint64_t sum = 0;
	size_t i;

	REQUIRE(p);
	for (i = 0; i < 64; i++) {
		char name[32];
		struct profile_line l = { name, NULL, 0 };

		snprintf(name, sizeof(name), "fn%zu", i);
		frames[i] =
			profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, i, &l, 1 });
		REQUIRE(frames[i] == i + 1);
	}
	for (i = 0; i < 200000; i++) {
		struct profile_sample s = {
			st, 3, (uint32_t)(i % 7), (uint32_t)(i % 5), "c", "c", 0, i, 1
		};

		st[0] = frames[i % 64];
		st[1] = frames[(i / 64) % 64];
		st[2] = frames[(i / 4096) % 3];
		REQUIRE(profile__add_sample(p, &s) == 0);
	}
	for (i = 0; i < profile__sample_cnt(p); i++) {
		sum += profile__sample(p, i)->count;
		CHECK(profile__sample(p, i)->event_cnt == 1);
	}
	CHECK_EQ_U64(sum, 200000);
	CHECK_EQ_U64(profile__total_samples(p), 200000);
	CHECK_EQ_INT(profile__stack_cnt(p), 64 * 64 * 3 > 200000 ? 200000 : 64 * 64 * 3);
	CHECK_EQ_INT(profile__process_cnt(p), 7);
	profile__free(p);
}

/* Counts from outside (a pprof import, a store query) near 2^64: sums saturate at UINT64_MAX
 * rather than wrap. Three samples of 2^63 - 1, 2^63 - 1 and 2 used to total 0.
 */
/* A sample with no frame (a pprof sample with no location): its empty stack reads back as no
 * frames, without arithmetic on the stack pool before it exists (UBSan under asan-test; found
 * by tests/fuzz/fuzz_http.c).
 */
TEST(profile_empty_stack)
{
	struct profile_opts opts = { .period_ns = 1000000 };
	struct profile *p = profile__new(&opts);
	struct profile_sample s = { .frame_cnt = 0, .pid = 1, .tid = 1, .count = 3 };
	const struct profile_agg_sample *a;
	uint32_t cnt = 99;

	REQUIRE(p);
	REQUIRE(!profile__add_sample(p, &s));
	a = profile__sample(p, 0);
	REQUIRE(a);
	CHECK(profile__stack(p, a->stack, &cnt) == NULL);
	CHECK_EQ_INT(cnt, 0);
	CHECK_EQ_U64(profile__total_samples(p), 3);
	profile__free(p);
}

TEST(profile_counts_saturate)
{
	struct profile_opts opts = { .period_ns = 1000000, .timestamps_cap = 4 };
	struct profile *p = profile__new(&opts);
	struct profile_line l[] = { { "f", NULL, 0 }, { "g", NULL, 0 } };
	uint32_t f1, f2;
	struct profile_sample s = { .frame_cnt = 1, .pid = 1, .tid = 1, .count = INT64_MAX };
	struct profile_top_entry top[2];
	const struct profile_agg_sample *a;

	REQUIRE(p);
	f1 = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 1, &l[0], 1 });
	f2 = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 2, &l[1], 1 });
	s.frames = &f1;
	REQUIRE(!profile__add_sample(p, &s));
	REQUIRE(!profile__add_sample(p, &s));
	s.count = 2;
	REQUIRE(!profile__add_sample(p, &s));
	s.frames = &f2;
	s.count = 5;
	REQUIRE(!profile__add_sample(p, &s));
	CHECK_EQ_U64(profile__total_samples(p), UINT64_MAX);
	a = profile__sample(p, 0);
	REQUIRE(a);
	CHECK_EQ_U64(a->count, UINT64_MAX);
	/* on CPU time: count x period, saturated too */
	CHECK_EQ_U64(profile__sample_ns(p, a), UINT64_MAX);
	CHECK_EQ_U64(profile__sample_ns(p, profile__sample(p, 1)), 5000000);
	/* the hottest function is the one with the (saturated) huge count */
	REQUIRE(profile__top_self(p, top, 2) == 2);
	CHECK_STR(top[0].name, "f");
	CHECK_EQ_U64(top[0].self, UINT64_MAX);
	CHECK_EQ_U64(profile__count_add(UINT64_MAX - 1, 1), UINT64_MAX);
	CHECK_EQ_U64(profile__count_add(UINT64_MAX, UINT64_MAX), UINT64_MAX);
	CHECK_EQ_U64(profile__count_add(3, 4), 7);
	CHECK_EQ_U64(profile__count_mul(1ULL << 32, 1ULL << 32), UINT64_MAX);
	CHECK_EQ_U64(profile__count_mul(3, 4), 12);
	profile__free(p);
}

/* Everything a reader sees of p, as text (events included), for comparing two profiles. */
static char *profile_text(const struct profile *p)
{
	char *out = NULL;
	size_t sz = 0, i;
	FILE *f = open_memstream(&out, &sz);

	fprintf(f, "%llu %llu %llu %d %d\n", (unsigned long long)profile__period_ns(p),
		(unsigned long long)profile__start_time_ns(p),
		(unsigned long long)profile__end_time_ns(p), profile__has_cpu(p),
		profile__has_off_cpu(p));
	for (i = 0; i < profile__sample_cnt(p); i++) {
		const struct profile_agg_sample *a = profile__sample(p, i);
		uint32_t n, k, l;
		const uint32_t *fr = profile__stack(p, a->stack, &n);
		struct profile_label lb;

		fprintf(f, "%u/%u %s/%s x%llu off %llu:", a->pid, a->tid, a->comm, a->thread_comm,
			(unsigned long long)a->count, (unsigned long long)a->off_cpu_ns);
		for (k = 0; profile__label(p, a->labels, k, &lb); k++)
			fprintf(f, " [%s=%s]", lb.key, lb.value);
		for (k = 0; k < a->event_cnt; k++)
			fprintf(f, " @%llu/%u/%llu/%llu", (unsigned long long)a->events[k].time_ns,
				a->events[k].cpu, (unsigned long long)a->events[k].count,
				(unsigned long long)a->events[k].off_cpu_ns);
		for (k = 0; k < n; k++) {
			const struct profile_frame *fm = profile__frame(p, fr[k]);
			const struct profile_mapping *m = profile__mapping(p, fm->mapping);

			fprintf(f, " | %u %d %llx %s %d %s", fr[k], fm->kind,
				(unsigned long long)fm->address, fm->runtime ?: "-", fm->call_site,
				profile__frame_name(p, fr[k], 0));
			if (m)
				fprintf(f, " {%s %s %llx-%llx@%llx %s %s}", m->path,
					m->build_id ?: "-", (unsigned long long)m->start,
					(unsigned long long)m->limit,
					(unsigned long long)m->file_offset, m->file_hash ?: "-",
					m->go_build_id ?: "-");
			for (l = 0; l < fm->line_cnt; l++)
				fprintf(f, " %s@%s:%u:%u", fm->lines[l].function,
					fm->lines[l].file ?: "-", fm->lines[l].line,
					fm->lines[l].column);
		}
		fprintf(f, "\n");
	}
	fclose(f);
	return out;
}

/* A copy reads the same as its source, events past the cap and lines set afterwards included,
 * and outlives it (what the store's sink keeps of an interval it could not write yet).
 */
TEST(profile_copy)
{
	struct profile_opts opts = {
		.period_ns = 1000, .start_time_ns = 50, .timestamps_cap = 2, .off_cpu = true
	};
	struct profile *p = profile__new(&opts), *c;
	struct profile_mapping m = { "/bin/app", "b1d", 0x1000, 0x9000, 0, "ffee", NULL };
	struct profile_line l1[] = { { "inl", "a.c", 3, 7 }, { "outer", "a.c", 9 } };
	struct profile_line lk[] = { { "kfn", NULL, 0 } }, lset[] = { { "late", "b.c", 2 } };
	struct profile_label labels[] = { { "route", "/x" }, { "k", "v" } };
	uint32_t mid, f[4];
	char *a, *b;
	int i;

	REQUIRE(p);
	mid = profile__add_mapping(p, &m);
	f[0] = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, mid, 0x1234, l1, 2 });
	f[1] = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff0000, lk, 1 });
	f[2] = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, mid, 0x2000, NULL, 0,
							      "go", true });
	f[3] = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, lset, 1,
							      "cpython" });
	for (i = 0; i < 5; i++) /* 5 events, 2 kept */
		REQUIRE(!profile__add_sample(p,
					     &(struct profile_sample){ .frames = f,
								       .frame_cnt = 4,
								       .pid = 7,
								       .tid = 8,
								       .comm = "app",
								       .thread_comm = "w",
								       .cpu = (uint32_t)i,
								       .time_ns = 100 + (uint64_t)i,
								       .count = 1 + (uint64_t)i,
								       .labels = labels,
								       .label_cnt = 2 }));
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = f + 1,
								  .frame_cnt = 1,
								  .pid = 9,
								  .tid = 9,
								  .comm = "idle",
								  .thread_comm = "idle",
								  .time_ns = 300,
								  .count = 1,
								  .off_cpu_ns = 12345 }));
	REQUIRE(!profile__set_frame_lines(p, f[2], lset, 1)); /* symbolized afterwards */
	profile__set_end_time(p, 999);
	c = profile__copy(p);
	REQUIRE(c);
	a = profile_text(p);
	b = profile_text(c);
	CHECK_STR(b, a);
	CHECK_EQ_U64(profile__total_samples(c), profile__total_samples(p));
	CHECK(profile__mem_sz(c) > 0 && profile__mem_sz(p) > 0);
	profile__free(p);
	free(b);
	b = profile_text(c); /* it stands alone */
	CHECK_STR(b, a);
	free(a);
	free(b);
	profile__free(c);
}

int main(void)
{
	RUN(profile_dedup_and_interning);
	RUN(profile_aggregation_and_events);
	RUN(profile_frame_names);
	RUN(profile_top_self);
	RUN(profile_many_samples);
	RUN(profile_empty_stack);
	RUN(profile_counts_saturate);
	RUN(profile_copy);
	return test_summary();
}
