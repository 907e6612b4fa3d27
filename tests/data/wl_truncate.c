/*
 * A process that changes a library it has mapped: copies wl_plugin.so to argv[2], dlopen()s the
 * copy, waits 0.3 s (the profiler builds its table), then runs main -> plugin_entry ->
 * now_then_change: which truncates the copy (argv[3] "truncate") or rewrites it shorter with
 * other bytes ("rewrite"), and from then on burns in spin_after (main binary code only: the
 * plugin's pages are gone) for argv[1] seconds and exits without returning into the plugin.
 * Every sample has the changed library's plugin_entry as a caller frame.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "wl_common.h"

static const char *copy_path, *mode;
static double deadline;

WL_NOINLINE static void spin_after(void)
{
	while (wl_now() < deadline)
		for (int i = 0; i < 100000; i++)
			wl_sink += i;
}

WL_NOINLINE static double now_then_change(void)
{
	int fd = open(copy_path, O_WRONLY | O_TRUNC);

	if (fd >= 0 && !strcmp(mode, "rewrite")) {
		char junk[3000];

		memset(junk, 0x5a, sizeof(junk));
		if (write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
			_exit(3);
	}
	if (fd < 0)
		_exit(2);
	close(fd);
	spin_after();
	_exit(0); /* never back into the plugin: its code is gone */
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	return close(out);
}

int main(int argc, char **argv)
{
	char plugin[PATH_MAX];
	double secs = wl_seconds(argc, argv);
	void (*entry)(double (*)(void), double);
	ssize_t n = readlink("/proc/self/exe", plugin, sizeof(plugin) - 1);
	char *slash;
	void *lib;

	if (argc < 4 || n < 0)
		return 1;
	copy_path = argv[2];
	mode = argv[3];
	plugin[n] = '\0';
	slash = strrchr(plugin, '/');
	snprintf(slash + 1, sizeof(plugin) - (size_t)(slash + 1 - plugin), "wl_plugin.so");
	if (copy_file(plugin, copy_path))
		return 1;
	lib = dlopen(copy_path, RTLD_NOW);
	if (!lib)
		return 1;
	*(void **)&entry = dlsym(lib, "plugin_entry");
	if (!entry)
		return 1;
	usleep(300000);
	deadline = wl_now() + secs;
	entry(now_then_change, 0);
	return 0;
}
