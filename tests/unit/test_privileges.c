/* Unit tests for the capability drop (src/base/privileges.c): the set it keeps, the names it
 * logs, the /proc status parser, and the drop itself in a forked child with threads blocked in
 * a condition variable and in poll(): every thread ends with no_new_privs and nothing outside
 * the running set, and the threads carry on afterwards. Runs as root or not.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/privileges.h"
#include "test.h"

#define BIT(c) (1ULL << (c))
#define RUNNING (BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH) | BIT(CAP_CHECKPOINT_RESTORE))

TEST(running_set)
{
	uint64_t all = (1ULL << 41) - 1;

	CHECK_EQ_U64(privileges__running_set(all, 0, false), RUNNING);
	CHECK_EQ_U64(privileges__running_set(all, PRIVILEGES_WRITE_ANY_PATH, false),
		     RUNNING | BIT(CAP_DAC_OVERRIDE));
	CHECK_EQ_U64(privileges__running_set(all, 0, true), RUNNING | BIT(CAP_BPF));
	CHECK_EQ_U64(privileges__running_set(all, PRIVILEGES_ATTACH_PROBES, false),
		     RUNNING | BIT(CAP_PERFMON) | BIT(CAP_SYS_ADMIN));
	/* only what the process had: a capability absent at start stays absent */
	CHECK_EQ_U64(privileges__running_set(BIT(CAP_SYS_PTRACE) | BIT(CAP_BPF), 0, false),
		     BIT(CAP_SYS_PTRACE));
	CHECK_EQ_U64(privileges__running_set(0, PRIVILEGES_WRITE_ANY_PATH, true), 0);
}

TEST(format)
{
	char buf[128], small[12];
	size_t n;

	cap_set__format(0, buf, sizeof(buf));
	CHECK_STR(buf, "none");
	n = cap_set__format(RUNNING, buf, sizeof(buf));
	CHECK_STR(buf, "cap_dac_read_search,cap_sys_ptrace,cap_checkpoint_restore");
	CHECK_EQ_INT(n, strlen(buf));
	cap_set__format(BIT(CAP_CHOWN) | BIT(45), buf, sizeof(buf));
	CHECK_STR(buf, "cap_chown,45"); /* a capability newer than our table */
	n = cap_set__format(RUNNING, small, sizeof(small));
	CHECK_EQ_INT(n, strlen("cap_dac_read_search,cap_sys_ptrace,cap_checkpoint_restore"));
	CHECK_EQ_INT(strlen(small), sizeof(small) - 1); /* truncated, terminated */
}

TEST(status_parser)
{
	char path[] = "/tmp/stackscope-test-status-XXXXXX";
	struct cap_state st;
	int fd = mkstemp(path);
	FILE *f;

	REQUIRE(fd >= 0);
	f = fdopen(fd, "w");
	REQUIRE(f);
	fprintf(f, "Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t0000010000080004\n"
		   "CapEff:\t0000010000080004\nCapBnd:\t000001fffeffffff\n"
		   "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t0\n");
	fclose(f);
	CHECK_EQ_INT(cap_state__read(path, &st), 0);
	CHECK_EQ_U64(st.prm, RUNNING);
	CHECK_EQ_U64(st.eff, RUNNING);
	CHECK_EQ_U64(st.bnd, 0x1fffeffffffULL);
	CHECK_EQ_U64(st.inh, 0);
	CHECK(st.no_new_privs);

	f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, "CapPrm:\t0\nCapEff:\t0\n"); /* no CapBnd, ... */
	fclose(f);
	CHECK_EQ_INT(cap_state__read(path, &st), -EINVAL);
	unlink(path);
	CHECK_EQ_INT(cap_state__read(path, &st), -ENOENT);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int released;
static int wake_pipe[2];
static char tag1, tag2; /* what each thread returns when it ends normally */

static void *wait_cond(void *arg)
{
	pthread_mutex_lock(&lock);
	while (!released)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

static void *wait_poll(void *arg)
{
	struct pollfd p = { .fd = wake_pipe[0], .events = POLLIN };
	char c;

	/* an interrupted poll() is retried, as the agent's threads do */
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	return read(wake_pipe[0], &c, 1) == 1 ? arg : NULL;
}

/* In the forked child: 0 when every thread is dropped and the threads still work. */
static int child_drop(void)
{
	pthread_t t1, t2;
	void *r1 = NULL, *r2 = NULL;
	struct dirent *e;
	int threads = 0, bad = 0;
	DIR *d;

	if (pipe(wake_pipe) || pthread_create(&t1, NULL, wait_cond, &tag1) ||
	    pthread_create(&t2, NULL, wait_poll, &tag2))
		return 10;
	usleep(20000); /* both blocked */
	if (privileges__drop(PRIVILEGES_LOG_DEBUG))
		return 11;
	d = opendir("/proc/self/task");
	if (!d)
		return 12;
	while ((e = readdir(d))) {
		char path[300];
		struct cap_state st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		if (cap_state__read(path, &st))
			continue;
		threads++;
		if ((st.prm | st.eff) & ~RUNNING || st.inh || st.amb || !st.no_new_privs ||
		    st.eff != st.prm)
			bad++;
	}
	closedir(d);
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	if (write(wake_pipe[1], "x", 1) != 1)
		return 13;
	pthread_join(t1, &r1);
	pthread_join(t2, &r2);
	if (threads != 3)
		return 14;
	if (bad)
		return 15;
	return r1 == &tag1 && r2 == &tag2 ? 0 : 16;
}

TEST(drop_every_thread)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_drop());
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

int main(void)
{
	log__set_level(LOG_WARN);
	RUN(running_set);
	RUN(format);
	RUN(status_parser);
	RUN(drop_every_thread);
	return test_summary();
}
