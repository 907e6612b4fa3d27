/* base/file_map.c: a guarded mapping of a file that shrinks reads zeros past the new end
 * instead of killing the process with SIGBUS, and says so; SIGBUS elsewhere still kills.
 * elf_file.c on a truncated library survives every accessor.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file_map.h"
#include "formats/elf_file.h"
#include "formats/elf_symbols.h"
#include "test.h"

static int temp_file(size_t n, char *path, size_t cap)
{
	uint8_t buf[4096];
	int fd;

	snprintf(path, cap, "/tmp/stackscope-filemap.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	memset(buf, 0xab, sizeof(buf));
	for (size_t off = 0; off < n; off += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return -1;
	return fd;
}

TEST(truncated_reads_zeros)
{
	char path[64];
	int fd = temp_file(64 * 1024, path, sizeof(path));
	const volatile uint8_t *p;
	uint64_t faults = file_map__fault_cnt();

	REQUIRE(fd >= 0);
	unlink(path);
	p = file_map__open(fd, 64 * 1024);
	REQUIRE(p);
	CHECK_EQ_INT(p[40000], 0xab);
	CHECK(!file_map__changed((const void *)p));
	madvise((void *)p, 64 * 1024, MADV_DONTNEED);
	REQUIRE(!ftruncate(fd, 4096));
	CHECK_EQ_INT(p[100], 0xab); /* before the new end: still the file */
	CHECK_EQ_INT(p[40000], 0);  /* past it: zeros, not SIGBUS */
	CHECK_EQ_INT(p[65535], 0);
	CHECK(file_map__changed((const void *)p));
	CHECK(file_map__fault_cnt() >= faults + 2);
	CHECK_EQ_INT(file_map__open_cnt(), 1);
	file_map__close((const void *)p, 64 * 1024);
	CHECK_EQ_INT(file_map__open_cnt(), 0);
	close(fd);
}

TEST(unguarded_sigbus_still_kills)
{
	char path[64];
	int fd = temp_file(16384, path, sizeof(path)), status = 0;
	const void *guard;
	pid_t pid;

	REQUIRE(fd >= 0);
	unlink(path);
	guard = file_map__open(fd, 4096); /* installs the handler */
	REQUIRE(guard);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		volatile uint8_t *q = mmap(NULL, 16384, PROT_READ, MAP_PRIVATE, fd, 0);

		if (q == MAP_FAILED || ftruncate(fd, 0))
			_exit(2);
		(void)q[8192];
		_exit(0);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
#ifdef __SANITIZE_ADDRESS__
	/* ASan's SIGBUS handler was there first: it reports and ends the process */
	CHECK(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
#else
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
#endif
	file_map__close(guard, 4096);
	close(fd);
}

TEST(elf_file_of_truncated_library)
{
	const char *src = test_fixture("elf_pie");
	char path[] = "/tmp/stackscope-elftrunc.XXXXXX";
	struct elf_section sec;
	struct elf_symbols *syms;
	struct elf_file *ef;
	uint8_t buf[65536];
	ssize_t n;
	int in, out;
	size_t i;

	in = open(src, O_RDONLY);
	out = mkstemp(path);
	REQUIRE(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		REQUIRE(write(out, buf, n) == n);
	close(in);
	ef = elf_file__open(path);
	REQUIRE(ef);
	CHECK(!elf_file__changed(ef));
	elf_file__drop_pages(ef);
	REQUIRE(!ftruncate(out, 64)); /* only the ELF header's first bytes stay */
	/* Every accessor on the shrunk image: no crash, answers from zeros or errors. */
	for (i = 0; i < elf_file__section_cnt(ef); i++)
		elf_file__section_at(ef, i, &sec, NULL, NULL);
	elf_file__section(ef, ".text", &sec);
	syms = elf_symbols__load(ef);
	if (syms)
		elf_symbols__lookup(syms, 0x1000, NULL);
	elf_symbols__free(syms);
	CHECK(elf_file__changed(ef));
	elf_file__free(ef);
	unlink(path);
	close(out);
}

int main(void)
{
	RUN(truncated_reads_zeros);
	RUN(unguarded_sigbus_still_kills);
	RUN(elf_file_of_truncated_library);
	return test_summary();
}
