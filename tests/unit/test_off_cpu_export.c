/* Unit tests for off-CPU samples in the exporters: pprof sample types and values, folded
 * weights in nanoseconds (off CPU alone, and the wall-clock view with CPU samples).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/folded.h"
#include "export/pprof.h"
#include "export/pprof_read.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "test.h"

#define PERIOD 10000000ULL /* 100 Hz */

/* main -> work (CPU, 2 samples) and main -> wait -> [off-cpu: sleep] (2 stays, 3 + 4 ms). */
static struct profile *make(bool cpu)
{
	struct profile_opts opts = { .period_ns = PERIOD, .off_cpu = true, .no_cpu = !cpu };
	struct profile *p = profile__new(&opts);
	struct profile_line l_main[] = { { "main", NULL, 0 } }, l_work[] = { { "work", NULL, 0 } };
	struct profile_line l_wait[] = { { "wait", NULL, 0 } };
	struct profile_line l_leaf[] = { { "[off-cpu: sleep]", NULL, 0 } };
	uint32_t f_main, f_work, f_wait, f_leaf, on[2], off[3];
	struct profile_sample s = { .pid = 1, .tid = 1, .comm = "app", .thread_comm = "app" };

	if (!p)
		return NULL;
	f_main = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x10, l_main, 1 });
	f_work = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x20, l_work, 1 });
	f_wait = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x30, l_wait, 1 });
	f_leaf = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, l_leaf, 1 });
	on[0] = f_work, on[1] = f_main;
	off[0] = f_leaf, off[1] = f_wait, off[2] = f_main;
	if (cpu) {
		s.frames = on, s.frame_cnt = 2, s.count = 2;
		profile__add_sample(p, &s);
	}
	s.frames = off, s.frame_cnt = 3, s.count = 1, s.off_cpu_ns = 3000000;
	profile__add_sample(p, &s);
	s.off_cpu_ns = 4000000;
	profile__add_sample(p, &s);
	return p;
}

static char *folded_text(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (folded__fwrite(p, f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static struct pprof_profile *pprof_of(const struct profile *p)
{
	struct pprof_profile *pp = NULL;
	struct pb_buf b;

	pb_buf__init(&b, 1 << 20);
	if (pprof__encode(p, &b) || pprof_profile__decode(b.data, b.len, 1 << 20, &pp))
		pp = NULL;
	pb_buf__free(&b);
	return pp;
}

static const char *str(const struct pprof_profile *pp, int64_t i)
{
	return i >= 0 && (size_t)i < pp->string_cnt ? pp->strings[i].s : "?";
}

/* p's folded text must be `folded`; its pprof, decoded, has `types` sample types, the first
 * samples/count and the last off_cpu/nanoseconds (NULL: failed, reported).
 */
static struct pprof_profile *outputs(const struct profile *p, const char *folded, size_t types)
{
	char *text = folded_text(p);
	struct pprof_profile *pp;

	CHECK(text != NULL);
	if (text)
		CHECK_STR(text, folded);
	free(text);
	pp = pprof_of(p);
	CHECK(pp != NULL);
	if (!pp)
		return NULL;
	CHECK_EQ_U64(pp->sample_type_cnt, types);
	if (pp->sample_type_cnt != types) {
		pprof_profile__free(pp);
		return NULL;
	}
	CHECK_STR(str(pp, pp->sample_types[0].type), "samples");
	CHECK_STR(str(pp, pp->sample_types[types - 1].type), "off_cpu");
	CHECK_STR(str(pp, pp->sample_types[types - 1].unit), "nanoseconds");
	return pp;
}

TEST(off_cpu_only)
{
	struct profile *p = make(false);
	struct pprof_profile *pp;
	size_t i;

	REQUIRE(p);
	CHECK(profile__has_off_cpu(p) && !profile__has_cpu(p));
	pp = outputs(p, "app;main;wait;[off-cpu: sleep] 7000000\n", 2);
	REQUIRE(pp);
	CHECK_STR(str(pp, pp->default_sample_type), "off_cpu");
	REQUIRE(pp->sample_cnt == 1);
	CHECK_EQ_U64(pp->samples[0].values[0], 2);       /* two stays */
	CHECK_EQ_U64(pp->samples[0].values[1], 7000000); /* 7 ms off CPU */
	for (i = 0; i < pp->sample_cnt; i++)
		CHECK_EQ_U64(pp->samples[i].value_cnt, 2);
	pprof_profile__free(pp);
	profile__free(p);
}

TEST(off_cpu_with_cpu_is_wall_clock)
{
	struct profile *p = make(true);
	struct pprof_profile *pp;
	size_t i;

	REQUIRE(p);
	/* CPU: 2 samples x 10 ms; off CPU: 7 ms */
	pp = outputs(p, "app;main;wait;[off-cpu: sleep] 7000000\napp;main;work 20000000\n", 3);
	REQUIRE(pp);
	CHECK_STR(str(pp, pp->sample_types[1].type), "cpu");
	CHECK_EQ_U64(pp->period, PERIOD);
	REQUIRE(pp->sample_cnt == 2);
	for (i = 0; i < 2; i++) {
		const int64_t *v = pp->samples[i].values;

		REQUIRE(pp->samples[i].value_cnt == 3);
		if (pp->samples[i].location_cnt == 2) { /* main -> work: on CPU only */
			CHECK_EQ_U64(v[0], 2);
			CHECK_EQ_U64(v[1], 2 * PERIOD);
			CHECK_EQ_U64(v[2], 0);
		} else { /* the stays: off CPU only */
			CHECK_EQ_U64(v[0], 2);
			CHECK_EQ_U64(v[1], 0);
			CHECK_EQ_U64(v[2], 7000000);
		}
	}
	pprof_profile__free(pp);
	profile__free(p);
}

int main(void)
{
	RUN(off_cpu_only);
	RUN(off_cpu_with_cpu_is_wall_clock);
	return test_summary();
}
