/* serve/source_file.c: the source view reads a path from a sampled process only inside its
 * root, only regular files of disk file systems, under its caps; every refusal says why.
 * Roots are temporary folders (no root privileges needed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/source_file.h"
#include "test.h"

static char root[64], outside[64];
static int root_fd = -1;

static const char *at(const char *base, const char *name)
{
	static char buf[4][256];
	static int i;
	char *out = buf[i++ & 3];

	snprintf(out, sizeof(buf[0]), "%s/%s", base, name);
	return out;
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	chmod(path, mode);
}

/* The result of reading path in the test root (the text freed), and *why. */
static int try_read(const char *path, uid_t owner, const char **why, size_t *lines)
{
	struct source_text t;
	int err;

	*why = NULL;
	err = source_file__read(root_fd, path, owner, &t, why);
	if (lines)
		*lines = err ? 0 : t.line_cnt;
	if (!err && strstr(t.buf, "SECRET"))
		err = -EPERM; /* the secret outside must never come back */
	source_text__free(&t);
	return err;
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/ss_src_root_XXXXXX");
	snprintf(outside, sizeof(outside), "/tmp/ss_src_out_XXXXXX");
	if (!mkdtemp(root) || !mkdtemp(outside))
		return;
	mkdir(at(root, "app"), 0755);
	mkdir(at(root, "etc"), 0755);
	put(at(root, "app/main.py"), "import os\nx = 1\nprint(x)\n", 0644);
	put(at(root, "app/no_newline.py"), "a\nb", 0644);
	put(at(root, "etc/shadow"), "root:inside-root-secret-hash:\n", 0640);
	put(at(outside, "secret.txt"), "SECRET from outside the root\n", 0644);
	symlink(at(outside, "secret.txt"), at(root, "app/abs_link.py"));
	symlink("../../../../../../../../../../tmp/nowhere/../../etc/passwd",
		at(root, "app/rel_link.py"));
	{
		char rel[300];

		snprintf(rel, sizeof(rel), "../../../../../../..%s/secret.txt", outside);
		symlink(rel, at(root, "app/rel_out.py"));
	}
	symlink("/proc/self/root/etc/passwd", at(root, "app/magic.py"));
	mkfifo(at(root, "app/fifo.py"), 0644);
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void teardown(void)
{
	static const char *const names[] = {
		"app/main.py",     "app/no_newline.py", "etc/shadow",   "app/abs_link.py",
		"app/rel_link.py", "app/rel_out.py",    "app/magic.py", "app/fifo.py",
		"app/big.py",      "app/bin.py",        "app/lines.py", "app/private.py",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(at(root, names[i]));
	rmdir(at(root, "app"));
	rmdir(at(root, "etc"));
	rmdir(root);
	unlink(at(outside, "secret.txt"));
	rmdir(outside);
	if (root_fd >= 0)
		close(root_fd);
}

TEST(reads_a_source_file)
{
	const char *why;
	size_t lines;

	REQUIRE(root_fd >= 0);
	CHECK_EQ_INT(try_read("/app/main.py", (uid_t)-1, &why, &lines), 0);
	CHECK_EQ_U64(lines, 3);
	CHECK_EQ_INT(try_read("/app/no_newline.py", (uid_t)-1, &why, &lines), 0);
	CHECK_EQ_U64(lines, 2);
	/* ".." that stays inside is the process's business */
	CHECK_EQ_INT(try_read("/app/../app/./main.py", (uid_t)-1, &why, &lines), 0);
}

TEST(never_leaves_the_root)
{
	const char *why;

	REQUIRE(root_fd >= 0);
	/* ".." past the root: refused before any lookup */
	CHECK_EQ_INT(try_read("/../../../etc/passwd", (uid_t)-1, &why, NULL), -EXDEV);
	CHECK(why && strstr(why, "outside"));
	CHECK_EQ_INT(try_read("/app/../../etc/passwd", (uid_t)-1, &why, NULL), -EXDEV);
	/* an absolute symlink to a file outside: looked up inside the root, where it is not */
	CHECK_EQ_INT(try_read("/app/abs_link.py", (uid_t)-1, &why, NULL), -ENOENT);
	CHECK(why && strstr(why, "no such file"));
	/* relative symlinks that climb: stopped at the root */
	CHECK_EQ_INT(try_read("/app/rel_out.py", (uid_t)-1, &why, NULL), -ENOENT);
	CHECK_EQ_INT(try_read("/app/rel_link.py", (uid_t)-1, &why, NULL), -ENOENT);
	/* the host's file by name: the root's (here none) */
	CHECK_EQ_INT(try_read(at(outside, "secret.txt"), (uid_t)-1, &why, NULL), -ENOENT);
	/* /proc's magic links are not followed (and /proc is not in this root anyway) */
	CHECK(try_read("/app/magic.py", (uid_t)-1, &why, NULL) < 0);
	CHECK_EQ_INT(try_read("app/main.py", (uid_t)-1, &why, NULL), -EINVAL);
	CHECK(why && strstr(why, "absolute"));
	CHECK_EQ_INT(try_read("<frozen importlib._bootstrap>", (uid_t)-1, &why, NULL), -EINVAL);
}

TEST(only_regular_files_of_disk_file_systems)
{
	struct source_text t;
	const char *why = NULL;
	int host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), err;

	REQUIRE(root_fd >= 0 && host >= 0);
	alarm(10); /* a FIFO opened for reading would block here */
	CHECK_EQ_INT(try_read("/app/fifo.py", (uid_t)-1, &why, NULL), -EINVAL);
	CHECK(why && strstr(why, "not a regular file"));
	CHECK_EQ_INT(try_read("/app", (uid_t)-1, &why, NULL), -EINVAL);
	alarm(0);
	/* from the host's root: a device, /proc and /sys files */
	err = source_file__read(host, "/dev/zero", (uid_t)-1, &t, &why);
	CHECK_EQ_INT(err, -EINVAL);
	CHECK(why && strstr(why, "not a regular file"));
	err = source_file__read(host, "/proc/self/environ", getuid(), &t, &why);
	CHECK_EQ_INT(err, -EINVAL);
	CHECK(why && strstr(why, "kernel file"));
	err = source_file__read(host, "/proc/self/status", getuid(), &t, &why);
	CHECK_EQ_INT(err, -EINVAL);
	if (!access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK)) {
		err = source_file__read(host, "/sys/kernel/mm/transparent_hugepage/enabled",
					(uid_t)-1, &t, &why);
		CHECK_EQ_INT(err, -EINVAL);
	}
	close(host);
}

TEST(caps_and_contents)
{
	const char *why;
	size_t lines, i;
	char *many;
	int fd;

	REQUIRE(root_fd >= 0);
	/* a 10 GiB sparse file: refused from its size, never read */
	fd = open(at(root, "app/big.py"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	CHECK_EQ_INT(ftruncate(fd, (off_t)10 << 30), 0);
	close(fd);
	CHECK_EQ_INT(try_read("/app/big.py", (uid_t)-1, &why, NULL), -EFBIG);
	CHECK(why && strstr(why, "too big"));
	/* a NUL byte: binary */
	fd = open(at(root, "app/bin.py"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	CHECK_EQ_INT((int)write(fd,
				"\x7f"
				"ELF\0\0\1",
				7),
		     7);
	close(fd);
	CHECK_EQ_INT(try_read("/app/bin.py", (uid_t)-1, &why, NULL), -EINVAL);
	CHECK(why && strstr(why, "binary"));
	/* more lines than the cap, within the size cap */
	many = malloc(SOURCE_FILE_MAX_LINES + 2);
	REQUIRE(many);
	for (i = 0; i < SOURCE_FILE_MAX_LINES + 1; i++)
		many[i] = '\n';
	many[i] = '\0';
	put(at(root, "app/lines.py"), many, 0644);
	free(many);
	CHECK_EQ_INT(try_read("/app/lines.py", (uid_t)-1, &why, NULL), -EFBIG);
	CHECK(why && strstr(why, "too many lines"));
	/* exactly the cap: read */
	truncate(at(root, "app/lines.py"), SOURCE_FILE_MAX_LINES);
	CHECK_EQ_INT(try_read("/app/lines.py", (uid_t)-1, &why, &lines), 0);
	CHECK_EQ_U64(lines, SOURCE_FILE_MAX_LINES);
}

TEST(not_world_readable_only_for_its_owner)
{
	const char *why;

	REQUIRE(root_fd >= 0);
	/* the root's own shadow file (0640): not shown, even though we could read it */
	CHECK_EQ_INT(try_read("/etc/shadow", (uid_t)-1, &why, NULL), -EACCES);
	CHECK(why && strstr(why, "not readable by every user"));
	put(at(root, "app/private.py"), "x = 1\n", 0600);
	CHECK_EQ_INT(try_read("/app/private.py", (uid_t)-1, &why, NULL), -EACCES);
	CHECK_EQ_INT(try_read("/app/private.py", getuid() + 1, &why, NULL), -EACCES);
	/* a process's own private file is shown to its user (not root: root owns /etc/shadow) */
	if (getuid() == 0)
		CHECK_EQ_INT(chown(at(root, "app/private.py"), 1234, 1234), 0);
	CHECK_EQ_INT(try_read("/app/private.py", getuid() ? getuid() : 1234, &why, NULL), 0);
	if (getuid() == 0) { /* root's own 0640 file, for a root process */
		CHECK_EQ_INT(chown(at(root, "etc/shadow"), 0, 0), 0);
		CHECK_EQ_INT(try_read("/etc/shadow", 0, &why, NULL), -EACCES);
	}
}

int main(void)
{
	setup();
	RUN(reads_a_source_file);
	RUN(never_leaves_the_root);
	RUN(only_regular_files_of_disk_file_systems);
	RUN(caps_and_contents);
	RUN(not_world_readable_only_for_its_owner);
	teardown();
	return test_summary();
}
