/* Fixture for the ELF reader and symbol tests (tests/data/elf.mk builds it as PIE, non-PIE,
 * shared library, stripped, split-debug and compressed-debug variants).
 *
 * It holds the symbol shapes the tests look for: a global function with a longer global alias,
 * a global function with a weak alias, a static function, a GNU ifunc and a zero-size assembly
 * function. The tests take addresses and sizes from readelf/nm, never from this file.
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline, used))

volatile int ss_sink;

NOINLINE static int ss_local_helper(int x)
{
	for (int i = 0; i < x; i++)
		ss_sink += i * x;
	return ss_sink;
}

NOINLINE int ss_alpha(int x)
{
	return ss_local_helper(x) + 1;
}

int ss_alpha_alias(int x) __attribute__((alias("ss_alpha")));

NOINLINE int ss_beta(int x)
{
	int acc = 0;

	for (int i = 0; i < x; i++) {
		acc += ss_alpha(i);
		if (acc & 1)
			acc ^= ss_sink;
	}
	return acc;
}

int ss_beta_weak(int x) __attribute__((weak, alias("ss_beta")));

static int ss_ifunc_impl(int x)
{
	return x * 3;
}

static int (*ss_ifunc_resolve(void))(int)
{
	return ss_ifunc_impl;
}

int ss_ifunc(int x) __attribute__((ifunc("ss_ifunc_resolve")));

/* A function the assembler gives no .size: its symbol has size 0. */
__asm__(".text\n"
	".globl ss_nosize\n"
	".type ss_nosize, @function\n"
	"ss_nosize:\n"
	"\tnop\n\tnop\n\tnop\n\tret\n");

int ss_nosize(void);

NOINLINE int ss_gamma(int x)
{
	return ss_beta(x) + ss_ifunc(x) + ss_nosize();
}

#ifndef SS_LIB
int main(int argc, char **argv)
{
	printf("%d\n", ss_gamma(argc + 3));
	return 0;
}
#endif
