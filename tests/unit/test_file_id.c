/* proc/file_id.c: the identity of files. Two distinct files never share an id, even with equal
 * bytes or bytes differing only far from their start and end (two builds differing only in
 * .eh_frame); the same file has one id however it is opened; a file rewritten in place gets a
 * new one.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/file_id.h"
#include "scratch.h"
#include "test.h"

static char dir[64];

static int make_file(const char *name, const uint8_t *p, size_t n, char *path, size_t cap)
{
	int fd;

	snprintf(path, cap, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && write(fd, p, n) != (ssize_t)n) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static uint64_t id_of(int fd)
{
	uint64_t id = 0;

	return file_id__of_fd(fd, &id) ? 0 : id;
}

TEST(distinct_files_distinct_ids)
{
	size_t n = 16 * 1024; /* the size of the two binaries that shared one id before */
	uint8_t *p = calloc(1, n);
	char a_path[128], b_path[128], c_path[128];
	int a, b, c, a2;

	REQUIRE(p);
	a = make_file("a", p, n, a_path, sizeof(a_path));
	b = make_file("b", p, n, b_path, sizeof(b_path)); /* equal bytes */
	p[n / 2] = 1;
	c = make_file("c", p, n, c_path, sizeof(c_path)); /* one byte in the middle differs */
	REQUIRE(a >= 0 && b >= 0 && c >= 0);
	CHECK(id_of(a) != 0);
	CHECK(id_of(a) != id_of(b));
	CHECK(id_of(a) != id_of(c) && id_of(b) != id_of(c));
	/* the same file, opened again, by another path (a hard link): the same id */
	a2 = open(a_path, O_RDONLY);
	REQUIRE(a2 >= 0);
	CHECK_EQ_U64(id_of(a2), id_of(a));
	close(a2);
	snprintf(b_path, sizeof(b_path), "%s/a-link", dir);
	REQUIRE(!link(a_path, b_path));
	a2 = open(b_path, O_RDONLY);
	REQUIRE(a2 >= 0);
	CHECK_EQ_U64(id_of(a2), id_of(a));
	close(a2);
	close(a);
	close(b);
	close(c);
	free(p);
}

TEST(rewritten_in_place_new_id)
{
	uint8_t p[4096] = { 0 };
	char path[128];
	uint64_t before;
	int fd = make_file("w", p, sizeof(p), path, sizeof(path));

	REQUIRE(fd >= 0);
	before = id_of(fd);
	usleep(2000); /* a later ctime even on a coarse clock tick */
	p[100] = 7;
	REQUIRE(pwrite(fd, p, sizeof(p), 0) == (ssize_t)sizeof(p));
	CHECK(id_of(fd) != before);
	before = id_of(fd);
	usleep(2000);
	REQUIRE(!fchmod(fd, 0600)); /* metadata only: ctime moves, so does the id */
	CHECK(id_of(fd) != before);
	close(fd);
}

TEST(images)
{
	uint8_t p[64] = { 1, 2, 3 };

	CHECK_EQ_U64(file_id__of_mem(p, sizeof(p)), file_id__of_mem(p, sizeof(p)));
	CHECK(file_id__of_mem(p, sizeof(p)) != file_id__of_mem(p, sizeof(p) - 1));
	CHECK(file_id__of_mem(p, 0) != 0);
}

static void run_tests(void)
{
	RUN(distinct_files_distinct_ids);
	RUN(rewritten_in_place_new_id);
	RUN(images);
}

int main(void)
{
	return test_scratch_main(dir, sizeof(dir), "fileid", run_tests);
}
