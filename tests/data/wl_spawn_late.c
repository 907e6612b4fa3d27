/*
 * Threads and processes made after a recording attached: `wl_spawn_late SECS [--on-signal]`.
 * main burns in main -> wait_spin -> wait_leaf until SIGUSR1 (with --on-signal; else it goes on
 * at once), then starts a thread (late_thread_main -> late_thread_work -> late_thread_leaf) and
 * forks a child without exec (late_child_main -> late_child_work -> late_child_leaf), each
 * burning SECS seconds of its own CPU time (CLOCK_THREAD_CPUTIME_ID: how many samples it should
 * get does not depend on the load), and each printing "thread_cpu_ms=N" / "child_cpu_ms=N",
 * measured by itself, when done; main sleeps until both are.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl_common.h"

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

WL_NOINLINE void wait_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void wait_spin(void)
{
	double t0 = wl_now();

	while (!go && wl_now() - t0 < 30) /* bounded: a test that never signals */
		wait_leaf(20000);
	wl_sink++;
}

WL_NOINLINE void late_thread_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void late_thread_work(double secs)
{
	while (cpu_now() < secs)
		late_thread_leaf(20000);
	wl_sink++;
}

static void *late_thread_main(void *arg)
{
	double secs = *(double *)arg;

	late_thread_work(secs);
	dprintf(1, "thread_cpu_ms=%.0f\n", cpu_now() * 1000);
	return NULL;
}

WL_NOINLINE void late_child_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void late_child_work(double secs)
{
	double start = cpu_now();

	while (cpu_now() - start < secs)
		late_child_leaf(20000);
	wl_sink++;
}

WL_NOINLINE int late_child_main(double secs)
{
	double start = cpu_now();

	late_child_work(secs);
	dprintf(1, "child_cpu_ms=%.0f\n", (cpu_now() - start) * 1000);
	return 0;
}

int main(int argc, char **argv)
{
	static double secs;
	pthread_t t;
	pid_t child;

	secs = wl_seconds(argc, argv);
	if (argc > 2 && !strcmp(argv[2], "--on-signal"))
		signal(SIGUSR1, on_usr1);
	else
		go = 1;
	wait_spin();
	if (pthread_create(&t, NULL, late_thread_main, &secs))
		return 1;
	child = fork();
	if (child == 0)
		_exit(late_child_main(secs));
	pthread_join(t, NULL);
	if (child > 0)
		waitpid(child, NULL, 0);
	return child > 0 ? 0 : 1;
}
