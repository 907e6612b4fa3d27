/* A live thread of a process whose leader has exited. See live_thread.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "proc/live_thread.h"

int live_thread__try(pid_t pid, const char *leaf, int (*try)(const char *path, void *ctx),
		     void *ctx)
{
	char dir[64], path[128];
	struct dirent *de;
	int err = -ESRCH;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return -ESRCH;
	while (err == -ESRCH && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "%s/%ld/%s", dir, tid, leaf);
		err = try(path, ctx);
	}
	closedir(d);
	return err;
}
