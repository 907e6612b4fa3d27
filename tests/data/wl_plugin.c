/*
 * The library wl_dlopen loads at run time: plugin_entry -> plugin_hot, burning CPU until the
 * deadline it is given. Built -O2 -fomit-frame-pointer so only its .eh_frame unwinds it.
 */
#define WL_NOINLINE __attribute__((noinline))

static volatile unsigned long plugin_sink;

WL_NOINLINE void plugin_hot(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		plugin_sink += i * 40503u;
}

WL_NOINLINE void plugin_entry(double (*now)(void), double end)
{
	while (now() < end)
		plugin_hot(200000);
	plugin_sink++;
}
