/* The native workload of the runtime benchmarks (bench/python.sh, ruby.sh, node.sh), beside
 * which they set their 30-frame interpreter stacks: main -> rec30() 30 frames that cannot be
 * merged or tail-called -> a hot loop of argv[1] iterations. Built -O2 -fomit-frame-pointer
 * by build_native30 (bench/lib.sh).
 */
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long rec30(int n, unsigned long iters)
{
	volatile int pad = n; /* a frame of its own, and no tail call */
	unsigned long r = 0;
	if (n > 1)
		r = rec30(n - 1, iters);
	else
		for (unsigned long i = 0; i < iters; i++)
			sink += i * i;
	return r + pad;
}
int main(int argc, char **argv)
{
	return (int)(rec30(30, argc > 1 ? (unsigned long)strtod(argv[1], 0) : 1000000000UL) & 1);
}
