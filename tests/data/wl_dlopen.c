/*
 * Maps code after the recording started: sleeps ~0.5 s, dlopen()s wl_plugin.so (next to this
 * binary, or argv[2]) and burns in main -> plugin_entry -> plugin_hot for argv[1] seconds.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "wl_common.h"

static double now(void)
{
	return wl_now();
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	double secs = wl_seconds(argc, argv);
	void (*entry)(double (*)(void), double);
	void *lib;

	if (argc > 2) {
		snprintf(path, sizeof(path), "%s", argv[2]);
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		char *slash;

		if (n < 0)
			return 1;
		path[n] = '\0';
		slash = strrchr(path, '/');
		snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "wl_plugin.so");
	}
	usleep(500000);
	lib = dlopen(path, RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "wl_dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&entry = dlsym(lib, "plugin_entry");
	if (!entry)
		return 1;
	entry(now, wl_now() + secs);
	wl_sink++;
	dlclose(lib);
	return 0;
}
