/* Opening untrusted paths for reading. See safe_open.h. */
#include "base/safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define READ_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

static _Atomic uint64_t not_regular_cnt, escape_cnt, no_openat2_cnt;
static atomic_bool openat2_missing;

/* Keep fd only if it is a regular file; make it blocking again. */
static int keep_regular(int fd)
{
	struct stat st;
	int flags, err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		atomic_fetch_add(&not_regular_cnt, 1);
		err = -EINVAL;
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
fail:
	close(fd);
	return err;
}

int safe_open(const char *path)
{
	return keep_regular(open(path, READ_FLAGS));
}

int safe_open__check(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		atomic_fetch_add(&not_regular_cnt, 1);
		return -EINVAL;
	}
	return access(path, R_OK) ? -errno : 0;
}

int safe_open_in_root(const char *root, const char *path)
{
	struct open_how how = {
		.flags = READ_FLAGS,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char buf[4200];
	int root_fd, fd, n;

	if (!root || !*root)
		return safe_open(path);
	if (!atomic_load(&openat2_missing)) {
		root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root_fd < 0)
			return -errno;
		fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
		if (fd < 0 && errno == EXDEV)
			atomic_fetch_add(&escape_cnt, 1);
		if (fd >= 0 || errno != ENOSYS) {
			fd = keep_regular(fd);
			close(root_fd);
			return fd;
		}
		close(root_fd);
		atomic_store(&openat2_missing, true);
	}
	atomic_fetch_add(&no_openat2_cnt, 1);
	n = snprintf(buf, sizeof(buf), "%s%s", root, path);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	return keep_regular(open(buf, READ_FLAGS | O_NOFOLLOW));
}

void safe_open__stats(struct safe_open_stats *out)
{
	out->not_regular = atomic_load(&not_regular_cnt);
	out->escapes = atomic_load(&escape_cnt);
	out->no_openat2 = atomic_load(&no_openat2_cnt);
}
