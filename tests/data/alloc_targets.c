/* Allocator symbols for tests/unit/test_alloc_targets.c, built three ways (alloc_targets.mk):
 * liballoc_own.so defines the malloc family, aligned_alloc as an alias of memalign, operator
 * new and pymalloc's entry points; liballoc_nomalloc.so (-DNO_MALLOC) operator new and
 * PyObject_Free only; liballoc_hidden.so (-fvisibility=hidden, stripped) nothing visible.
 * Never run.
 */
#include <stddef.h>

#ifdef HIDDEN
#define VISIBLE
#else
#define VISIBLE __attribute__((visibility("default")))
#endif
#define API VISIBLE __attribute__((noinline))

static char arena[1 << 16];
static size_t used;

static void *bump(size_t n)
{
	void *p = arena + used;

	used += (n + 15) & ~(size_t)15;
	return used <= sizeof(arena) ? p : NULL;
}

#ifndef NO_MALLOC
API void *malloc(size_t n)
{
	return bump(n);
}

API void free(void *p)
{
	(void)p;
}

API void *calloc(size_t n, size_t size)
{
	return bump(n * size);
}

API void *realloc(void *p, size_t n)
{
	(void)p;
	return bump(n);
}

API void *memalign(size_t align, size_t n)
{
	return bump(n + align);
}

VISIBLE void *aligned_alloc(size_t align, size_t n) __attribute__((alias("memalign")));

API void *PyObject_Malloc(size_t n)
{
	return bump(n + 1);
}
#endif

API void *_Znwm(size_t n)
{
	return bump(n + 2);
}

API void PyObject_Free(void *p)
{
	(void)p;
	used--;
}
