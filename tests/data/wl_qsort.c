/*
 * A libc callback: main -> sort_loop -> qsort (libc) -> ... -> compare_items. The unwinder
 * has to cross libc's own CFI on the way back to sort_loop and main.
 */
#include <stdlib.h>
#include "wl_common.h"

#define ITEMS 4096

static int items[ITEMS];

WL_NOINLINE int compare_items(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	/* some work per comparison so the comparator, not qsort's loop, is the leaf */
	for (int i = 0; i < 40; i++)
		wl_sink += (unsigned long)(x ^ i) * 31u;
	return (x > y) - (x < y);
}

WL_NOINLINE void sort_loop(double end)
{
	unsigned int seed = 1;

	while (wl_now() < end) {
		for (int i = 0; i < ITEMS; i++)
			items[i] = rand_r(&seed);
		qsort(items, ITEMS, sizeof(items[0]), compare_items);
	}
	wl_sink++;
}

int main(int argc, char **argv)
{
	sort_loop(wl_now() + wl_seconds(argc, argv));
	return 0;
}
