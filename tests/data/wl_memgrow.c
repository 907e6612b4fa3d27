/*
 * Memory-growth workload for tests/system/test_memgrow.sh: two call chains grow memory in the
 * ratio 3:1, both through an anonymous mmap() and through brk(), touching every page once:
 *   main -> grow_big -> map_and_touch (24 MiB)    main -> grow_small -> map_and_touch (8 MiB)
 *   main -> heap_big -> brk_and_touch (3 MiB)      main -> heap_small -> brk_and_touch (1 MiB)
 * per round, ROUNDS rounds, each region given back at the end of its round. Huge pages are
 * declined (MADV_NOHUGEPAGE) so that one fault is one 4 KiB page: the truth is then exact.
 *
 * Usage: wl_memgrow ROUNDS OUT: writes "chain faults mapped_bytes" lines (what each chain did)
 * to OUT at the end. WL_START_DELAY=SECS in the environment: waits that long first (a profiler
 * that learns of a new process late, the agent, has read its mappings by then).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1024UL * 1024)
#define PAGE 4096UL

struct chain_total {
	unsigned long faults;
	unsigned long mapped;
};

static struct chain_total big, small_;

/* Anonymous mapping of len bytes, every page written once, unmapped. */
static __attribute__((noinline)) void map_and_touch(size_t len, struct chain_total *t)
{
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	size_t i;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise((void *)p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len; i += PAGE)
		p[i] = 1;
	t->faults += len / PAGE;
	t->mapped += len;
	munmap((void *)p, len);
}

/* The heap grown by len bytes (a multiple of the page: the break stays page aligned), every
 * page written once, given back.
 */
static __attribute__((noinline)) void brk_and_touch(size_t len, struct chain_total *t)
{
	volatile char *p = sbrk((intptr_t)len);
	size_t i;

	if (p == (void *)-1) {
		perror("sbrk");
		exit(1);
	}
	for (i = 0; i < len; i += PAGE)
		p[i] = 1;
	t->faults += len / PAGE;
	t->mapped += len;
	sbrk(-(intptr_t)len);
}

static __attribute__((noinline)) void grow_big(void)
{
	map_and_touch(24 * MIB, &big);
	__asm__ volatile("" ::: "memory"); /* no tail call: grow_big stays on the stack */
}

static __attribute__((noinline)) void grow_small(void)
{
	map_and_touch(8 * MIB, &small_);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void heap_big(void)
{
	brk_and_touch(3 * MIB, &big);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void heap_small(void)
{
	brk_and_touch(1 * MIB, &small_);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	long rounds, r;
	uintptr_t cur;
	FILE *out;

	if (argc != 3 || (rounds = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: wl_memgrow ROUNDS OUT\n");
		return 2;
	}
	if (getenv("WL_START_DELAY"))
		sleep((unsigned int)strtol(getenv("WL_START_DELAY"), NULL, 10));
	out = fopen(argv[2], "w"); /* its buffer before the rounds: no heap growth in them */
	if (!out)
		return 1;
	/* the break page aligned, so that brk_and_touch's pages are its own */
	cur = (uintptr_t)sbrk(0);
	if (cur % PAGE)
		sbrk((intptr_t)(PAGE - cur % PAGE));
	for (r = 0; r < rounds; r++) {
		grow_big();
		heap_big();
		grow_small();
		heap_small();
	}
	fprintf(out, "big %lu %lu\nsmall %lu %lu\n", big.faults, big.mapped, small_.faults,
		small_.mapped);
	return fclose(out) ? 1 : 0;
}
