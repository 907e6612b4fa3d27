/*
 * A process with many threads: `wl_many_threads N SECS` starts N - 1 threads that sleep (64 KiB
 * stacks) and burns SECS seconds in main -> many_work -> many_leaf, then exits with them all.
 * For the per-task events' cap (4096 threads) and their file descriptors.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "wl_common.h"

static void *sleeper(void *arg)
{
	for (;;)
		pause();
	return arg;
}

WL_NOINLINE void many_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void many_work(double secs)
{
	double t0 = wl_now();

	while (wl_now() - t0 < secs)
		many_leaf(20000);
	wl_sink++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
	double secs = argc > 2 ? strtod(argv[2], NULL) : 2.0;
	pthread_attr_t attr;
	pthread_t t;

	if (n < 1 || n > 20000 || !(secs > 0) || secs > 60)
		return 2;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (long i = 1; i < n; i++)
		if (pthread_create(&t, &attr, sleeper, NULL))
			return 1;
	many_work(secs);
	return 0;
}
