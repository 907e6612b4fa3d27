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
	int fd;

	REQUIRE(p);
	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
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
	int fd;

	REQUIRE(p);
	fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	CHECK_EQ_INT(folded__write(p, path), 0);
	text = read_all(path);
	CHECK(text && !*text);
	free(text);
	unlink(path);
	profile__free(p);
}

int main(void)
{
	RUN(folded_content);
	RUN(folded_empty);
	return test_summary();
}
