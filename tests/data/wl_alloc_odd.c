/*
 * Allocation workload for tests/system/test_alloc_tree.sh: frees an allocator cannot match.
 * The executable defines the malloc family itself (a bump allocator whose free does nothing,
 * so that frees glibc would abort on are harmless); record --alloc finds it by symbol and
 * probes it. Its chains, each of 2 MiB blocks:
 *   main -> leak_known      LEAK_BLOCKS blocks, never freed
 *   main -> double_free     DOUBLE_BLOCKS blocks, each freed twice
 *   main -> realloc_zero    ZERO_BLOCKS blocks, each freed by realloc(p, 0)
 *   main -> foreign_frees   FOREIGN_FREES frees of pointers no allocator returned
 * The test knows the sizes: the leak's in-use bytes stay exact, nothing else stays in use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BLOCK (2u << 20)
#define LEAK_BLOCKS 8
#define DOUBLE_BLOCKS 16
#define ZERO_BLOCKS 16
#define FOREIGN_FREES 4096
#define ARENA ((size_t)1 << 30)

static char *arena, *next_free;
static volatile uintptr_t sink;
static char foreign[FOREIGN_FREES * 16];

/* Bump allocation aligned to align (a power of two, at least 16); the size before it. */
static void *bump(size_t n, size_t align)
{
	char *p;

	if (!arena) {
		arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (arena == MAP_FAILED)
			return NULL;
		next_free = arena;
	}
	p = (char *)(((uintptr_t)next_free + 16 + align - 1) & ~(uintptr_t)(align - 1));
	if (n > ARENA || p + n > arena + ARENA) {
		errno = ENOMEM;
		return NULL;
	}
	((size_t *)p)[-1] = n;
	next_free = p + n;
	return p;
}

/* noipa: called for real (the probes are on it), never folded into a caller */
__attribute__((noipa)) void *malloc(size_t n)
{
	return bump(n, 16);
}

__attribute__((noipa)) void *calloc(size_t k, size_t n)
{
	void *p;

	if (n && k > SIZE_MAX / n)
		return NULL;
	p = bump(k * n, 16);
	if (p)
		memset(p, 0, k * n);
	return p;
}

__attribute__((noipa)) void free(void *p)
{
	(void)p; /* a bump allocator keeps everything */
}

__attribute__((noipa)) void *realloc(void *p, size_t n)
{
	void *q;

	if (p && !n)
		return NULL; /* frees, as glibc's */
	q = malloc(n);
	if (q && p)
		memcpy(q, p, ((size_t *)p)[-1] < n ? ((size_t *)p)[-1] : n);
	return q;
}

__attribute__((noipa)) int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = bump(n, align < 16 ? 16 : align);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

__attribute__((noipa)) void *aligned_alloc(size_t align, size_t n)
{
	return bump(n, align < 16 ? 16 : align);
}

__attribute__((noipa)) void *memalign(size_t align, size_t n)
{
	return bump(n, align < 16 ? 16 : align);
}

static __attribute__((noinline)) void *block(void)
{
	char *p = malloc(BLOCK);

	if (!p)
		_exit(1);
	p[0] = 1;
	sink += (uintptr_t)p;
	return p;
}

static __attribute__((noinline)) void leak_known(void)
{
	int i;

	for (i = 0; i < LEAK_BLOCKS; i++)
		block();
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void double_free(void)
{
	int i;

	for (i = 0; i < DOUBLE_BLOCKS; i++) {
		void *p = block(), *volatile again = p; /* the compiler would see the bug */

		free(p);
		free(again);
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void realloc_zero(void)
{
	int i;

	for (i = 0; i < ZERO_BLOCKS; i++)
		sink += (uintptr_t)realloc(block(), 0);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void foreign_frees(void)
{
	int i;

	for (i = 0; i < FOREIGN_FREES; i++)
		free(foreign + 16 * i);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	leak_known();
	double_free();
	realloc_zero();
	foreign_frees();
	printf("leak %u\n", LEAK_BLOCKS * BLOCK);
	return 0;
}
