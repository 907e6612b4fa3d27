/* One of wl_reload's two libraries: built twice, with SIDE=a and SIDE=b (see wl_reload.c). */
#include "wl_common.h"

#define NAME2(x, y) x##y
#define NAME(x, y) NAME2(x, y)

WL_NOINLINE void NAME(reload_hot_, SIDE)(void)
{
	for (unsigned long i = 0; i < 20000; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void NAME(reload_entry_, SIDE)(double end)
{
	while (wl_now() < end)
		NAME(reload_hot_, SIDE)();
	wl_sink++;
}

void reload_run(double end)
{
	NAME(reload_entry_, SIDE)(end);
	wl_sink++;
}
