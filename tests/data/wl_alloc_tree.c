/*
 * Allocation workload for tests/system/test_alloc_tree.sh: processes a recorded command starts.
 *
 *   wl_alloc_tree exec PROG ARGS...  allocates PRE_EXEC_BLOCKS x 2 MiB in pre_exec_blocks()
 *                                    (never freed), then execs PROG: the old image's heap goes
 *                                    with it, PROG's allocations are the process's from then on.
 *   wl_alloc_tree fork DIR           forks two children, each writes DIR/NAME.pid and waits for
 *                                    DIR/go (the test's: their probes are attached by then):
 *                                    "exits" leaks EXITS_BLOCKS x 2 MiB in exiting_leak() and
 *                                    exits; "stays" leaks STAYS_BLOCKS x 2 MiB in child_leak(),
 *                                    writes DIR/stays.done and lives on (60 s at most, or until
 *                                    DIR/end) after the parent, which exits once "exits" has
 *                                    exited and "stays" is done: the recording ends then.
 * Sizes are constants the test knows; 2 MiB blocks are each sampled at any rate up to 64 KiB.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCK (2u << 20)
#define PRE_EXEC_BLOCKS 8
#define EXITS_BLOCKS 12
#define STAYS_BLOCKS 16

static volatile uintptr_t sink;

/* Waits up to secs for path to exist: 0 when it does. */
static int wait_file(const char *path, int secs)
{
	int i;

	for (i = 0; i < secs * 100; i++) {
		if (!access(path, F_OK))
			return 0;
		usleep(10000);
	}
	return -1;
}

static void write_file(const char *dir, const char *name, long v)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		exit(1);
	fprintf(f, "%ld\n", v);
	if (fclose(f))
		exit(1);
}

static __attribute__((noinline)) void leak(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		char *p = malloc(BLOCK);

		if (!p)
			exit(1);
		p[0] = 1;
		sink += (uintptr_t)p;
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void pre_exec_blocks(void)
{
	leak(PRE_EXEC_BLOCKS);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void exiting_leak(void)
{
	leak(EXITS_BLOCKS);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void child_leak(void)
{
	leak(STAYS_BLOCKS);
	__asm__ volatile("" ::: "memory");
}

/* A child of the fork mode: NAME.pid, DIR/go, then its work. */
static pid_t child(const char *dir, const char *name, void (*work)(void))
{
	char path[4096];
	pid_t pid = fork();

	if (pid)
		return pid;
	write_file(dir, name, (long)getpid());
	snprintf(path, sizeof(path), "%s/go", dir);
	if (wait_file(path, 60))
		_exit(3);
	work();
	if (!strcmp(name, "stays.pid")) {
		write_file(dir, "stays.done", 1);
		snprintf(path, sizeof(path), "%s/end", dir);
		wait_file(path, 60);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	char path[4096];
	int status;
	pid_t exits;

	if (argc >= 3 && !strcmp(argv[1], "exec")) {
		pre_exec_blocks();
		execv(argv[2], argv + 2);
		perror("execv");
		return 127;
	}
	if (argc != 3 || strcmp(argv[1], "fork")) {
		fprintf(stderr, "usage: wl_alloc_tree exec PROG ARGS... | fork DIR\n");
		return 2;
	}
	exits = child(argv[2], "exits.pid", exiting_leak);
	child(argv[2], "stays.pid", child_leak);
	if (exits < 0 || waitpid(exits, &status, 0) != exits || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return 1;
	snprintf(path, sizeof(path), "%s/stays.done", argv[2]);
	return wait_file(path, 60) ? 1 : 0;
}
