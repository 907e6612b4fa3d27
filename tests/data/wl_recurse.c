/*
 * main -> recurse(300) -> recurse(299) -> ... -> recurse(1) -> recurse_leaf: a deep,
 * non-tail recursion that burns CPU in its leaf.
 */
#include "wl_common.h"

#define DEPTH 300

WL_NOINLINE void recurse_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i ^ (i >> 3);
}

WL_NOINLINE unsigned long recurse(int n)
{
	volatile char pad[16];

	pad[0] = (char)n;
	if (n <= 1)
		recurse_leaf(100000);
	else
		recurse(n - 1);
	wl_sink += pad[0];
	return wl_sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_seconds(argc, argv);

	while (wl_now() < end)
		recurse(DEPTH);
	return 0;
}
