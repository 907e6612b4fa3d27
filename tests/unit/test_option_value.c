/* Unit tests for cli/option_value.c, the option values record, agent and top share: ranges,
 * signs and trailing text of integers and numbers; pid lists (empty items, the cap, lists
 * that add up over several -p, a list too long to copy); directories; the error lines'
 * return value.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/option_value.h"
#include "test.h"

TEST(ulong)
{
	unsigned long v = 0;

	CHECK_EQ_INT(option_value__ulong("7", 1, 10, &v), 0);
	CHECK_EQ_INT(v, 7);
	CHECK_EQ_INT(option_value__ulong("1", 1, 10, &v), 0);
	CHECK_EQ_INT(option_value__ulong("10", 1, 10, &v), 0);
	CHECK_EQ_INT(option_value__ulong("0", 1, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("11", 1, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("", 0, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("+5", 0, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("-5", 0, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("5x", 0, 10, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("99999999999999999999999", 0, ULONG_MAX, &v), -EINVAL);
	CHECK_EQ_INT(option_value__ulong("18446744073709551615", 1, ULONG_MAX, &v), 0);
}

TEST(double_value)
{
	double d = 0;

	CHECK_EQ_INT(option_value__double("0.5", 0.2, 60, &d), 0);
	CHECK(d == 0.5);
	CHECK_EQ_INT(option_value__double("1e1", 0.2, 60, &d), 0);
	CHECK(d == 10);
	CHECK_EQ_INT(option_value__double("0.1", 0.2, 60, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("61", 0.2, 60, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("", -1, 60, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("2s", 0.2, 60, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("nan", -INFINITY, INFINITY, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("inf", -INFINITY, INFINITY, &d), -EINVAL);
	CHECK_EQ_INT(option_value__double("1e999", 0, INFINITY, &d), -EINVAL);
}

TEST(pid_list)
{
	char long_list[1100];
	pid_t pids[3];
	size_t cnt = 0;

	CHECK_EQ_INT(option_value__pid_list("12,34", pids, 3, &cnt), 0);
	CHECK_EQ_INT(cnt, 2);
	CHECK_EQ_INT(pids[0], 12);
	CHECK_EQ_INT(pids[1], 34);
	/* a second -p adds to the first, up to the cap */
	CHECK_EQ_INT(option_value__pid_list("56", pids, 3, &cnt), 0);
	CHECK_EQ_INT(cnt, 3);
	CHECK_EQ_INT(pids[2], 56);
	CHECK_EQ_INT(option_value__pid_list("78", pids, 3, &cnt), -EINVAL);
	cnt = 0;
	CHECK_EQ_INT(option_value__pid_list(",9,,", pids, 3, &cnt), 0);
	CHECK_EQ_INT(cnt, 1);
	CHECK_EQ_INT(pids[0], 9);
	cnt = 0;
	CHECK_EQ_INT(option_value__pid_list(",,", pids, 3, &cnt), -EINVAL);
	CHECK_EQ_INT(option_value__pid_list("", pids, 3, &cnt), -EINVAL);
	CHECK_EQ_INT(option_value__pid_list("0", pids, 3, &cnt), -EINVAL);
	CHECK_EQ_INT(option_value__pid_list("2147483648", pids, 3, &cnt), -EINVAL);
	CHECK_EQ_INT(option_value__pid_list("2147483647", pids, 3, &cnt), 0);
	CHECK_EQ_INT(pids[0], INT_MAX);
	cnt = 0;
	CHECK_EQ_INT(option_value__pid_list("1,x", pids, 3, &cnt), -EINVAL);
	memset(long_list, '1', sizeof(long_list) - 1);
	long_list[sizeof(long_list) - 1] = '\0';
	cnt = 0;
	CHECK_EQ_INT(option_value__pid_list(long_list, pids, 3, &cnt), -EINVAL);
	CHECK_EQ_INT(cnt, 0);
}

TEST(directory)
{
	CHECK_EQ_INT(option_value__directory("/"), 0);
	CHECK_EQ_INT(option_value__directory("/proc/self/"), 0);
	CHECK_EQ_INT(option_value__directory("/proc/self/status"), -ENOTDIR);
	CHECK_EQ_INT(option_value__directory("/no/such/dir"), -ENOENT);
	CHECK_EQ_INT(option_value__directory(""), -ENOENT);
}

/* What call writes to stderr, into buf; its value in ret. */
#define STDERR_OF(buf, ret, call)                                            \
	do {                                                                 \
		FILE *tmp_ = tmpfile();                                      \
		int saved_ = dup(STDERR_FILENO);                             \
		size_t n_;                                                   \
                                                                             \
		REQUIRE(tmp_ &&saved_ >= 0);                                 \
		fflush(stderr);                                              \
		REQUIRE(dup2(fileno(tmp_), STDERR_FILENO) == STDERR_FILENO); \
		ret = (call);                                                \
		fflush(stderr);                                              \
		REQUIRE(dup2(saved_, STDERR_FILENO) == STDERR_FILENO);       \
		close(saved_);                                               \
		rewind(tmp_);                                                \
		n_ = fread(buf, 1, sizeof(buf) - 1, tmp_);                   \
		buf[n_] = '\0';                                              \
		fclose(tmp_);                                                \
	} while (0)

TEST(error_lines)
{
	char out[256];
	int ret;

	STDERR_OF(out, ret, option_error("test", "a %s line (%d)", "sample", 1));
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK_STR(out, "stackscope test: a sample line (1)\n");
	STDERR_OF(out, ret, option_error_getopt("top", ':', "-F"));
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK_STR(out, "stackscope top: option '-F' needs a value\n");
	STDERR_OF(out, ret, option_error_getopt("record", '?', "--nope"));
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK_STR(out, "stackscope record: unknown option '--nope' (see --help)\n");
}

int main(void)
{
	RUN(ulong);
	RUN(double_value);
	RUN(pid_list);
	RUN(directory);
	RUN(error_lines);
	return test_summary();
}
