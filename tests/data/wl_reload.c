/*
 * Libraries unmapped and others mapped at the same address: for argv[1] seconds, dlopen()s
 * wl_reload_a.so, burns in it ~40 ms through main -> with_a -> reload_entry_a -> reload_hot_a,
 * dlclose()s it, then the same with wl_reload_b.so (with_b -> ..._b), and again. The two
 * libraries have the same layout, so b usually lands where a was: a frame of one library
 * under the other's caller (with_a -> ..._b) is a stale mapping.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "wl_common.h"

static char dir[PATH_MAX];

static int run_lib(const char *name, double secs)
{
	void (*entry)(double);
	char path[PATH_MAX + 32];
	void *lib;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "wl_reload: %s\n", dlerror());
		return 1;
	}
	*(void **)&entry = dlsym(lib, "reload_run");
	if (!entry)
		return 1;
	entry(wl_now() + secs);
	dlclose(lib);
	return 0;
}

WL_NOINLINE int with_a(void)
{
	int err = run_lib("wl_reload_a.so", 0.04);

	wl_sink++;
	return err;
}

WL_NOINLINE int with_b(void)
{
	int err = run_lib("wl_reload_b.so", 0.04);

	wl_sink++;
	return err;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_seconds(argc, argv);
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	char *slash;

	if (n < 0)
		return 1;
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (!slash)
		return 1;
	*slash = '\0';
	while (wl_now() < end)
		if (with_a() || with_b())
			return 1;
	return 0;
}
