/* Fixture for tests/unit/test_cfi.c: functions whose frames exercise the CFI a compiler emits
 * (push/pop prologues and epilogues, rbp-based frames from alloca and VLAs, large frames,
 * stack realignment, calls through the PLT, noreturn paths, recursion, threads).
 * The program's output is irrelevant; only its unwind tables are compared with readelf's.
 */
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile int cfi_sink;

__attribute__((noinline)) static int leaf(int x)
{
	return x * 3 + cfi_sink;
}

__attribute__((noinline)) static int many_saved(int a, int b, int c, int d, int e, int f)
{
	int r = 0;

	for (int i = 0; i < a; i++)
		r += leaf(i + b) * leaf(c - i) + leaf(d ^ i) + leaf(e + f + i);
	return r;
}

__attribute__((noinline)) static int with_alloca(int n)
{
	char *p = alloca((size_t)n + 16);

	memset(p, 1, (size_t)n + 16);
	return p[n] + leaf(n);
}

__attribute__((noinline)) static int with_vla(int n)
{
	int v[n + 1];

	for (int i = 0; i <= n; i++)
		v[i] = leaf(i);
	return v[n / 2];
}

__attribute__((noinline)) static int big_frame(int n)
{
	volatile char buf[8192];

	buf[n & 8191] = (char)n;
	return buf[(n * 7) & 8191] + leaf(n);
}

__attribute__((noinline)) static int realigned(int n)
{
	/* An over-aligned local makes GCC realign the stack (CFA via a saved register). */
	volatile char buf[64] __attribute__((aligned(64)));

	buf[n & 63] = (char)n;
	return buf[0] + leaf(n);
}

/* Realignment plus a VLA and a stack-passed argument: GCC keeps the CFA in a saved
 * register (DRAP): CFA = *(rbp - N), the deref rule.
 */
__attribute__((noinline)) static int realigned_vla(int n, int a, int b, int c, int d, int e,
						   int f)
{
	volatile char buf[64] __attribute__((aligned(64)));
	int v[n + 1];

	for (int i = 0; i <= n; i++)
		v[i] = leaf(i + f + a + b + c + d + e);
	buf[n & 63] = (char)n;
	return buf[0] + v[n / 2];
}

__attribute__((noinline)) static int recurse(int n)
{
	if (n <= 0)
		return leaf(n);
	return recurse(n - 1) + recurse(n - 2) + 1;
}

__attribute__((noinline, noreturn)) static void die(const char *msg)
{
	fprintf(stderr, "%s\n", msg);
	exit(2);
}

__attribute__((noinline)) static int dispatch(int op, int x)
{
	switch (op) {
	case 0:
		return many_saved(x, 1, 2, 3, 4, 5);
	case 1:
		return with_alloca(x);
	case 2:
		return with_vla(x);
	case 3:
		return big_frame(x);
	case 4:
		return realigned(x);
	case 5:
		return recurse(x);
	case 6:
		return realigned_vla(x, 1, 2, 3, 4, 5, 6);
	default:
		if (op > 100)
			die("bad op");
		return (int)strlen("tail") + x;
	}
}

static void *thread_main(void *arg)
{
	cfi_sink += dispatch((int)(long)arg, 5);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int r = 0;

	(void)argv;
	for (int op = 0; op < 8; op++)
		r += dispatch(op, argc + 4);
	if (pthread_create(&t, NULL, thread_main, (void *)1L) == 0)
		pthread_join(t, NULL);
	printf("%d\n", r);
	return 0;
}
