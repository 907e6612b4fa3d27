/* The runtime fold (src/profile/runtime_fold.c): native frames between two frames of one
 * runtime go, the rest stays; stacks that fold alike merge with their counts; the source
 * profile is untouched; and the --fold values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/runtime_fold.h"
#include "test.h"

struct fixture {
	struct profile *p;
	uint32_t leaf, vm1, vm2, vm3, main_, rb1, rb2, rb3, py, err;
};

static uint32_t runtime_frame(struct profile *p, const char *runtime, const char *name)
{
	struct profile_line l = { .function = name, .file = "x.rb", .line = 3 };

	return profile__add_frame(
		p, &(struct profile_frame){
			   .kind = FRAME_RUNTIME, .lines = &l, .line_cnt = 1, .runtime = runtime });
}

static uint32_t native_frame(struct profile *p, uint32_t mapping, uint64_t addr, const char *name)
{
	struct profile_line l = { .function = name };

	return profile__add_frame(p, &(struct profile_frame){ .kind = FRAME_NATIVE,
							      .mapping = mapping,
							      .address = addr,
							      .lines = name ? &l : NULL,
							      .line_cnt = name ? 1 : 0 });
}

static void add(struct profile *p, const uint32_t *frames, uint32_t cnt, uint64_t count)
{
	struct profile_sample s = { .frames = frames,
				    .frame_cnt = cnt,
				    .pid = 7,
				    .tid = 7,
				    .comm = "ruby",
				    .thread_comm = "ruby",
				    .count = count };

	REQUIRE(!profile__add_sample(p, &s));
}

static void fixture_init(struct fixture *x)
{
	struct profile_opts opts = { .period_ns = 1000, .timestamps_cap = 4 };
	struct profile_mapping lib = { .path = "/usr/lib/libruby.so", .limit = 0x100000 };
	uint32_t m;

	x->p = profile__new(&opts);
	REQUIRE(x->p);
	m = profile__add_mapping(x->p, &lib);
	REQUIRE(m);
	x->leaf = native_frame(x->p, m, 0x500, "rb_ary_push");
	x->vm1 = native_frame(x->p, m, 0x1000, "vm_call0");
	x->vm2 = native_frame(x->p, m, 0x2004, NULL); /* "libruby.so+0x2004" */
	x->vm3 = native_frame(x->p, m, 0x2008, NULL);
	x->main_ = native_frame(x->p, m, 0x10, "main");
	x->rb1 = runtime_frame(x->p, "ruby", "gamma");
	x->rb2 = runtime_frame(x->p, "ruby", "beta");
	x->rb3 = runtime_frame(x->p, "ruby", "alpha");
	x->py = runtime_frame(x->p, "cpython", "py_main");
	x->err = profile__add_frame(
		x->p, &(struct profile_frame){
			      .kind = FRAME_ERROR,
			      .lines = &(struct profile_line){ .function = "[unwind: x]" },
			      .line_cnt = 1 });
	REQUIRE(x->leaf && x->vm1 && x->vm2 && x->vm3 && x->rb1 && x->py && x->err);
}

/* The frame names of sample idx of p, leaf first, joined by ';'. */
static const char *names(const struct profile *p, size_t idx, char *buf, size_t sz)
{
	const struct profile_agg_sample *s = profile__sample(p, idx);
	const uint32_t *frames;
	uint32_t cnt, i;
	size_t len = 0;

	buf[0] = 0;
	frames = profile__stack(p, s->stack, &cnt);
	for (i = 0; i < cnt && len < sz; i++)
		len += (size_t)snprintf(buf + len, sz - len, "%s%s", i ? ";" : "",
					profile__frame_name(p, frames[i], 0));
	return buf;
}

TEST(folds_between_script_frames)
{
	struct fixture x;
	struct profile *f;
	char buf[512];

	fixture_init(&x);
	/* leaf first: the VM's frames between gamma and beta, and between beta and alpha */
	add(x.p, (uint32_t[]){ x.leaf, x.rb1, x.vm1, x.vm2, x.rb2, x.vm3, x.rb3, x.vm1, x.main_ },
	    9, 3);
	/* the same script shape through other VM frames: merges with the first */
	add(x.p, (uint32_t[]){ x.leaf, x.rb1, x.vm3, x.rb2, x.rb3, x.vm1, x.main_ }, 7, 2);
	/* another runtime above: its boundary is not folded; an error frame is kept */
	add(x.p, (uint32_t[]){ x.rb1, x.err, x.vm2, x.rb2, x.vm1, x.py, x.main_ }, 7, 1);
	f = runtime_fold__copy(x.p);
	REQUIRE(f);
	CHECK_EQ_U64(profile__sample_cnt(x.p), 3); /* the source is untouched */
	REQUIRE(profile__sample_cnt(f) == 2);
	CHECK_STR(names(f, 0, buf, sizeof(buf)), "rb_ary_push;gamma;beta;alpha;vm_call0;main");
	CHECK_EQ_U64(profile__sample(f, 0)->count, 5);
	CHECK_STR(names(f, 1, buf, sizeof(buf)), "gamma;[unwind: x];beta;vm_call0;py_main;main");
	CHECK_EQ_U64(profile__total_samples(f), 6);
	CHECK_EQ_U64(profile__period_ns(f), 1000);
	profile__free(f);
	profile__free(x.p);
}

TEST(parse)
{
	bool fold = false;

	CHECK_EQ_INT(runtime_fold__parse("runtime", &fold), 0);
	CHECK(fold);
	CHECK_EQ_INT(runtime_fold__parse("none", &fold), 0);
	CHECK(!fold);
	CHECK_EQ_INT(runtime_fold__parse("vm", &fold), -EINVAL);
	CHECK_EQ_INT(runtime_fold__parse("", &fold), -EINVAL);
}

int main(void)
{
	RUN(folds_between_script_frames);
	RUN(parse);
	return test_summary();
}
