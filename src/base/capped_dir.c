/* Byte-capped folders. See capped_dir.h. */
#include "base/capped_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"

struct capped_file {
	char name[256];
	uint64_t size;
	struct timespec mtime;
};

static int older_first(const void *a, const void *b)
{
	const struct capped_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool name_matches(const char *name, const char *prefix, const char *suffix)
{
	size_t len = strlen(name), pl = strlen(prefix), sl = strlen(suffix);

	return len < sizeof(((struct capped_file *)0)->name) && len > sl &&
	       !strncmp(name, prefix, pl) && !strcmp(name + len - sl, suffix);
}

size_t capped_dir__trim(int dir_fd, const char *prefix, const char *suffix, uint64_t max_bytes,
			bool keep_newest)
{
	uint64_t left;

	return capped_dir__trim_left(dir_fd, prefix, suffix, max_bytes, keep_newest, &left);
}

size_t capped_dir__trim_left(int dir_fd, const char *prefix, const char *suffix, uint64_t max_bytes,
			     bool keep_newest, uint64_t *left_bytes)
{
	struct capped_file *f = NULL;
	size_t cnt = 0, cap = 0, deleted = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	*left_bytes = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!name_matches(de->d_name, prefix, suffix) ||
		    fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (array__reserve((void **)&f, &cap, cnt + 1, sizeof(*f)))
			break;
		memcpy(f[cnt].name, de->d_name, strlen(de->d_name) + 1);
		f[cnt].size = (uint64_t)st.st_size;
		f[cnt].mtime = st.st_mtim;
		total += f[cnt].size;
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(f, cnt, sizeof(*f), older_first);
	for (i = 0; i + (keep_newest ? 1 : 0) < cnt && total > max_bytes; i++) {
		if (!unlinkat(dir_fd, f[i].name, 0)) {
			total -= f[i].size;
			deleted++;
		}
	}
	free(f);
	*left_bytes = total;
	return deleted;
}
