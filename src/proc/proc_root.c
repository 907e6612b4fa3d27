/* A process's root directory. See proc_root.h. */
#include "proc/proc_root.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/live_thread.h"

static void proc_root__init(struct proc_root *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
}

static int proc_root__adopt(struct proc_root *out, int fd, const char *host_path)
{
	out->fd = fd;
	snprintf(out->ref, sizeof(out->ref), "/proc/self/fd/%d", fd);
	if (host_path && strcmp(host_path, "/")) {
		out->host_path = strdup(host_path);
		if (!out->host_path) {
			proc_root__close(out);
			return -ENOMEM;
		}
	}
	return 0;
}

#define ROOT_LINK_MAX 64 /* "/proc/PID/task/TID/root" */

/* Opens path (a thread's root link) and leaves it in link for the readlink below. */
static int open_root(const char *path, void *link)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	snprintf(link, ROOT_LINK_MAX, "%s", path);
	return fd;
}

int proc_root__open(pid_t pid, struct proc_root *out)
{
	char link[ROOT_LINK_MAX], target[PATH_MAX];
	struct stat ours, theirs;
	ssize_t n;
	int fd;

	proc_root__init(out);
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	fd = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* a leader that exited before its other threads has no root: a thread's */
		fd = live_thread__try(pid, "root", open_root, link);
		if (fd < 0)
			return fd;
	} else if (fd < 0) {
		return -errno;
	}
	if (fstat(fd, &theirs) || stat("/", &ours)) {
		close(fd);
		return -errno;
	}
	if (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino) {
		close(fd);
		return 0; /* our root: the host view */
	}
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	/* A root in another mount namespace reads as "/": not reachable from ours. */
	return proc_root__adopt(out, fd, n > 0 && target[0] == '/' ? target : NULL);
}

int proc_root__dup(const struct proc_root *r, struct proc_root *out)
{
	int fd;

	proc_root__init(out);
	if (r->fd < 0)
		return 0;
	fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	return proc_root__adopt(out, fd, r->host_path);
}

void proc_root__close(struct proc_root *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->host_path);
	proc_root__init(r);
}

const char *proc_root__inner(const struct proc_root *r, const char *maps_path)
{
	size_t n;

	if (r->fd < 0 || !r->host_path)
		return maps_path;
	n = strlen(r->host_path);
	if (!strncmp(maps_path, r->host_path, n) && maps_path[n] == '/')
		return maps_path + n;
	return maps_path;
}
