/* proc/file_id.c: the content identity of files. Two files that differ anywhere, even in one
 * byte far from their start and end (two builds differing only in .eh_frame), must get
 * different ids; equal bytes the same id whether read from a file or from memory.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "proc/file_id.h"
#include "test.h"

static uint64_t id_of_bytes(const uint8_t *p, size_t n)
{
	char path[] = "/tmp/stackscope-fileid.XXXXXX";
	int fd = mkstemp(path);
	uint64_t id = 0;

	if (fd < 0)
		return 0;
	unlink(path);
	if (write(fd, p, n) == (ssize_t)n && file_id__of_fd(fd, &id))
		id = 0;
	close(fd);
	return id;
}

TEST(equal_bytes_equal_ids)
{
	size_t n = 3 * 1024 * 1024 + 17; /* more than one read chunk */
	uint8_t *p = malloc(n);
	uint64_t a;

	REQUIRE(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + (i >> 13));
	a = id_of_bytes(p, n);
	CHECK(a != 0);
	CHECK_EQ_U64(file_id__of_mem(p, n), a);
	CHECK_EQ_U64(id_of_bytes(p, n), a);
	free(p);
}

TEST(any_byte_changes_the_id)
{
	size_t n = 16 * 1024; /* the size of the two binaries that shared one id before */
	uint8_t *p = calloc(1, n);
	uint64_t base;

	REQUIRE(p);
	base = file_id__of_mem(p, n);
	p[n / 2] = 1; /* outside the first and last 4 KiB */
	CHECK(file_id__of_mem(p, n) != base);
	CHECK(id_of_bytes(p, n) != base);
	p[n / 2] = 0;
	p[n - 1] = 0x80;
	CHECK(file_id__of_mem(p, n) != base);
	p[n - 1] = 0;
	CHECK(file_id__of_mem(p, n - 1) != base); /* size is part of it */
	CHECK_EQ_U64(file_id__of_mem(p, n), base);
	CHECK(file_id__of_mem(p, 0) != 0);
	free(p);
}

int main(void)
{
	RUN(equal_bytes_equal_ids);
	RUN(any_byte_changes_the_id);
	return test_summary();
}
