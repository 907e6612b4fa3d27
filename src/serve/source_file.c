/* Reading an untrusted source path inside a process's root. See source_file.h. */
#include "serve/source_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* File systems whose files are the kernel's, not sources: reading one may even have effects. */
static bool pseudo_fs(long type)
{
	static const long types[] = {
		PROC_SUPER_MAGIC,
		SYSFS_MAGIC,
		DEBUGFS_MAGIC,
		TRACEFS_MAGIC,
		SECURITYFS_MAGIC,
		CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC,
		BPF_FS_MAGIC,
		DEVPTS_SUPER_MAGIC,
		EFIVARFS_MAGIC,
		0x62656570 /* configfs */,
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (type == types[i])
			return true;
	return false;
}

/* Whether path's ".." components would climb above its root: the path names something
 * outside, whatever the root's symlinks (RESOLVE_IN_ROOT would stop it at the root; the
 * UI says why instead).
 */
static bool climbs_out(const char *path)
{
	long depth = 0;
	const char *s = path, *e;

	for (; *s; s = *e ? e + 1 : e) {
		e = strchrnul(s, '/');
		if (e - s == 2 && s[0] == '.' && s[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (e - s > 0 && !(e - s == 1 && s[0] == '.')) {
			depth++;
		}
	}
	return false;
}

void source_text__free(struct source_text *t)
{
	if (!t)
		return;
	free(t->buf);
	*t = (struct source_text){ 0 };
}

/* Reads fd whole (at most SOURCE_FILE_MAX_SZ bytes) into t. */
static int read_text(int fd, struct source_text *t, const char **why)
{
	size_t cap = SOURCE_FILE_MAX_SZ + 1, i;
	ssize_t n;

	t->buf = malloc(cap + 1);
	if (!t->buf) {
		*why = "out of memory";
		return -ENOMEM;
	}
	while (t->len < cap) {
		n = read(fd, t->buf + t->len, cap - t->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*why = "the file cannot be read";
			return -errno;
		}
		if (!n)
			break;
		t->len += (size_t)n;
	}
	if (t->len > SOURCE_FILE_MAX_SZ) { /* it grew past the cap since fstat() */
		*why = "the file is too big (over 2 MiB)";
		return -EFBIG;
	}
	t->buf[t->len] = '\0';
	if (memchr(t->buf, '\0', t->len)) {
		*why = "a binary file, not source text";
		return -EINVAL;
	}
	for (i = 0; i < t->len; i++)
		t->line_cnt += t->buf[i] == '\n';
	t->line_cnt += t->len && t->buf[t->len - 1] != '\n';
	if (t->line_cnt > SOURCE_FILE_MAX_LINES) {
		*why = "the file has too many lines (over 100000)";
		return -EFBIG;
	}
	return 0;
}

int source_file__read(int root_fd, const char *path, uid_t owner_uid, struct source_text *out,
		      const char **why)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char self[64];
	struct statfs sfs;
	struct stat st;
	int pfd = -1, fd = -1, err;

	*out = (struct source_text){ 0 };
	if (path[0] != '/') {
		*why = "not an absolute path (a generated name, or one relative to a working "
		       "directory)";
		err = -EINVAL;
		goto out;
	}
	if (climbs_out(path)) {
		*why = "the path leads outside the process's root";
		err = -EXDEV;
		goto out;
	}
	pfd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (pfd < 0) {
		err = -errno;
		*why = err == -ENOENT || err == -ENOTDIR ? "no such file in the process's root"
		       : err == -EXDEV ? "the path leads outside the process's root"
		       : err == -ELOOP
			       ? "the path goes through a /proc magic link or a symlink loop"
		       : err == -ENOSYS ? "this kernel has no openat2 (5.6 or later is needed)"
		       : err == -EACCES ? "the file is not readable"
					: "the file cannot be opened";
		goto out;
	}
	if (fstat(pfd, &st) || fstatfs(pfd, &sfs)) {
		err = -errno;
		*why = "the file cannot be read";
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file (a directory, FIFO, device or socket)";
		err = -EINVAL;
		goto out;
	}
	if (pseudo_fs((long)sfs.f_type)) {
		*why = "a kernel file (/proc, /sys...), not a source file";
		err = -EINVAL;
		goto out;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > SOURCE_FILE_MAX_SZ) {
		*why = "the file is too big (over 2 MiB)";
		err = -EFBIG;
		goto out;
	}
	if (!(st.st_mode & S_IROTH) && !(owner_uid != (uid_t)-1 && owner_uid != 0 &&
					 st.st_uid == owner_uid && (st.st_mode & S_IRUSR))) {
		*why = "the file is not readable by every user nor the process's own: not shown";
		err = -EACCES;
		goto out;
	}
	/* the inode looked at, opened for reading: nothing on the path can change it now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		*why = "the file cannot be opened";
		goto out;
	}
	err = read_text(fd, out, why);
out:
	if (err)
		source_text__free(out);
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return err;
}
