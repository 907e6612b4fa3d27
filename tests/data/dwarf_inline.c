/* Fixture for tests/unit/test_dwarf.c: chains of forced inlining three and four deep, across
 * two files and through lexical blocks, in -O2 -g code. Every address of .text is compared
 * with eu-addr2line -i -f.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dwarf_inline.h"

FORCE_INLINE unsigned long dw_middle(unsigned long x, int n)
{
	unsigned long acc = 0;

	for (int i = 0; i < n; i++) {
		unsigned long t = dw_leaf(x, i);

		acc += t * (unsigned long)(i + 3);
	}
	return acc;
}

FORCE_INLINE unsigned long dw_outer(unsigned long x, int n)
{
	unsigned long a = dw_middle(x, n);

	if (a & 4)
		a += dw_middle(a, n / 2);
	return a;
}

__attribute__((noinline)) unsigned long dw_entry(unsigned long x, int n)
{
	unsigned long r = dw_outer(x, n);

	{
		volatile unsigned long block = r;

		r = dw_leaf(block, n);
	}
	return r;
}

__attribute__((noinline)) static unsigned long dw_static(unsigned long x)
{
	return dw_outer(x, 7) ^ dw_mix(x);
}

int main(int argc, char **argv)
{
	unsigned long seed = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;

	printf("%lu\n", dw_entry(seed, 9) + dw_static(seed));
	return 0;
}
