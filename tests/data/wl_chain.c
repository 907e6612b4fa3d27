/*
 * Known chain main -> chain_a -> chain_b -> chain_c -> hot_leaf, burning CPU in hot_leaf for
 * argv[1] seconds. Built with and without frame pointers (workloads.mk). Every function is
 * noinline and does work after its call, so no call becomes a tail call or gets inlined.
 */
#include "wl_common.h"

WL_NOINLINE void hot_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void chain_c(unsigned long n)
{
	hot_leaf(n);
	wl_sink++;
}

WL_NOINLINE void chain_b(unsigned long n)
{
	chain_c(n);
	wl_sink++;
}

WL_NOINLINE void chain_a(unsigned long n)
{
	chain_b(n);
	wl_sink++;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_seconds(argc, argv);

	while (wl_now() < end)
		chain_a(200000);
	return 0;
}
