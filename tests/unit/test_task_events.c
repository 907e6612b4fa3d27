/* Unit tests for the per-task events' listing and their tell-apart of threads made meanwhile
 * (sampler/task_events.h); the events themselves need root: tests/system/test_pertask.sh.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sampler/task_events.h"
#include "test.h"

/* Before the program was set: no program inherited; after: inherited; between: unknown. */
TEST(birth_from_the_last_pids)
{
	CHECK_EQ_INT(task_birth__of(100, 200, 210, 220), TASK_BORN_BEFORE);
	CHECK_EQ_INT(task_birth__of(200, 200, 210, 220), TASK_BORN_BEFORE);
	CHECK_EQ_INT(task_birth__of(201, 200, 210, 220), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(210, 200, 210, 220), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(211, 200, 210, 220), TASK_BORN_AFTER);
	/* nothing allocated while the program was set: the boundary is exact */
	CHECK_EQ_INT(task_birth__of(201, 200, 200, 205), TASK_BORN_AFTER);
}

/* A wrap of the pids (or a failed read) between the reads: nothing can be told, whatever the
 * tid: a small tid may be new, a large one old.
 */
TEST(birth_unknown_across_a_wrap)
{
	CHECK_EQ_INT(task_birth__of(100, 4194000, 50, 60), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(4194100, 4194000, 50, 60), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(100, 200, 210, 30), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(100, -ENOENT, 210, 220), TASK_BORN_DURING);
	CHECK_EQ_INT(task_birth__of(100, 200, -EIO, 220), TASK_BORN_DURING);
}

struct tids {
	pid_t v[16];
	int cnt;
};

static int keep_tid(pid_t tid, void *ctx)
{
	struct tids *t = ctx;

	if (t->cnt < 16)
		t->v[t->cnt++] = tid;
	return 0;
}

static int stop_at_second(pid_t tid, void *ctx)
{
	struct tids *t = ctx;

	t->v[t->cnt++] = tid;
	return t->cnt == 2 ? 7 : 0;
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	if (fd >= 0)
		close(fd);
}

static int cmp_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

/* A fake proc root: the numeric entries of PID/task only, a stop from the callback returned,
 * a process gone as -ENOENT, the last pid from loadavg's last field.
 */
TEST(listing_in_a_fake_proc)
{
	char root[] = "/tmp/stackscope-task-events.XXXXXX", path[256];
	struct tids t = { 0 };
	int fd;

	REQUIRE(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/42", root);
	REQUIRE(!mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/42/task", root);
	REQUIRE(!mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/42/task/42", root);
	REQUIRE(!mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/42/task/57", root);
	REQUIRE(!mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/42/task/5x", root);
	touch(path);
	snprintf(path, sizeof(path), "%s/42/task/-3", root);
	touch(path);

	CHECK_EQ_INT(task_list__each(root, 42, keep_tid, &t), 0);
	REQUIRE(t.cnt == 2);
	qsort(t.v, 2, sizeof(t.v[0]), cmp_pid);
	CHECK_EQ_INT(t.v[0], 42);
	CHECK_EQ_INT(t.v[1], 57);
	t.cnt = 0;
	CHECK_EQ_INT(task_list__each(root, 42, stop_at_second, &t), 7);
	CHECK_EQ_INT(task_list__each(root, 43, keep_tid, &t), -ENOENT);

	CHECK_EQ_INT(task_list__last_pid(root), -ENOENT);
	snprintf(path, sizeof(path), "%s/loadavg", root);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, "0.52 0.58 0.59 3/712 123456\n", 28) == 28);
	close(fd);
	CHECK_EQ_INT(task_list__last_pid(root), 123456);

	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(path), 0);
}

static volatile int thread_go;

static void *waiter(void *arg)
{
	while (!thread_go)
		usleep(1000);
	return arg;
}

/* The real /proc: this process's threads, a new one among them; the last pid is at least it. */
TEST(listing_this_process)
{
	struct tids t = { 0 };
	pthread_t th;
	pid_t self = getpid(), last;
	bool main_seen = false;
	int i;

	REQUIRE(!pthread_create(&th, NULL, waiter, NULL));
	CHECK_EQ_INT(task_list__each("/proc", self, keep_tid, &t), 0);
	thread_go = 1;
	pthread_join(th, NULL);
	CHECK(t.cnt >= 2);
	for (i = 0; i < t.cnt; i++)
		main_seen |= t.v[i] == self;
	CHECK(main_seen);
	last = task_list__last_pid("/proc");
	qsort(t.v, (size_t)t.cnt, sizeof(t.v[0]), cmp_pid);
	CHECK(last >= t.v[t.cnt - 1] || last < self); /* (or the pids wrapped since) */
}

int main(void)
{
	RUN(birth_from_the_last_pids);
	RUN(birth_unknown_across_a_wrap);
	RUN(listing_in_a_fake_proc);
	RUN(listing_this_process);
	return test_summary();
}
