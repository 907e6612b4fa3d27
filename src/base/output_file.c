/* Output files that users may point root at. See output_file.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fd_write.h"
#include "base/output_file.h"

#define TMP_TRIES 16

struct output_file {
	int fd;       /* -1 once the stream owns it */
	FILE *stream; /* NULL until asked for */
	int dir_fd;   /* borrowed */
	char *name;   /* the target, relative to dir_fd */
	char *tmp;    /* temporary renamed over name at commit; NULL: written in place */
};

static uint64_t (*tmp_source)(void);

void output_file__set_tmp_source(uint64_t (*next)(void))
{
	tmp_source = next;
}

/* Unpredictable enough that names cannot be planted in advance; O_EXCL keeps a collision
 * harmless. Does not block for entropy at early boot.
 */
static uint64_t tmp_random(void)
{
	static uint64_t counter;
	struct timespec ts;
	uint64_t v;

	if (tmp_source)
		return tmp_source();
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48) ^
	    ++counter * 0x9e3779b97f4a7c15ULL;
	v ^= v >> 31;
	return v * 0xbf58476d1ce4e5b9ULL;
}

enum target_kind {
	TARGET_REPLACE = 1, /* nothing there, or a regular file */
	TARGET_IN_PLACE,    /* a character device or FIFO (perhaps through our own symlink) */
};

/* What name is now, under the header's rules: a target_kind or -errno. */
static int target_kind(int dir_fd, const char *name)
{
	struct stat st;

	if (!*name)
		return -ENOENT; /* else "" would make a temporary named ".<hex>.tmp" */
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? TARGET_REPLACE : -errno;
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != geteuid() || fstatat(dir_fd, name, &st, 0) ||
		    !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
			return -ELOOP;
		return TARGET_IN_PLACE;
	}
	if (S_ISREG(st.st_mode))
		return TARGET_REPLACE;
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
		return TARGET_IN_PLACE;
	return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
}

/* Creates a fresh temporary next to name; 0 and *fd, *tmp (caller frees), or -errno. */
static int tmp_create(int dir_fd, const char *name, int *fd, char **tmp)
{
	size_t len = strlen(name), cap = len + sizeof(".0123456789abcdef.tmp");
	int i, err = -EEXIST;
	char *buf;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < TMP_TRIES && err == -EEXIST; i++) {
		snprintf(buf, cap, "%s.%016llx.tmp", name, (unsigned long long)tmp_random());
		*fd = openat(dir_fd, buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     0644);
		err = *fd < 0 ? -errno : 0;
	}
	if (err) {
		free(buf);
		return err;
	}
	*tmp = buf;
	return 0;
}

/* Opens a device or FIFO for writing without waiting for a FIFO's reader. */
static int open_in_place(int dir_fd, const char *name)
{
	struct stat st;
	int fd, flags;

	fd = openat(dir_fd, name, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENXIO ? -EPIPE : -errno;
	/* what was opened must still be one (a symlink may have been swapped meanwhile) */
	if (fstat(fd, &st) || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
		close(fd);
		return -ESTALE;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
		close(fd);
		return -errno;
	}
	return fd;
}

static struct output_file *output_file__alloc(int dir_fd, const char *name)
{
	struct output_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = -1;
	f->dir_fd = dir_fd;
	f->name = strdup(name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	return f;
}

int output_file__openat(int dir_fd, const char *name, struct output_file **out)
{
	struct output_file *f;
	int kind, err = 0;

	*out = NULL;
	kind = target_kind(dir_fd, name);
	if (kind < 0)
		return kind;
	f = output_file__alloc(dir_fd, name);
	if (!f)
		return -ENOMEM;
	if (kind == TARGET_REPLACE) {
		err = tmp_create(dir_fd, name, &f->fd, &f->tmp);
	} else {
		f->fd = open_in_place(dir_fd, name);
		err = f->fd < 0 ? f->fd : 0;
	}
	if (err) {
		f->fd = -1;
		output_file__abort(f);
		return err;
	}
	*out = f;
	return 0;
}

int output_file__open(const char *path, struct output_file **out)
{
	struct output_file *f;

	if (strcmp(path, "-"))
		return output_file__openat(AT_FDCWD, path, out);
	*out = NULL;
	f = output_file__alloc(AT_FDCWD, path);
	if (!f)
		return -ENOMEM;
	f->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (f->fd < 0) {
		int err = -errno;

		output_file__abort(f);
		return err;
	}
	*out = f;
	return 0;
}

int output_file__check(const char *path)
{
	char *tmp = NULL;
	int kind, fd;

	if (!strcmp(path, "-"))
		return 0;
	kind = target_kind(AT_FDCWD, path);
	if (kind < 0)
		return kind;
	if (kind == TARGET_IN_PLACE)
		return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) ? -errno : 0;
	kind = tmp_create(AT_FDCWD, path, &fd, &tmp);
	if (kind)
		return kind;
	close(fd);
	unlink(tmp);
	free(tmp);
	return 0;
}

int output_file__fd(const struct output_file *f)
{
	return f->stream ? fileno(f->stream) : f->fd;
}

int output_file__write(struct output_file *f, const void *buf, size_t n)
{
	return fd__write_all(output_file__fd(f), buf, n);
}

FILE *output_file__stream(struct output_file *f)
{
	if (!f->stream) {
		f->stream = fdopen(f->fd, "w");
		if (f->stream)
			f->fd = -1;
	}
	return f->stream;
}

int output_file__open_stream(const char *path, struct output_file **out, FILE **stream)
{
	int err = output_file__open(path, out);

	if (err)
		return err;
	*stream = output_file__stream(*out);
	if (!*stream)
		return output_file__finish(*out, -errno);
	return 0;
}

/* Closes the descriptor or stream; 0 or -errno of a failed flush or close. */
static int output_file__close(struct output_file *f)
{
	int err = 0;

	if (f->stream) {
		errno = 0;
		if (fclose(f->stream))
			err = errno ? -errno : -EIO;
		f->stream = NULL;
	} else if (f->fd >= 0) {
		if (close(f->fd) && errno != EINTR)
			err = -errno;
	}
	f->fd = -1;
	return err;
}

int output_file__commit(struct output_file *f)
{
	int err = output_file__close(f), kind;

	if (!err && f->tmp) {
		/* rename over a regular file or nothing only, whatever appeared meanwhile */
		kind = target_kind(f->dir_fd, f->name);
		if (kind < 0)
			err = kind;
		else if (kind != TARGET_REPLACE)
			err = -EEXIST;
		else if (renameat(f->dir_fd, f->tmp, f->dir_fd, f->name))
			err = -errno;
		if (!err) {
			free(f->tmp);
			f->tmp = NULL;
		}
	}
	output_file__abort(f);
	return err;
}

int output_file__finish(struct output_file *f, int err)
{
	if (!err)
		return output_file__commit(f);
	output_file__abort(f);
	return err;
}

void output_file__abort(struct output_file *f)
{
	if (!f)
		return;
	output_file__close(f);
	if (f->tmp)
		unlinkat(f->dir_fd, f->tmp, 0);
	free(f->tmp);
	free(f->name);
	free(f);
}

int output_file__open_dir(const char *path)
{
	struct stat st;
	int fd;

	if (lstat(path, &st))
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

const char *output_file__strerror(int err)
{
	switch (-err) {
	case ELOOP:
		return "is a symbolic link (name the file itself; '-' is standard output)";
	case EPIPE:
		return "no reader (a FIFO's reader must be there when the output is written)";
	case EINVAL:
		return "not a regular file, character device or FIFO";
	case ESTALE:
		return "changed while being opened";
	default:
		return strerror(-err);
	}
}
