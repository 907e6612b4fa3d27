/* Unit tests for proc/process_text.c: a live child's command line (arguments joined by
 * spaces) and environment (variables in order; strings without '=' or with an empty name
 * skipped), nothing for a pid that does not exist, and the variable walk over a buffer cut
 * in the middle of a string.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/process_text.h"
#include "test.h"

/* A child that waits in sleep(1) with the given environment; its pid, or -1. */
static pid_t start_sleeper(char *const envp[])
{
	char *const argv[] = { "sleep", "30", NULL };
	pid_t pid = fork();

	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	/* wait until the exec has replaced our copied image: the command line says so */
	for (int i = 0; pid > 0 && i < 500; i++) {
		char *cmd = process_text__cmdline(pid);
		bool done = cmd && !strcmp(cmd, "sleep 30");

		free(cmd);
		if (done)
			break;
		usleep(10000);
	}
	return pid;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

TEST(live_child)
{
	char *const envp[] = { "FOO=bar", "NOEQ", "=nameless", "EMPTY=", "B=x=y", NULL };
	const char *name, *value;
	size_t len = 0, pos = 0, name_len;
	char *cmd, *env;
	pid_t pid = start_sleeper(envp);

	REQUIRE(pid > 0);
	cmd = process_text__cmdline(pid);
	env = process_text__environ(pid, &len);
	stop(pid);
	REQUIRE(cmd && env);
	CHECK_STR(cmd, "sleep 30");
	CHECK(process_text__next_var(env, len, &pos, &name, &name_len, &value));
	CHECK(name_len == 3 && !strncmp(name, "FOO", 3) && !strcmp(value, "bar"));
	CHECK(process_text__next_var(env, len, &pos, &name, &name_len, &value));
	CHECK(name_len == 5 && !strncmp(name, "EMPTY", 5) && !strcmp(value, ""));
	CHECK(process_text__next_var(env, len, &pos, &name, &name_len, &value));
	CHECK(name_len == 1 && !strncmp(name, "B", 1) && !strcmp(value, "x=y"));
	CHECK(!process_text__next_var(env, len, &pos, &name, &name_len, &value));
	free(cmd);
	free(env);
}

TEST(gone)
{
	size_t len = 1;

	CHECK(!process_text__cmdline(0x7ffffff0));
	CHECK(!process_text__environ(0x7ffffff0, &len));
	CHECK_EQ_INT(len, 0);
}

TEST(cut_buffer)
{
	/* as read_text() leaves a cut environment: the last string ends at the added NUL */
	static const char env[] = "A=1\0LONG=abc";
	const char *name, *value;
	size_t pos = 0, name_len;

	CHECK(process_text__next_var(env, sizeof(env) - 1, &pos, &name, &name_len, &value));
	CHECK(process_text__next_var(env, sizeof(env) - 1, &pos, &name, &name_len, &value));
	CHECK(name_len == 4 && !strcmp(value, "abc"));
	CHECK(!process_text__next_var(env, sizeof(env) - 1, &pos, &name, &name_len, &value));
}

int main(void)
{
	RUN(live_child);
	RUN(gone);
	RUN(cut_buffer);
	return test_summary();
}
