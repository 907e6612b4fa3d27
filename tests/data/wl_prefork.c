/*
 * A pre-fork server in miniature (PHP-FPM, gunicorn, PostgreSQL backends): the parent starts,
 * settles for 0.3 s, then forks argv[1] children one after another (no exec), each burning
 * argv[2] milliseconds in main -> spawn_workers -> worker_main -> chain_a -> chain_b -> chain_c
 * -> hot_leaf and exiting; the parent waits for each. With argv[3] = "nested", each child
 * forks a grandchild that does the work instead (two generations unknown to the profiler).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl_common.h"

WL_NOINLINE void hot_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void chain_c(unsigned long n)
{
	hot_leaf(n);
	wl_sink++;
}

WL_NOINLINE void chain_b(unsigned long n)
{
	chain_c(n);
	wl_sink++;
}

WL_NOINLINE void chain_a(unsigned long n)
{
	chain_b(n);
	wl_sink++;
}

WL_NOINLINE static void worker_main(double ms)
{
	double end = wl_now() + ms / 1000;

	while (wl_now() < end)
		chain_a(20000);
	_exit(0);
}

WL_NOINLINE static void spawn_workers(int n, double ms, int nested)
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0 && nested) {
			pid_t grandchild = fork();

			if (grandchild == 0)
				worker_main(ms);
			waitpid(grandchild, NULL, 0);
			_exit(0);
		}
		if (pid == 0)
			worker_main(ms);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	double ms = argc > 2 ? strtod(argv[2], NULL) : 150;

	if (n < 1 || n > 1000 || !(ms > 0) || ms > 10000)
		return 1;
	usleep(300000);
	spawn_workers(n, ms, argc > 3 && !strcmp(argv[3], "nested"));
	return 0;
}
