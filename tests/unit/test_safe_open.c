/* base/safe_open.c: untrusted paths never block on a FIFO, never open a device, and a path
 * inside a container root never leads out of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/safe_open.h"
#include "test.h"

static char dir[64];

static const char *at(const char *name)
{
	static char buf[4][256];
	static int i;
	char *out = buf[i++ & 3];

	snprintf(out, sizeof(buf[0]), "%s/%s", dir, name);
	return out;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

TEST(fifo_and_device_refused)
{
	struct safe_open_stats before, after;
	int fd;

	safe_open__stats(&before);
	REQUIRE(!mkfifo(at("fifo"), 0600));
	CHECK_EQ_INT(safe_open(at("fifo")), -EINVAL); /* returns at once: no writer needed */
	CHECK_EQ_INT(safe_open__check(at("fifo")), -EINVAL);
	CHECK_EQ_INT(safe_open("/dev/null"), -EINVAL);
	CHECK_EQ_INT(safe_open(dir), -EINVAL);
	CHECK_EQ_INT(safe_open(at("missing")), -ENOENT);
	safe_open__stats(&after);
	CHECK_EQ_INT(after.not_regular - before.not_regular, 4);

	put(at("plain"), "x");
	fd = safe_open(at("plain"));
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
		CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		close(fd);
	}
	CHECK_EQ_INT(safe_open__check(at("plain")), 0);
}

TEST(root_is_a_jail)
{
	char buf[16] = "";
	int fd;

	/* root/ holds lib/good and symlinks that lead out of it when followed on the host */
	REQUIRE(!mkdir(at("root"), 0755) && !mkdir(at("root/lib"), 0755));
	put(at("root/lib/good"), "inside");
	put(at("secret"), "outside");
	REQUIRE(!symlink(at("secret"), at("root/lib/abs")));      /* absolute target */
	REQUIRE(!symlink("../../secret", at("root/lib/dotdot"))); /* climbs above root */
	REQUIRE(!symlink("good", at("root/lib/rel")));            /* stays inside: fine */

	fd = safe_open_in_root(at("root"), "/lib/good");
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 6);
	CHECK_STR(buf, "inside");
	if (fd >= 0)
		close(fd);
	fd = safe_open_in_root(at("root"), "/lib/rel");
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* the absolute link is resolved inside root, where its target does not exist */
	CHECK_EQ_INT(safe_open_in_root(at("root"), "/lib/abs"), -ENOENT);
	CHECK_EQ_INT(safe_open_in_root(at("root"), "/lib/dotdot"), -ENOENT);
	CHECK_EQ_INT(safe_open_in_root(at("root"), "/../../secret"), -ENOENT);
	/* the host view still follows them (that is what "host" means) */
	fd = safe_open(at("root/lib/abs"));
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/stackscope-safeopen.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	RUN(fifo_and_device_refused);
	RUN(root_is_a_jail);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return test_summary();
}
