/* Minimal unit-test harness shared by tests/unit/test_*.c.
 *
 * A test file defines functions with TEST(name) and lists them in main() with RUN(name).
 * CHECK* macros record a failure (with file:line and the values) and let the test go on;
 * REQUIRE* macros abort the current test. SKIP(reason...) ends the current test as skipped
 * (unless it already failed); SKIP_SETUP(reason...) is for something scripts/setup.sh
 * installs: a skip on a developer's machine, a failure under CI (CI=true), where setup ran.
 * main() ends with `return test_summary();`, which prints one "ok"/"FAIL"/"SKIP" line per
 * test and "N passed, N failed, N skipped" for tests/run_unit.sh.
 */
#ifndef STACKSCOPE_TEST_H
#define STACKSCOPE_TEST_H

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int test__passed, test__failed, test__skipped, test__cur_failed, test__cur_skipped;
static char test__skip_reason[256];
static jmp_buf test__abort;

#define TEST(name) static void test_##name(void)

#define RUN(name)                                                          \
	do {                                                               \
		test__cur_failed = test__cur_skipped = 0;                  \
		if (!setjmp(test__abort))                                  \
			test_##name();                                     \
		if (test__cur_failed) {                                    \
			test__failed++;                                    \
			printf("FAIL %s\n", #name);                        \
		} else if (test__cur_skipped) {                            \
			test__skipped++;                                   \
			printf("SKIP %s: %s\n", #name, test__skip_reason); \
		} else {                                                   \
			test__passed++;                                    \
			printf("ok   %s\n", #name);                        \
		}                                                          \
		fflush(stdout);                                            \
	} while (0)

#define test__fail(...)                                  \
	do {                                             \
		printf("  %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__);                     \
		printf("\n");                            \
		test__cur_failed = 1;                    \
	} while (0)

/* True under CI (CI=true, set by .ci/run): scripts/setup.sh has run, so what it installs is
 * there and its absence is a failure.
 */
static inline int test_in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

#define SKIP(...)                                                                    \
	do {                                                                         \
		snprintf(test__skip_reason, sizeof(test__skip_reason), __VA_ARGS__); \
		test__cur_skipped = 1;                                               \
		longjmp(test__abort, 1);                                             \
	} while (0)

#define SKIP_SETUP(...)                                                                       \
	do {                                                                                  \
		if (!test_in_ci())                                                            \
			SKIP(__VA_ARGS__);                                                    \
		snprintf(test__skip_reason, sizeof(test__skip_reason), __VA_ARGS__);          \
		test__fail("%s: scripts/setup.sh installs it, so under CI this is a failure", \
			   test__skip_reason);                                                \
		longjmp(test__abort, 1);                                                      \
	} while (0)

#define CHECK(cond)                                            \
	do {                                                   \
		if (!(cond))                                   \
			test__fail("check failed: %s", #cond); \
	} while (0)

#define REQUIRE(cond)                                      \
	do {                                               \
		if (!(cond)) {                             \
			test__fail("required: %s", #cond); \
			longjmp(test__abort, 1);           \
		}                                          \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                              \
	do {                                                                            \
		long long test__a = (long long)(a), test__b = (long long)(b);           \
		if (test__a != test__b)                                                 \
			test__fail("%s == %s: %lld != %lld", #a, #b, test__a, test__b); \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                   \
	do {                                                                                 \
		uint64_t test__a = (uint64_t)(a), test__b = (uint64_t)(b);                   \
		if (test__a != test__b)                                                      \
			test__fail("%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b, test__a, \
				   test__b);                                                 \
	} while (0)

#define CHECK_STR(a, b)                                                                         \
	do {                                                                                    \
		const char *test__a = (a), *test__b = (b);                                      \
		if (!test__a || !test__b || strcmp(test__a, test__b))                           \
			test__fail("%s == %s: \"%s\" != \"%s\"", #a, #b,                        \
				   test__a ? test__a : "(null)", test__b ? test__b : "(null)"); \
	} while (0)

static inline int test_summary(void)
{
	printf("%d passed, %d failed, %d skipped\n", test__passed, test__failed, test__skipped);
	return test__failed ? 1 : 0;
}

/* Path of a built fixture: $BUILD/fixtures/NAME (BUILD set by the Makefile). */
static inline const char *test_fixture(const char *name)
{
	static char buf[4][512];
	static int i;
	const char *build = getenv("BUILD");
	char *out = buf[i++ & 3];

	snprintf(out, sizeof(buf[0]), "%s/fixtures/%s", build ? build : "build", name);
	return out;
}

/* The address nm gives SYMBOL in FILE (a fixture's ELF vaddr: from the toolchain, never from
 * the code under test); 0 when not found.
 */
static inline uint64_t test_nm_addr(const char *file, const char *symbol)
{
	char cmd[4400];
	unsigned long long addr = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "nm --defined-only '%s' | awk '$3 == \"%s\" { a = $1 } END { print a }'", file,
		 symbol);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llx", &addr) != 1)
		addr = 0;
	pclose(f);
	return addr;
}

/* Whether process pid gets to block in read(0, ...) within 5 s: a live runtime that printed
 * "ready" before calling its read is walked only once it waits there.
 */
static inline bool test_wait_reading_stdin(pid_t pid)
{
	char path[64], buf[128];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		bool in_read = false;

		if (f) {
			/* "0 0x0 ...": syscall read (x86-64 number 0) on fd 0 */
			in_read = fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 0x0 ", 6);
			fclose(f);
		}
		if (in_read)
			return true;
		usleep(10000);
	}
	return false;
}

/* The newest pyenv interpreter of 3.MINOR under $PYENV_ROOT (default /root/.pyenv), whatever
 * its patch level, into buf; -ENOENT when there is none. pyenv is not among what
 * scripts/setup.sh installs: a test that needs a missing one SKIPs.
 */
static inline int test_pyenv_python(int minor, char *buf, size_t cap)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[512];
	glob_t g;
	size_t i;
	int err = -ENOENT;

	snprintf(pattern, sizeof(pattern), "%s/versions/3.%d.*/bin/python3.%d",
		 root && *root ? root : "/root/.pyenv", minor, minor);
	if (glob(pattern, 0, NULL, &g))
		return -ENOENT;
	for (i = 0; i < g.gl_pathc; i++) {
		if (access(g.gl_pathv[i], X_OK))
			continue;
		/* same prefix up to the patch number: "3.8.9" sorts before "3.8.18" */
		if (err || strverscmp(g.gl_pathv[i], buf) > 0)
			snprintf(buf, cap, "%s", g.gl_pathv[i]);
		err = 0;
	}
	globfree(&g);
	return err;
}

/* One test per CPython minor version stackscope supports, pyenv_36 .. pyenv_313 (3.14: not in
 * pyenv here), each calling check(minor); RUN_PYENV() runs them in order.
 */
#define TEST_PYENV(check)  \
	TEST(pyenv_36)     \
	{                  \
		check(6);  \
	}                  \
	TEST(pyenv_37)     \
	{                  \
		check(7);  \
	}                  \
	TEST(pyenv_38)     \
	{                  \
		check(8);  \
	}                  \
	TEST(pyenv_39)     \
	{                  \
		check(9);  \
	}                  \
	TEST(pyenv_310)    \
	{                  \
		check(10); \
	}                  \
	TEST(pyenv_311)    \
	{                  \
		check(11); \
	}                  \
	TEST(pyenv_312)    \
	{                  \
		check(12); \
	}                  \
	TEST(pyenv_313)    \
	{                  \
		check(13); \
	}

#define RUN_PYENV()             \
	do {                    \
		RUN(pyenv_36);  \
		RUN(pyenv_37);  \
		RUN(pyenv_38);  \
		RUN(pyenv_39);  \
		RUN(pyenv_310); \
		RUN(pyenv_311); \
		RUN(pyenv_312); \
		RUN(pyenv_313); \
	} while (0)

#endif
