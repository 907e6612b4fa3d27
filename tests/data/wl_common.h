/*
 * Shared bits of the system-test workloads: a CPU-time clock and a spin that cannot be
 * folded away. Every workload burns CPU for a bounded time given on its command line, so
 * that a recording of it is never empty on a box where idle CPUs take no samples.
 */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <stdlib.h>
#include <time.h>

#define WL_NOINLINE __attribute__((noinline))

static volatile unsigned long wl_sink;

static inline double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds from argv[1] (default 2), bounded so a stray argument cannot hang a test. */
static inline double wl_seconds(int argc, char **argv)
{
	double s = argc > 1 ? strtod(argv[1], NULL) : 2.0;

	if (!(s > 0) || s > 60)
		s = 2.0;
	return s;
}

#endif
