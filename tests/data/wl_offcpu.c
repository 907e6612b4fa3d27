/*
 * Off-CPU workload for tests/system/test_offcpu.sh: four threads block in four known chains
 * at once, each measuring the time it spent blocked there:
 *   sleep:  sleep_alpha -> sleep_beta -> nanosleep(1 ms), SLEEPS times
 *   pipe:   pipe_reader -> read() of a pipe a feeder thread writes every 10 ms, ROUNDS times
 *   futex:  lock_waiter -> pthread_mutex_lock() of a mutex another thread holds for 10 ms
 *   fsync:  fsync_writer -> fsync() after writing 1 MiB to a file in DIR, ROUNDS times
 * The first three are pure waits: the wall time of the call (its few microseconds on CPU are
 * noise). fsync also works on CPU (writeback): wall time minus the thread's CPU time. (A
 * profiler that works at switches may have its time charged to the thread coming in, which
 * then looks on CPU: the reason pure waits are measured by the wall clock.)
 * Usage: wl_offcpu DIR OUT [WARMUP_MS]: writes "chain nanoseconds" lines to OUT when all are
 * done. The threads start after WARMUP_MS (default 300, at most 10000), spent on CPU in
 * warm_up(): a profiler has read the process's mappings by then (stays before that may end
 * in "[unwind: file not loaded]" or "[unwind: unmapped pc]").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WL_NOINLINE __attribute__((noinline))
#define SLEEPS 300
#define ROUNDS 30

static const char *dir;
static int pipe_fd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t lock_held, lock_taken;
static uint64_t blocked_sleep, blocked_pipe, blocked_futex, blocked_fsync;

static uint64_t clock_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Wall minus own CPU time since the marks. */
struct mark {
	uint64_t wall, cpu;
};

static struct mark mark_now(void)
{
	struct mark m;

	m.cpu = clock_of(CLOCK_THREAD_CPUTIME_ID);
	m.wall = clock_of(CLOCK_MONOTONIC);
	return m;
}


static uint64_t blocked_since(struct mark m)
{
	uint64_t wall = clock_of(CLOCK_MONOTONIC) - m.wall;
	uint64_t cpu = clock_of(CLOCK_THREAD_CPUTIME_ID) - m.cpu;

	return wall > cpu ? wall - cpu : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

WL_NOINLINE static void sleep_beta(void)
{
	struct timespec ts = { 0, 1000000L };
	uint64_t t0 = clock_of(CLOCK_MONOTONIC);

	nanosleep(&ts, NULL);
	blocked_sleep += clock_of(CLOCK_MONOTONIC) - t0;
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

WL_NOINLINE static void sleep_alpha(void)
{
	sleep_beta();
	__asm__ volatile("" ::: "memory");
}

static void *sleeper(void *arg)
{
	int i;

	for (i = 0; i < SLEEPS; i++)
		sleep_alpha();
	return arg;
}

static void *feeder(void *arg)
{
	int i;

	for (i = 0; i < ROUNDS; i++) {
		sleep_ms(10);
		if (write(pipe_fd[1], "x", 1) != 1)
			exit(1);
	}
	return arg;
}

WL_NOINLINE static void pipe_reader(void)
{
	char c;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t t0 = clock_of(CLOCK_MONOTONIC);

		if (read(pipe_fd[0], &c, 1) != 1)
			exit(1);
		blocked_pipe += clock_of(CLOCK_MONOTONIC) - t0;
	}
	__asm__ volatile("" ::: "memory");
}

static void *reader(void *arg)
{
	pipe_reader();
	return arg;
}

static void *holder(void *arg)
{
	int i;

	for (i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&lock);
		sem_post(&lock_held);
		sleep_ms(10);
		pthread_mutex_unlock(&lock);
		sem_wait(&lock_taken);
	}
	return arg;
}

WL_NOINLINE static void lock_waiter(void)
{
	int i;

	for (i = 0; i < ROUNDS; i++) {
		uint64_t t0;

		sem_wait(&lock_held);
		t0 = clock_of(CLOCK_MONOTONIC);
		pthread_mutex_lock(&lock);
		blocked_futex += clock_of(CLOCK_MONOTONIC) - t0;
		pthread_mutex_unlock(&lock);
		sem_post(&lock_taken);
	}
	__asm__ volatile("" ::: "memory");
}

static void *waiter(void *arg)
{
	lock_waiter();
	return arg;
}

WL_NOINLINE static void fsync_writer(int fd)
{
	static char buf[1 << 20];
	int i;

	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < ROUNDS; i++) {
		struct mark m;

		if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
			exit(1);
		m = mark_now();
		if (fsync(fd))
			exit(1);
		blocked_fsync += blocked_since(m);
	}
	__asm__ volatile("" ::: "memory");
}

static void *syncer(void *arg)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/wl_offcpu.data", dir);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	fsync_writer(fd);
	close(fd);
	unlink(path);
	return arg;
}

WL_NOINLINE static void warm_up(long ms)
{
	uint64_t end = clock_of(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000ULL;
	volatile unsigned long spin = 0;

	while (clock_of(CLOCK_MONOTONIC) < end)
		spin++;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { sleeper, feeder, reader, holder, waiter, syncer };
	pthread_t t[6];
	long warm_ms = argc > 3 ? atol(argv[3]) : 300;
	FILE *out;
	size_t i;

	if (argc < 3 || argc > 4 || warm_ms < 0 || warm_ms > 10000) {
		fprintf(stderr, "usage: wl_offcpu DIR OUT [WARMUP_MS]\n");
		return 2;
	}
	dir = argv[1];
	warm_up(warm_ms);
	if (pipe(pipe_fd) || sem_init(&lock_held, 0, 0) || sem_init(&lock_taken, 0, 0))
		return 1;
	for (i = 0; i < 6; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL))
			return 1;
	for (i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	out = fopen(argv[2], "w");
	if (!out)
		return 1;
	fprintf(out, "sleep %llu\npipe %llu\nfutex %llu\nfsync %llu\n",
		(unsigned long long)blocked_sleep, (unsigned long long)blocked_pipe,
		(unsigned long long)blocked_futex, (unsigned long long)blocked_fsync);
	return fclose(out) ? 1 : 0;
}
