/* On-disk unwind-table cache: round trip, corruption never used, LRU bound, a folder or
 * entry others could have planted never used.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>

#include "scratch.h"
#include "test.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_table.h"

static char dir[64];

static struct unwind_table *sample_table(size_t n)
{
	struct unwind_row *rows = calloc(n, sizeof(*rows));
	struct unwind_table *t = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		rows[i].addr = 0x1000 + i * 4;
		rows[i].rule.kind = i + 1 == n ? UNWIND_RULE_INVALID : UNWIND_RULE_CFA;
		rows[i].rule.cfa_reg = DWARF_RSP;
		rows[i].rule.cfa_off = 8 + (int32_t)(i % 5) * 8;
	}
	if (unwind_table__from_rows(rows, n, &t))
		t = NULL;
	free(rows);
	return t;
}

static void path_of(uint64_t id, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%016llx.unwind", dir, (unsigned long long)id);
}

TEST(round_trip)
{
	struct table_cache *c = table_cache__new(dir, 1 << 20);
	struct unwind_table *t = sample_table(100), *back = NULL;
	const struct unwind_row *a, *b;
	size_t na, nb;

	REQUIRE(c && t);
	CHECK_EQ_INT(table_cache__load(c, 0x1234, &back), -ENOENT);
	CHECK_EQ_INT(table_cache__store(c, 0x1234, t), 0);
	CHECK_EQ_INT(table_cache__load(c, 0x1234, &back), 0);
	REQUIRE(back);
	a = unwind_table__rows(t, &na);
	b = unwind_table__rows(back, &nb);
	CHECK_EQ_INT(na, nb);
	CHECK(na == nb && !memcmp(a, b, na * sizeof(*a)));
	CHECK_EQ_INT(table_cache__stats(c)->hits, 1);
	CHECK_EQ_INT(table_cache__stats(c)->misses, 1);
	unwind_table__free(back);
	unwind_table__free(t);
	table_cache__free(c);
}

/* Damage a stored entry in several ways: every one is rejected, counted and deleted. */
TEST(corruption_is_rejected)
{
	struct table_cache *c = table_cache__new(dir, 1 << 20);
	struct unwind_table *t = sample_table(50), *back = NULL;
	char path[512];
	int kind;

	REQUIRE(c && t);
	path_of(0x77, path, sizeof(path));
	for (kind = 0; kind < 4; kind++) {
		struct stat st;
		int fd;
		unsigned char byte;

		REQUIRE(table_cache__store(c, 0x77, t) == 0);
		fd = open(path, O_RDWR);
		REQUIRE(fd >= 0);
		REQUIRE(fstat(fd, &st) == 0);
		switch (kind) {
		case 0: /* a flipped bit in the rows */
			REQUIRE(pread(fd, &byte, 1, st.st_size - 30) == 1);
			byte ^= 0x10;
			REQUIRE(pwrite(fd, &byte, 1, st.st_size - 30) == 1);
			break;
		case 1: /* truncated */
			REQUIRE(ftruncate(fd, st.st_size - 7) == 0);
			break;
		case 2: /* another format version */
			byte = 99;
			REQUIRE(pwrite(fd, &byte, 1, 4) == 1);
			break;
		default: /* empty */
			REQUIRE(ftruncate(fd, 0) == 0);
			break;
		}
		close(fd);
		/* another version's entry is no corruption: a miss, deleted, counted apart */
		CHECK(table_cache__load(c, 0x77, &back) == (kind == 2 ? -ENOENT : -EBADMSG));
		CHECK(back == NULL);
		CHECK(access(path, F_OK) != 0);
	}
	CHECK_EQ_INT(table_cache__stats(c)->corrupt, 3);
	CHECK_EQ_INT(table_cache__stats(c)->outdated, 1);
	CHECK_EQ_INT(table_cache__stats(c)->hits, 0);
	unwind_table__free(t);
	table_cache__free(c);
}

/* A table of several windows goes through the cache a window at a time: read back through
 * windows and the row cursor it equals the stored one; an out-of-order row in a later window
 * is caught before the table is handed out; a file that shrinks under a loaded table makes
 * its reads fail instead of returning rows it no longer has.
 */
TEST(windows_of_rows)
{
	struct table_cache *c = table_cache__new(dir, 16 << 20);
	size_t n = 3 * UNWIND_ROW_WINDOW + 17, i, bad = 0;
	struct unwind_table *t = sample_table(n), *back = NULL;
	struct unwind_row_cursor *cur = malloc(sizeof(*cur));
	struct unwind_row row, want;
	char path[512];
	int fd;

	REQUIRE(c && t && cur);
	REQUIRE(table_cache__store(c, 0x99, t) == 0);
	REQUIRE(table_cache__load(c, 0x99, &back) == 0);
	CHECK_EQ_INT(unwind_table__row_cnt(back), n);
	unwind_row_cursor__init(cur, back);
	for (i = 0; i < n; i++) {
		const struct unwind_row *r = unwind_row_cursor__get(cur, i);

		REQUIRE(unwind_table__read_rows(t, i, 1, &want) == 0);
		if (!r || memcmp(r, &want, sizeof(want)))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(unwind_row_cursor__get(cur, n) == NULL && cur->err == 0);
	CHECK_EQ_INT(unwind_table__read_rows(back, n - 1, 2, &row), -ERANGE);

	/* the loaded table reads its file (a 32-byte header, then the rows): cut it short, and its last rows are an error */
	path_of(0x99, path, sizeof(path));
	REQUIRE(truncate(path, 32 + (off_t)(n - 5) * (off_t)sizeof(row)) == 0);
	CHECK_EQ_INT(unwind_table__read_rows(back, n - 1, 1, &row), -EIO);
	unwind_row_cursor__init(cur, back);
	CHECK(unwind_row_cursor__get(cur, n - 1) == NULL && cur->err == -EIO);
	unwind_table__free(back);
	back = NULL;

	/* rows out of order in the third window: the whole entry is refused */
	REQUIRE(table_cache__store(c, 0x99, t) == 0);
	fd = open(path, O_RDWR);
	REQUIRE(fd >= 0);
	want.addr = 0;
	REQUIRE(pwrite(fd, &want.addr, sizeof(want.addr),
		       32 + (off_t)(2 * UNWIND_ROW_WINDOW + 3) * (off_t)sizeof(row)) ==
		(ssize_t)sizeof(want.addr));
	close(fd);
	CHECK_EQ_INT(table_cache__load(c, 0x99, &back), -EBADMSG);
	CHECK(back == NULL);
	free(cur);
	unwind_table__free(t);
	table_cache__free(c);
}

TEST(bounded_by_lru)
{
	struct unwind_table *t = sample_table(1000); /* ~24 KB per entry */
	struct table_cache *c = table_cache__new(dir, 80 * 1024);
	struct unwind_table *back = NULL;
	char path[512];
	uint64_t id;

	REQUIRE(c && t);
	for (id = 1; id <= 3; id++) {
		struct timespec ts[2] = { { .tv_sec = 1000 * (time_t)id },
					  { .tv_sec = 1000 * (time_t)id } };

		REQUIRE(table_cache__store(c, id, t) == 0);
		path_of(id, path, sizeof(path));
		REQUIRE(utimensat(AT_FDCWD, path, ts, 0) == 0); /* stored long ago, in id order */
	}
	/* use entry 1, so entry 2 is the least recently used when 4 arrives */
	CHECK_EQ_INT(table_cache__load(c, 1, &back), 0);
	unwind_table__free(back);
	REQUIRE(table_cache__store(c, 4, t) == 0);
	path_of(2, path, sizeof(path));
	CHECK(access(path, F_OK) != 0);
	path_of(1, path, sizeof(path));
	CHECK(access(path, F_OK) == 0);
	CHECK(table_cache__stats(c)->evicted >= 1);
	unwind_table__free(t);
	table_cache__free(c);
}

/* The folder is walked only when our own stores would pass the cap, or every 16 stores: an
 * entry another process stored (here planted, 2 MB, old) keeps the folder over the cap until
 * that walk, not longer.
 */
TEST(walked_every_16_stores)
{
	struct unwind_table *t = sample_table(10);
	struct table_cache *c = table_cache__new(dir, 1 << 20);
	struct timespec old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
	char path[512];
	uint64_t id;
	FILE *f;

	REQUIRE(c && t);
	REQUIRE(table_cache__store(c, 0x100, t) == 0); /* the first store walks */
	path_of(0x200, path, sizeof(path));
	f = fopen(path, "w");
	REQUIRE(f);
	REQUIRE(!ftruncate(fileno(f), 2 << 20));
	fclose(f);
	REQUIRE(utimensat(AT_FDCWD, path, old, 0) == 0);
	for (id = 0x101; id <= 0x10f; id++) /* 15 stores: not walked */
		REQUIRE(table_cache__store(c, id, t) == 0);
	CHECK(access(path, F_OK) == 0);
	REQUIRE(table_cache__store(c, 0x110, t) == 0); /* the 16th: walked, trimmed */
	CHECK(access(path, F_OK) != 0);
	path_of(0x110, path, sizeof(path));
	CHECK(access(path, F_OK) == 0);
	CHECK_EQ_INT(table_cache__stats(c)->evicted, 1);
	unwind_table__free(t);
	table_cache__free(c);
}

/* table_cache__new(path) fails with errno want. */
static void check_refused(const char *path, int want)
{
	struct table_cache *c;

	errno = 0;
	c = table_cache__new(path, 1 << 20);
	CHECK(c == NULL);
	CHECK_EQ_INT(errno, want);
	table_cache__free(c);
}

/* A folder that is a symlink, or that others may write into, is refused. */
TEST(unsafe_folder_refused)
{
	char real[600], link[600];
	struct table_cache *c;

	snprintf(real, sizeof(real), "%s/real", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	REQUIRE(mkdir(real, 0700) == 0);
	REQUIRE(symlink(real, link) == 0);
	check_refused(link, ELOOP);
	REQUIRE(chmod(real, 0777) == 0);
	check_refused(real, EACCES);
	REQUIRE(chmod(real, 0720) == 0);
	check_refused(real, EACCES);
	REQUIRE(chmod(real, 0700) == 0);
	c = table_cache__new(real, 1 << 20);
	CHECK(c != NULL);
	table_cache__free(c);
	/* a new folder is created private */
	snprintf(real, sizeof(real), "%s/new", dir);
	c = table_cache__new(real, 1 << 20);
	CHECK(c != NULL);
	table_cache__free(c);
	{
		struct stat st;

		CHECK(stat(real, &st) == 0 && (st.st_mode & 0777) == 0700);
	}
}

/* A symlink at an entry's name is neither read nor written through. */
TEST(symlink_entry_not_followed)
{
	struct table_cache *c = table_cache__new(dir, 1 << 20);
	struct unwind_table *t = sample_table(20), *back = NULL;
	char path[512], victim[600], buf[8] = { 0 };
	struct stat st;
	int fd;

	REQUIRE(c && t);
	REQUIRE(table_cache__store(c, 0x99, t) == 0);
	path_of(0x99, path, sizeof(path));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	REQUIRE(rename(path, victim) == 0); /* a valid entry, elsewhere */
	REQUIRE(symlink(victim, path) == 0);
	CHECK(table_cache__load(c, 0x99, &back) != 0);
	CHECK(back == NULL);
	unwind_table__free(back);
	REQUIRE(unlink(path) == 0 || errno == ENOENT);
	fd = open(victim, O_WRONLY | O_TRUNC);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, "victim", 6) == 6);
	close(fd);
	REQUIRE(symlink(victim, path) == 0);
	CHECK_EQ_INT(table_cache__store(c, 0x99, t), -ELOOP);
	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
	fd = open(victim, O_RDONLY);
	REQUIRE(fd >= 0);
	CHECK_EQ_INT(read(fd, buf, sizeof(buf) - 1), 6);
	close(fd);
	CHECK_STR(buf, "victim");
	unwind_table__free(t);
	table_cache__free(c);
}

static void run_tests(void)
{
	RUN(round_trip);
	RUN(corruption_is_rejected);
	RUN(windows_of_rows);
	RUN(bounded_by_lru);
	RUN(walked_every_16_stores);
	RUN(unsafe_folder_refused);
	RUN(symlink_entry_not_followed);
}

int main(void)
{
	return test_scratch_main(dir, sizeof(dir), "cache", run_tests);
}
