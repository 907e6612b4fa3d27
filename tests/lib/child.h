/* Child processes for the unit tests that read a live runtime (test_php.c, test_perl.c,
 * test_python.c), and now_ns() for every test that hands times to the process table or a
 * runtime (the clock they are given in the profiler: CLOCK_MONOTONIC).
 *
 * A struct test_child is either stopped (pid 0, to_child -1, from_child NULL) or running: a
 * child whose stdin is to_child and whose stdout is from_child. test_child_stop() takes either
 * and leaves it stopped, so a test can stop a child on every path without tracking which.
 * The workloads (tests/data/php_introspect.php, perl_introspect.pl, py_introspect.py) print a
 * line "R" when they are about to wait on stdin.
 */
#ifndef STACKSCOPE_TEST_CHILD_H
#define STACKSCOPE_TEST_CHILD_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

struct test_child {
	pid_t pid;
	int to_child;     /* its stdin: a line (or EOF) lets it finish */
	FILE *from_child; /* its stdout */
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Kills and reaps a running child, closes its pipes; c is stopped after. */
static inline void test_child_stop(struct test_child *c)
{
	if (c->to_child >= 0)
		close(c->to_child);
	if (c->from_child)
		fclose(c->from_child);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	c->pid = 0;
	c->to_child = -1;
	c->from_child = NULL;
}

/* Starts argv[0] with the NULL-terminated argv, its stdin and stdout piped to c. 0, or -errno
 * with c stopped (an exec that fails shows as a child that exits 127 with no output).
 */
static inline int test_child_start(struct test_child *c, const char *const *argv)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int err;

	c->pid = 0;
	c->to_child = -1;
	c->from_child = NULL;
	if (pipe(in) || pipe(out))
		goto fail;
	c->pid = fork();
	if (c->pid < 0)
		goto fail;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->to_child = in[1];
	c->from_child = fdopen(out[0], "r");
	if (!c->from_child) {
		err = -errno;
		close(out[0]);
		test_child_stop(c);
		return err;
	}
	return 0;
fail:
	err = -errno;
	if (in[0] >= 0) {
		close(in[0]);
		close(in[1]);
	}
	if (out[0] >= 0) {
		close(out[0]);
		close(out[1]);
	}
	c->pid = 0;
	return err;
}

/* Reads the child's output up to its line "R" (printed just before it reads stdin), then waits
 * until it blocks in that read: a walk in between could find the frames of the print, not
 * those the test expects. 0, or -1 with c stopped.
 */
static inline int test_child_wait_ready(struct test_child *c)
{
	char text[256];

	while (fgets(text, sizeof(text), c->from_child))
		if (!strcmp(text, "R\n"))
			return test_wait_reading_stdin(c->pid) ? 0 : (test_child_stop(c), -1);
	test_child_stop(c);
	return -1;
}

/* The number of the last line of `script` that ends in `comment` `mark` (e.g. "//", "HOT":
 * "// HOT"), or 0.
 */
static inline int test_marked_line(const char *script, const char *comment, const char *mark)
{
	char text[512], want[64];
	FILE *f = fopen(script, "r");
	int n = 0, found = 0;
	size_t tl, wl;

	snprintf(want, sizeof(want), "%s %s\n", comment, mark);
	wl = strlen(want);
	while (f && fgets(text, sizeof(text), f)) {
		n++;
		tl = strlen(text);
		if (tl >= wl && !strcmp(text + tl - wl, want))
			found = n;
	}
	if (f)
		fclose(f);
	return found;
}

#endif
