/* Output files: regular files replaced atomically through an O_EXCL temporary, symlinks at
 * the temporary's name or at the target never followed, devices and FIFOs written in place,
 * failures leave the old content and no temporaries.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/output_file.h"
#include "scratch.h"
#include "test.h"

static char dir[64];

static void path_in(const char *name, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", dir, name);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The whole content of path ("" when unreadable), in buf. */
static const char *content(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, cap - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/* Number of directory entries whose name contains ".tmp". */
static int tmp_cnt(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += strstr(de->d_name, ".tmp") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* Predictable temporary names: 1, 2, 3, ... */
static uint64_t next_tmp;
static uint64_t counting_source(void)
{
	return ++next_tmp;
}

TEST(regular_file_replaced_atomically)
{
	char path[512], buf[64];
	struct output_file *f = NULL;
	struct stat before, after;

	path_in("out.txt", path, sizeof(path));
	put(path, "old");
	REQUIRE(stat(path, &before) == 0);
	CHECK_EQ_INT(output_file__check(path), 0);
	CHECK_EQ_INT(tmp_cnt(), 0);
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "new ", 4), 0);
	REQUIRE(output_file__stream(f) != NULL);
	CHECK(output_file__stream(f) == output_file__stream(f));
	fputs("content", output_file__stream(f));
	fflush(output_file__stream(f));
	/* not yet visible: readers see the old file until commit */
	CHECK_STR(content(path, buf, sizeof(buf)), "old");
	CHECK_EQ_INT(tmp_cnt(), 1);
	CHECK_EQ_INT(output_file__commit(f), 0);
	CHECK_STR(content(path, buf, sizeof(buf)), "new content");
	REQUIRE(stat(path, &after) == 0);
	CHECK(S_ISREG(after.st_mode));
	CHECK(after.st_ino != before.st_ino); /* a new file, renamed over the old one */
	CHECK_EQ_INT(tmp_cnt(), 0);
	/* nothing there before works too */
	path_in("fresh.txt", path, sizeof(path));
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "x", 1), 0);
	CHECK_EQ_INT(output_file__commit(f), 0);
	CHECK_STR(content(path, buf, sizeof(buf)), "x");
}

TEST(abort_leaves_old_content)
{
	char path[512], buf[64];
	struct output_file *f = NULL;

	path_in("keep.txt", path, sizeof(path));
	put(path, "previous");
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "half", 4), 0);
	output_file__abort(f);
	CHECK_STR(content(path, buf, sizeof(buf)), "previous");
	CHECK_EQ_INT(tmp_cnt(), 0);
	output_file__abort(NULL);
}

/* A commit that cannot rename (the target became a directory) fails and cleans up. */
TEST(failed_commit_leaves_no_temporary)
{
	char path[512], inner[600];
	struct output_file *f = NULL;
	struct stat st;

	path_in("became_dir", path, sizeof(path));
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "data", 4), 0);
	REQUIRE(mkdir(path, 0755) == 0);
	snprintf(inner, sizeof(inner), "%s/inside", path);
	put(inner, "x");
	CHECK_EQ_INT(output_file__commit(f), -EISDIR);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ_INT(tmp_cnt(), 0);
	/* an unwritable place: the error comes at check and at open */
	CHECK_EQ_INT(output_file__check("/nonexistent-dir/x.txt"), -ENOENT);
	CHECK_EQ_INT(output_file__open("/nonexistent-dir/x.txt", &f), -ENOENT);
	CHECK(f == NULL);
}

/* Symlinks planted at the temporary names to come point at a victim: none is followed. */
TEST(symlink_at_tmp_name_not_followed)
{
	char path[512], link[600], victim[512], buf[64];
	struct output_file *f = NULL;
	int i;

	path_in("victim", victim, sizeof(victim));
	put(victim, "secret");
	path_in("target.txt", path, sizeof(path));
	output_file__set_tmp_source(counting_source);
	/* the first three names are taken by symlinks: the fourth is used */
	next_tmp = 100;
	for (i = 1; i <= 3; i++) {
		snprintf(link, sizeof(link), "%s.%016llx.tmp", path, (unsigned long long)(100 + i));
		REQUIRE(symlink(victim, link) == 0);
	}
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(next_tmp, 104);
	CHECK_EQ_INT(output_file__write(f, "profile", 7), 0);
	CHECK_EQ_INT(output_file__commit(f), 0);
	CHECK_STR(content(victim, buf, sizeof(buf)), "secret");
	CHECK_STR(content(path, buf, sizeof(buf)), "profile");
	/* every name taken: a bounded number of tries, then an error, victim intact */
	next_tmp = 0;
	for (i = 1; i <= 64; i++) {
		snprintf(link, sizeof(link), "%s.%016llx.tmp", path, (unsigned long long)i);
		REQUIRE(symlink(victim, link) == 0);
	}
	next_tmp = 0;
	CHECK_EQ_INT(output_file__open(path, &f), -EEXIST);
	CHECK(next_tmp <= 64);
	next_tmp = 0;
	CHECK_EQ_INT(output_file__check(path), -EEXIST);
	CHECK_STR(content(victim, buf, sizeof(buf)), "secret");
	CHECK_STR(content(path, buf, sizeof(buf)), "profile");
	output_file__set_tmp_source(NULL);
	for (i = 1; i <= 64; i++) {
		snprintf(link, sizeof(link), "%s.%016llx.tmp", path, (unsigned long long)i);
		unlink(link);
	}
	for (i = 101; i <= 103; i++) {
		snprintf(link, sizeof(link), "%s.%016llx.tmp", path, (unsigned long long)i);
		unlink(link);
	}
}

/* A symlink at the target itself (not ours to trust when another user owns it; here we own
 * it, and it leads to a regular file) is refused; the file it names is untouched.
 */
TEST(symlink_target_refused)
{
	char path[512], victim[512], buf[64];
	struct output_file *f = NULL;
	struct stat st;

	path_in("victim2", victim, sizeof(victim));
	put(victim, "secret");
	path_in("link.txt", path, sizeof(path));
	REQUIRE(symlink(victim, path) == 0);
	CHECK_EQ_INT(output_file__check(path), -ELOOP);
	CHECK_EQ_INT(output_file__open(path, &f), -ELOOP);
	CHECK(f == NULL);
	CHECK_STR(content(victim, buf, sizeof(buf)), "secret");
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(strstr(output_file__strerror(-ELOOP), "symbolic link") != NULL);
	/* a dangling one too */
	path_in("dangling.txt", path, sizeof(path));
	REQUIRE(symlink("/nonexistent-victim", path) == 0);
	CHECK_EQ_INT(output_file__open(path, &f), -ELOOP);
	CHECK(access("/nonexistent-victim", F_OK) != 0);
	/* our own symlink to a device is followed: written in place */
	path_in("null-link", path, sizeof(path));
	REQUIRE(symlink("/dev/null", path) == 0);
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "x", 1), 0);
	CHECK_EQ_INT(output_file__commit(f), 0);
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK_EQ_INT(tmp_cnt(), 0);
}

TEST(char_device_written_in_place)
{
	struct output_file *f = NULL;
	struct stat st;

	CHECK_EQ_INT(output_file__check("/dev/null"), 0);
	REQUIRE(output_file__open("/dev/null", &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "profile", 7), 0);
	CHECK_EQ_INT(output_file__commit(f), 0);
	CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK(access("/dev/null.tmp", F_OK) != 0);
	CHECK_EQ_INT(output_file__check("/"), -EISDIR);
	CHECK_EQ_INT(output_file__check(""), -ENOENT);
}

TEST(fifo_written_in_place)
{
	char path[512], buf[64];
	struct output_file *f = NULL;
	struct stat st;
	ssize_t n;
	int rd;

	path_in("fifo", path, sizeof(path));
	REQUIRE(mkfifo(path, 0600) == 0);
	/* check never opens it (no reader yet: an open would block or fail) */
	CHECK_EQ_INT(output_file__check(path), 0);
	/* no reader when the output is written: an error, not a hang */
	CHECK_EQ_INT(output_file__open(path, &f), -EPIPE);
	rd = open(path, O_RDONLY | O_NONBLOCK);
	REQUIRE(rd >= 0);
	REQUIRE(output_file__open(path, &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "through", 7), 0);
	fputs(" the fifo", output_file__stream(f));
	CHECK_EQ_INT(output_file__commit(f), 0);
	n = read(rd, buf, sizeof(buf) - 1);
	CHECK_EQ_INT(n, 16);
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, "through the fifo");
	close(rd);
	CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));
	CHECK_EQ_INT(tmp_cnt(), 0);
}

TEST(stdout_dash)
{
	char path[512], buf[64];
	struct output_file *f = NULL;
	int saved, fd;

	path_in("stdout.txt", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	REQUIRE(saved >= 0);
	REQUIRE(dup2(fd, STDOUT_FILENO) == STDOUT_FILENO);
	close(fd);
	CHECK_EQ_INT(output_file__check("-"), 0);
	CHECK_EQ_INT(output_file__open("-", &f), 0);
	if (f) {
		CHECK_EQ_INT(output_file__write(f, "to stdout", 9), 0);
		CHECK_EQ_INT(output_file__commit(f), 0);
	}
	dup2(saved, STDOUT_FILENO);
	close(saved);
	CHECK_STR(content(path, buf, sizeof(buf)), "to stdout");
	CHECK(access("-", F_OK) != 0);
}

/* openat: names relative to a folder descriptor. */
TEST(relative_to_folder)
{
	char path[512], buf[64];
	struct output_file *f = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	REQUIRE(dfd >= 0);
	REQUIRE(output_file__openat(dfd, "rel.txt", &f) == 0);
	CHECK_EQ_INT(output_file__write(f, "rel", 3), 0);
	CHECK_EQ_INT(output_file__commit(f), 0);
	path_in("rel.txt", path, sizeof(path));
	CHECK_STR(content(path, buf, sizeof(buf)), "rel");
	close(dfd);
	CHECK_EQ_INT(tmp_cnt(), 0);
}

static void run_tests(void)
{
	RUN(regular_file_replaced_atomically);
	RUN(abort_leaves_old_content);
	RUN(failed_commit_leaves_no_temporary);
	RUN(symlink_at_tmp_name_not_followed);
	RUN(symlink_target_refused);
	RUN(char_device_written_in_place);
	RUN(fifo_written_in_place);
	RUN(stdout_dash);
	RUN(relative_to_folder);
}

int main(void)
{
	return test_scratch_main(dir, sizeof(dir), "output", run_tests);
}
