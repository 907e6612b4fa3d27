/*
 * A process whose main thread leaves first: main starts a worker thread and calls
 * pthread_exit(); the worker burns argv[1] seconds in worker_main -> leader_gone_a ->
 * leader_gone_leaf and the process ends with it (daemons and some runtimes' launchers do
 * this). The process lives on after its leader's exit; its mappings must too.
 */
#include <pthread.h>
#include "wl_common.h"

WL_NOINLINE void leader_gone_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void leader_gone_a(unsigned long n)
{
	leader_gone_leaf(n);
	wl_sink++;
}

static void *worker_main(void *arg)
{
	double secs = *(double *)arg, t0 = wl_now();

	while (wl_now() - t0 < secs)
		leader_gone_a(20000);
	return NULL;
}

int main(int argc, char **argv)
{
	static double secs;
	pthread_t t;

	secs = wl_seconds(argc, argv);
	if (pthread_create(&t, NULL, worker_main, &secs))
		return 1;
	pthread_exit(NULL);
}
