/* base/capped_dir.c: the oldest of our files go first, only ours, never through a symlink. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/capped_dir.h"
#include "scratch.h"
#include "test.h"

static char dir[64];

static void put(int dir_fd, const char *name, size_t size, time_t mtime)
{
	struct timespec t[2] = { { mtime, 0 }, { mtime, 0 } };
	char buf[1000] = { 0 };
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return;
	if (write(fd, buf, size) != (ssize_t)size)
		size = 0;
	futimens(fd, t);
	close(fd);
}

static bool exists(int dir_fd, const char *name)
{
	struct stat st;

	return !fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW);
}

TEST(oldest_first_ours_only)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY);

	REQUIRE(d >= 0);
	put(d, "p-3.x", 1000, 3000);
	put(d, "p-1.x", 1000, 1000);
	put(d, "p-2.x", 1000, 2000);
	put(d, "other.x", 1000, 500); /* not our prefix */
	put(d, "p-0.y", 1000, 100);   /* not our suffix */
	put(d, "victim", 1000, 50);
	REQUIRE(!symlinkat("victim", d, "p-link.x"));
	CHECK_EQ_INT(capped_dir__trim(d, "p-", ".x", 2000, true), 1);
	CHECK(!exists(d, "p-1.x"));
	CHECK(exists(d, "p-2.x") && exists(d, "p-3.x"));
	CHECK(exists(d, "other.x") && exists(d, "p-0.y") && exists(d, "victim"));
	CHECK(exists(d, "p-link.x"));
	/* keep_newest: the newest stays even alone over the cap; without it, it goes too */
	CHECK_EQ_INT(capped_dir__trim(d, "p-", ".x", 10, true), 1);
	CHECK(exists(d, "p-3.x"));
	CHECK_EQ_INT(capped_dir__trim(d, "p-", ".x", 10, false), 1);
	CHECK(!exists(d, "p-3.x"));
	CHECK_EQ_INT(capped_dir__trim(d, "", ".x", 0, false), 1); /* other.x */
	CHECK(exists(d, "victim") && exists(d, "p-link.x"));
	close(d);
}

static void run_tests(void)
{
	RUN(oldest_first_ours_only);
}

int main(void)
{
	return test_scratch_main(dir, sizeof(dir), "cappeddir", run_tests);
}
