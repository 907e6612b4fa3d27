/* Unit tests for the /proc/PID/maps reader (proc/maps.c): every line parsed and checked by
 * proc_maps__read(), only the executable ones by proc_maps__read_exec() (the tracker's scan),
 * which leaves the others unparsed but still fails on a malformed executable line; and both
 * on this process's own maps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/maps.h"
#include "test.h"

static char path[64];

static void write_maps(const char *text)
{
	FILE *f = fopen(path, "w");

	REQUIRE(f);
	REQUIRE(fputs(text, f) >= 0);
	REQUIRE(!fclose(f));
}

static const char mixed[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 131 /usr/bin/sleep\n"
	"55d0c0a02000-55d0c0a06000 r-xp 00002000 fd:01 131 /usr/bin/sleep\n"
	"55d0c1a00000-55d0c1a21000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f1e2a028000-7f1e2a1bd000 r-xp 00028000 fd:01 2590 /usr/lib/x86_64-linux-gnu/libc.so.6 "
	"(deleted)\n"
	"7f1e2a1bd000-7f1e2a215000 r--p 001bd000 fd:01 2590 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7ffd4c9e5000-7ffd4c9e7000 r-xp 00000000 00:00 0                          [vdso]\n";

TEST(exec_only)
{
	struct proc_maps all, x;

	write_maps(mixed);
	REQUIRE(!proc_maps__read(0, path, &all));
	CHECK_EQ_INT(all.cnt, 6);
	REQUIRE(!proc_maps__read_exec(0, path, &x));
	REQUIRE(x.cnt == 3);
	CHECK(x.maps[0].start == 0x55d0c0a02000 && x.maps[0].end == 0x55d0c0a06000);
	CHECK(x.maps[0].offset == 0x2000 && x.maps[0].ino == 131 && x.maps[0].dev_major == 0xfd &&
	      x.maps[0].dev_minor == 1);
	CHECK(!strcmp(x.maps[0].path, "/usr/bin/sleep"));
	CHECK(x.maps[1].deleted && !strcmp(x.maps[1].path, "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(x.maps[1].perms == (PROC_MAP_READ | PROC_MAP_EXEC));
	CHECK(!strcmp(x.maps[2].path, "[vdso]"));
	/* the same entries as the full read's executable ones */
	CHECK(all.maps[1].start == x.maps[0].start && all.maps[3].end == x.maps[1].end);
	proc_maps__free(&all);
	proc_maps__free(&x);
}

TEST(malformed)
{
	struct proc_maps m;

	/* a bad line that is not executable: only the full read looks at it */
	write_maps("55d0c0a00000-55d0c0a02000 r--p 0000zz00 fd:01 131 /usr/bin/sleep\n"
		   "55d0c0a02000-55d0c0a06000 r-xp 00002000 fd:01 131 /usr/bin/sleep\n");
	CHECK_EQ_INT(proc_maps__read(0, path, &m), -EINVAL);
	REQUIRE(!proc_maps__read_exec(0, path, &m));
	CHECK_EQ_INT(m.cnt, 1);
	proc_maps__free(&m);
	/* a bad executable line fails both */
	write_maps("55d0c0a02000-55d0c0a06000 r-xp 00002000 fd-01 131 /usr/bin/sleep\n");
	CHECK_EQ_INT(proc_maps__read(0, path, &m), -EINVAL);
	CHECK_EQ_INT(proc_maps__read_exec(0, path, &m), -EINVAL);
	/* too short to hold the perms: not skipped, rejected */
	write_maps("55d0c0a02000-55d0c0a06000 r\n");
	CHECK_EQ_INT(proc_maps__read_exec(0, path, &m), -EINVAL);
	write_maps("garbage\n");
	CHECK_EQ_INT(proc_maps__read_exec(0, path, &m), -EINVAL);
}

TEST(own_process)
{
	struct proc_maps all, x;
	size_t i, n = 0;

	REQUIRE(!proc_maps__read(getpid(), NULL, &all));
	REQUIRE(!proc_maps__read_exec(getpid(), NULL, &x));
	for (i = 0; i < all.cnt; i++)
		if (all.maps[i].perms & PROC_MAP_EXEC) {
			CHECK(n < x.cnt && x.maps[n].start == all.maps[i].start &&
			      !strcmp(x.maps[n].path, all.maps[i].path));
			n++;
		}
	CHECK_EQ_INT(n, x.cnt);
	CHECK(x.cnt > 0 && x.cnt < all.cnt);
	proc_maps__free(&all);
	proc_maps__free(&x);
}

int main(void)
{
	int fd, ret;

	snprintf(path, sizeof(path), "/tmp/stackscope-maps.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	RUN(exec_only);
	RUN(malformed);
	RUN(own_process);
	ret = test_summary();
	unlink(path);
	return ret;
}
