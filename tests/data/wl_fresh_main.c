/*
 * tests/system/test_deferred.sh compiles this at test time into a binary nobody has seen (a
 * fresh file with a unique build id), so no unwind table exists for it when it starts. At once
 * (within its first milliseconds) it dlopen()s argv[1], a library just as fresh
 * (wl_fresh_lib.c), and burns CPU in it: main -> fresh_entry -> early_burn for the first
 * 50 ms of its life, then main -> fresh_entry -> late_burn until argv[2] seconds have passed.
 * Built -O2 -fomit-frame-pointer: only .eh_frame unwinds it, frame pointers cannot.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "wl_common.h"

int main(int argc, char **argv)
{
	void (*entry)(double (*)(void), double, double);
	double start = wl_now(), secs = argc > 2 ? strtod(argv[2], NULL) : 0.3;
	void *lib;

	if (argc < 2 || !(secs > 0) || secs > 10)
		return 2;
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "wl_fresh_main: %s\n", dlerror());
		return 1;
	}
	*(void **)&entry = dlsym(lib, "fresh_entry");
	if (!entry)
		return 1;
	entry(wl_now, start + 0.05, start + secs);
	wl_sink++;
	return 0;
}
