/* Unit tests for the folded-stacks exporter: exact file content for a known profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/folded.h"
#include "profile/profile.h"
#include "test.h"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	buf = calloc(1, 65536);
	if (buf)
		len = fread(buf, 1, 65535, f);
	fclose(f);
	(void)len;
	return buf;
}

/* A new empty file from the mkstemp template path (its name written back into it). */
static void new_file(char *path)
{
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	close(fd);
}

TEST(folded_content)
{
	struct profile_opts opts = { .period_ns = 1 };
	struct profile *p = profile__new(&opts);
	struct profile_mapping lib = { "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0, 0x1000, 0 };
	struct profile_line l_main[] = { { "main", "m.c", 1 } };
	struct profile_line l_inl[] = { { "inner", NULL, 0 },
					{ "mid", NULL, 0 },
					{ "outer", NULL, 0 } };
	struct profile_line l_bad[] = { { "op;erator\nnew", NULL, 0 } };
	struct profile_line l_err[] = { { "[unwind: truncated]", NULL, 0 } };
	uint32_t m, f_main, f_inl, f_libc, f_k, f_bad, f_err;
	char path[] = "/tmp/stackscope-test-folded-XXXXXX";
	char *text = NULL;

	REQUIRE(p);
	new_file(path);
	m = profile__add_mapping(p, &lib);
	f_main = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x10, l_main, 1 });
	f_inl = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x20, l_inl, 3 });
	f_libc = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0xabc, NULL, 0 });
	f_k = profile__add_frame(p,
				 &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff0010, NULL, 0 });
	f_bad = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x30, l_bad, 1 });
	f_err = profile__add_frame(p, &(struct profile_frame){ FRAME_ERROR, 0, 0, l_err, 1 });
	REQUIRE(f_main && f_inl && f_libc && f_k && f_bad && f_err);
	{
		uint32_t s1[] = { f_k, f_libc, f_inl, f_main }, s2[] = { f_bad, f_main },
			 s3[] = { f_err };
		struct profile_sample s[] = {
			{ s1, 4, 1, 1, "app", "app", 0, 0, 2 },
			{ s1, 4, 2, 2, "app", "other", 0, 0, 3 }, /* other pid: same line */
			{ s2, 2, 1, 1, "app", "app", 0, 0, 1 },
			{ s3, 1, 9, 9, "a;b\n", "t", 0, 0, 7 },
			{ s1, 4, 3, 3, "zz", "zz", 0, 0, 1 },
		};
		size_t i;

		for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
			REQUIRE(profile__add_sample(p, &s[i]) == 0);
	}
	REQUIRE(folded__write(p, path) == 0);
	text = read_all(path);
	REQUIRE(text);
	CHECK_STR(text, "a:b ;[unwind: truncated] 7\n"
			"app;main;op:erator new 1\n"
			"app;main;outer;mid;inner;libc.so.6+0xabc;[kernel]+0xffff0010 5\n"
			"zz;main;outer;mid;inner;libc.so.6+0xabc;[kernel]+0xffff0010 1\n");
	CHECK(folded__write(p, "/nonexistent-dir/x.folded") < 0);
	free(text);
	unlink(path);
	profile__free(p);
}

TEST(folded_empty)
{
	struct profile_opts opts = { 0 };
	struct profile *p = profile__new(&opts);
	char path[] = "/tmp/stackscope-test-folded-XXXXXX";
	char *text;

	REQUIRE(p);
	new_file(path);
	CHECK_EQ_INT(folded__write(p, path), 0);
	text = read_all(path);
	CHECK(text && !*text);
	free(text);
	unlink(path);
	profile__free(p);
}

/* Goroutine labels: one pseudo-frame each after the process name, in the order given; samples
 * that differ only in their labels stay apart, equal label sets aggregate; a ';' in a value
 * cannot split the frame.
 */
TEST(folded_labels)
{
	struct profile_opts opts = { .period_ns = 1 };
	struct profile *p = profile__new(&opts);
	struct profile_line l_work[] = { { "main.work", "w.go", 3 } };
	struct profile_label fast[] = { { "route", "/api/fast" }, { "worker", "1" } };
	struct profile_label slow[] = { { "route", "/a;b" }, { "worker", "" } };
	struct profile_label fast2[] = { { "route", "/api/fast" }, { "worker", "1" } };
	char path[] = "/tmp/stackscope-test-folded-XXXXXX";
	struct profile_label out;
	uint32_t f_work, st[1];
	char *text = NULL;

	REQUIRE(p);
	new_file(path);
	f_work = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0x10, l_work, 1 });
	REQUIRE(f_work);
	st[0] = f_work;
	{
		struct profile_sample s[] = {
			{ st, 1, 1, 1, "app", "app", 0, 0, 2, fast, 2 },
			{ st, 1, 1, 1, "app", "app", 0, 0, 3, slow, 2 },
			{ st, 1, 1, 1, "app", "app", 0, 0, 4, fast2, 2 }, /* same set as fast */
			{ st, 1, 1, 1, "app", "app", 0, 0, 1, NULL, 0 },
		};
		size_t i;

		for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
			REQUIRE(profile__add_sample(p, &s[i]) == 0);
	}
	CHECK_EQ_INT(profile__sample_cnt(p), 3);
	CHECK_EQ_INT(profile__label_cnt(p, profile__sample(p, 0)->labels), 2);
	CHECK(profile__label(p, profile__sample(p, 0)->labels, 1, &out));
	CHECK_STR(out.key, "worker");
	CHECK_STR(out.value, "1");
	CHECK(!profile__label(p, profile__sample(p, 0)->labels, 2, &out));
	CHECK_EQ_INT(profile__sample(p, 0)->count, 6);
	CHECK_EQ_INT(profile__sample(p, 2)->labels, 0);
	CHECK_EQ_INT(profile__label_cnt(p, 0), 0);
	REQUIRE(folded__write(p, path) == 0);
	text = read_all(path);
	REQUIRE(text);
	CHECK_STR(text, "app;[label: route=/a:b];[label: worker=];main.work 3\n"
			"app;[label: route=/api/fast];[label: worker=1];main.work 6\n"
			"app;main.work 1\n");
	free(text);
	unlink(path);
	profile__free(p);
}

int main(void)
{
	RUN(folded_content);
	RUN(folded_empty);
	RUN(folded_labels);
	return test_summary();
}
