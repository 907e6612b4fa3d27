/* Rotating folder of per-interval pprof files. See pprof_dir.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/pprof_dir.h"
#include "export/pprof.h"

#define PREFIX "stackscope-"
#define SUFFIX ".pb.gz"

int pprof_dir__prepare(const char *dir)
{
	char path[4096];
	size_t i, n = strlen(dir);

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
	return access(dir, W_OK) ? -errno : 0;
}

struct entry {
	char name[256];
	uint64_t size;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Our file names sort by time, so the oldest come first. */
static void trim(const char *dir, uint64_t max_bytes, struct pprof_dir_stats *stats)
{
	struct entry *e = NULL;
	size_t cnt = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[4096];
		struct stat st;

		if (len >= sizeof(e->name) || strncmp(de->d_name, PREFIX, strlen(PREFIX)) ||
		    len < strlen(SUFFIX) || strcmp(de->d_name + len - strlen(SUFFIX), SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (cnt == cap) {
			struct entry *n = realloc(e, (cap ? cap * 2 : 64) * sizeof(*n));

			if (!n)
				break;
			e = n;
			cap = cap ? cap * 2 : 64;
		}
		memcpy(e[cnt].name, de->d_name, len + 1);
		e[cnt].size = (uint64_t)st.st_size;
		total += e[cnt].size;
		cnt++;
	}
	closedir(d);
	qsort(e, cnt, sizeof(*e), by_name);
	/* Never delete the newest file, even if it alone is over the cap. */
	for (i = 0; i + 1 < cnt && total > max_bytes; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, e[i].name);
		if (!unlink(path)) {
			total -= e[i].size;
			stats->deleted++;
		}
	}
	free(e);
}

int pprof_dir__write(const char *dir, uint64_t max_bytes, const struct profile *p,
		     uint64_t when_ns, struct pprof_dir_stats *stats)
{
	char path[4096], stamp[32];
	time_t secs = (time_t)(when_ns / 1000000000ULL);
	struct tm tm;
	struct stat st;
	int err;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/" PREFIX "%s.%03uZ" SUFFIX, dir, stamp,
		 (unsigned int)(when_ns / 1000000ULL % 1000));
	err = pprof__write(p, path);
	if (err) {
		stats->failed++;
		return err;
	}
	stats->written++;
	if (!stat(path, &st))
		stats->bytes += (uint64_t)st.st_size;
	trim(dir, max_bytes, stats);
	return 0;
}
