/*
 * Allocation workload for tests/system/test_alloc.sh: three chains allocate known amounts,
 * one of them leaks:
 *   main -> alloc_hot -> take_hot     malloc / posix_memalign of 32-96 KiB, freed at once
 *   main -> alloc_cold -> take_cold   calloc of half, realloc to the full size, freed at once
 *   main -> leak_blocks               malloc of 2 MiB, never freed (LEAK_BLOCKS of them)
 * alloc_hot's bytes are 3 times alloc_cold's. Sizes of tens of KiB (below glibc's mmap
 * threshold): few calls per byte, as a uprobe costs per call and the sampling is by bytes
 * (test_alloc.sh asks for 8 GiB, ~16,000 samples in alloc_hot). Edge cases on the way: realloc(p, 0) and
 * free(NULL) in every round.
 *
 * Usage: wl_alloc MIB OUT [HOLD]: alloc_hot allocates about MIB MiB; writes "chain bytes" lines
 * (hot, cold, leak: bytes asked of the allocator) to OUT at the end, then stays HOLD seconds
 * (default 0) with its leak live (tests/system/test_agent_mem.sh: the agent's in-use view).
 * WL_START_DELAY=SECS in the environment: waits that long first (a profiler that learns of a
 * new process late, the agent, has read its mappings by then).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAK_BLOCKS 32
#define LEAK_SIZE (2u << 20)

static uint64_t hot, cold, leak;
static void *leaked[LEAK_BLOCKS];
static volatile uintptr_t sink;

static __attribute__((noinline)) void take_hot(size_t n, int aligned)
{
	void *p = NULL;

	if (aligned) {
		if (posix_memalign(&p, 64, n))
			exit(1);
	} else {
		p = malloc(n);
	}
	if (!p)
		exit(1);
	sink += (uintptr_t)p;
	hot += n;
	free(p);
}

static __attribute__((noinline)) void take_cold(size_t n)
{
	char *p = calloc(1, n / 2), *q;

	if (!p)
		exit(1);
	q = realloc(p, n);
	if (!q)
		exit(1);
	sink += (uintptr_t)q;
	cold += n / 2 + n;
	free(q);
}

static __attribute__((noinline)) void alloc_hot(uint64_t bytes)
{
	uint64_t seed = 1, done = 0;
	int i = 0;

	while (done < bytes) {
		size_t n;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 32768 + (size_t)((seed >> 33) % (64 * 1024));
		take_hot(n, i++ & 1);
		done += n;
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void alloc_cold(uint64_t bytes)
{
	uint64_t seed = 7, done = 0;

	while (done < bytes) {
		size_t n;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 32768 + (size_t)((seed >> 33) % (64 * 1024));
		take_cold(n);
		done += n / 2 + n;
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void leak_blocks(void)
{
	int i;

	for (i = 0; i < LEAK_BLOCKS; i++) {
		leaked[i] = malloc(LEAK_SIZE);
		if (!leaked[i])
			exit(1);
		leak += LEAK_SIZE;
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void edge_cases(void)
{
	void *p = malloc(100);

	p = realloc(p, 0); /* frees (glibc: returns NULL) */
	free(p);
	free(NULL);
}

int main(int argc, char **argv)
{
	long mib;
	FILE *out;
	int r;

	if ((argc != 3 && argc != 4) || (mib = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: wl_alloc MIB OUT [HOLD]\n");
		return 2;
	}
	if (getenv("WL_START_DELAY"))
		sleep((unsigned int)strtol(getenv("WL_START_DELAY"), NULL, 10));
	out = fopen(argv[2], "w");
	if (!out)
		return 1;
	for (r = 0; r < 8; r++) { /* interleaved: both chains see the same conditions */
		alloc_hot((uint64_t)mib << 17);
		alloc_cold(((uint64_t)mib << 17) / 3);
		edge_cases();
	}
	leak_blocks();
	fprintf(out, "hot %llu\ncold %llu\nleak %llu\n", (unsigned long long)hot,
		(unsigned long long)cold, (unsigned long long)leak);
	if (fclose(out))
		return 1;
	if (argc == 4)
		sleep((unsigned int)strtol(argv[3], NULL, 10));
	return 0;
}
