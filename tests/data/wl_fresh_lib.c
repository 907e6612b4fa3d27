/*
 * The library wl_fresh_main dlopen()s (compiled at test time, see wl_fresh_main.c):
 * fresh_entry -> early_burn until `early_end`, then fresh_entry -> late_burn until `end`.
 */
#define WL_NOINLINE __attribute__((noinline))

static volatile unsigned long fresh_sink;

WL_NOINLINE void early_burn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		fresh_sink += i * 40503u;
}

WL_NOINLINE void late_burn(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		fresh_sink += i * 2654435761u;
}

WL_NOINLINE void fresh_entry(double (*now)(void), double early_end, double end)
{
	while (now() < early_end)
		early_burn(20000);
	while (now() < end)
		late_burn(20000);
	fresh_sink++;
}
