/* Rotating folder of per-interval pprof files. See pprof_dir.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/capped_dir.h"
#include "base/output_file.h"
#include "export/pprof_dir.h"
#include "export/pprof.h"

#define PREFIX "stackscope-"
#define SUFFIX ".pb.gz"

int pprof_dir__prepare(const char *dir)
{
	char path[4096];
	size_t i, n = strlen(dir);
	int fd, err;

	if (!n || n >= sizeof(path))
		return -EINVAL;
	memcpy(path, dir, n + 1);
	for (i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0750) && errno != EEXIST)
			return -errno;
		path[i] = i == n ? '\0' : '/';
	}
	fd = output_file__open_dir(dir);
	if (fd < 0)
		return fd;
	err = faccessat(fd, ".", W_OK, AT_EACCESS) ? -errno : 0;
	close(fd);
	return err;
}

int pprof_dir__write(const char *dir, uint64_t max_bytes, const struct profile *p, uint64_t when_ns,
		     struct pprof_dir_stats *stats)
{
	char name[64], stamp[32];
	time_t secs = (time_t)(when_ns / 1000000000ULL);
	struct output_file *out = NULL;
	struct tm tm;
	struct stat st;
	int dir_fd, err;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(name, sizeof(name), PREFIX "%s.%03uZ" SUFFIX, stamp,
		 (unsigned int)(when_ns / 1000000ULL % 1000));
	/* checked again at every write: the folder may have been replaced since */
	dir_fd = output_file__open_dir(dir);
	err = dir_fd < 0 ? dir_fd : output_file__openat(dir_fd, name, &out);
	if (!err)
		err = output_file__finish(out, pprof__write_to(p, out));
	if (err) {
		stats->failed++;
		goto cleanup;
	}
	stats->written++;
	if (!fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		stats->bytes += (uint64_t)st.st_size;
	/* our file names sort by time; never the newest, even alone over the cap */
	stats->deleted += capped_dir__trim(dir_fd, PREFIX, SUFFIX, max_bytes, true);
cleanup:
	if (dir_fd >= 0)
		close(dir_fd);
	return err;
}
