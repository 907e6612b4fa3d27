/* Workload for tests/system/test_symbolize.sh: burns CPU for argv[1] seconds in a forced
 * inline chain sym_leaf (sym_inline.h) <- sym_middle <- sym_outer <- sym_entry, called from
 * sym_run <- main. Built -O2 -g (symbolize.mk); the test finds the call-site lines by the
 * "call:" markers below, so keep each marked call on its own line.
 */
#include "sym_inline.h"
#include "wl_common.h"

SYM_FORCE_INLINE unsigned long sym_middle(unsigned long x, unsigned long n)
{
	unsigned long r = sym_leaf(x, n); /* call:sym_leaf */

	return r ^ (r >> 7);
}

SYM_FORCE_INLINE unsigned long sym_outer(unsigned long x, unsigned long n)
{
	unsigned long r = sym_middle(x + 1, n); /* call:sym_middle */

	return r + (r << 3);
}

WL_NOINLINE unsigned long sym_entry(unsigned long x, unsigned long n)
{
	unsigned long r = sym_outer(x, n); /* call:sym_outer */

	wl_sink += r;
	return r;
}

WL_NOINLINE void sym_run(double secs)
{
	double end = wl_now() + secs;
	unsigned long x = 1;

	while (wl_now() < end)
		x = sym_entry(x, 200000); /* call:sym_entry */
	wl_sink += x;
}

int main(int argc, char **argv)
{
	sym_run(wl_seconds(argc, argv));
	wl_sink++;
	return 0;
}
