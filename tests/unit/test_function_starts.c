/* Function extents from .eh_frame (src/symbolize/function_starts.c) and how file_symbols names
 * what no symbol covers, on fixtures built from tests/data/dwarf_inline.c: the stripped copy
 * (no symbol for its static function) and the MiniDebugInfo copy (symbols in .gnu_debugdata).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "formats/elf_file.h"
#include "proc/executable.h"
#include "symbolize/file_symbols.h"
#include "symbolize/function_starts.h"
#include "test.h"

static struct executable *fixture_exe(struct exe_registry *reg, const char *name)
{
	static char path[4][PATH_MAX];
	static int next;
	char *p = path[next++ % 4];
	struct proc_map m = { .start = 0x1000, .end = 0x2000 };
	struct stat st;

	if (!realpath(test_fixture(name), p) || stat(p, &st))
		return NULL;
	m.ino = st.st_ino;
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	m.path = p;
	return exe_registry__get(reg, getpid(), &m);
}

/* Every pc inside a function gives that function's start; a pc in no FDE gives -ENOENT. */
TEST(every_pc_gives_its_function_start)
{
	const char *names[] = { "dw_entry", "dw_static", "main" };
	struct elf_file *ef = elf_file__open(test_fixture("dwarf_stripped"));
	struct function_starts *fs;
	uint64_t start = 0;
	size_t i;

	REQUIRE(ef); /* run 'make fixtures' */
	fs = function_starts__load(ef);
	REQUIRE(fs);
	CHECK(function_starts__cnt(fs) >= 3);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* the unstripped build has the same layout and says where each one starts */
		uint64_t sym = test_nm_addr(test_fixture("dwarf_inline"), names[i]);

		REQUIRE(sym);
		CHECK_EQ_INT(function_starts__lookup(fs, sym, &start), 0);
		CHECK_EQ_U64(start, sym);
		start = 0;
		CHECK_EQ_INT(function_starts__lookup(fs, sym + 5, &start), 0);
		CHECK_EQ_U64(start, sym);
	}
	CHECK_EQ_INT(function_starts__lookup(fs, 0x10, &start), -ENOENT);
	CHECK_EQ_INT(function_starts__lookup(NULL, 0x10, &start), -ENOENT);
	function_starts__free(fs);
	elf_file__free(ef);
}

/* A file without .eh_frame has no extents (ENOENT), and freeing NULL is a no-op. */
TEST(no_eh_frame)
{
	struct elf_file *ef;
	char path[] = "/tmp/ss_fstarts_XXXXXX";
	char cmd[PATH_MAX + 128];
	int fd = mkstemp(path);

	REQUIRE(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr %s %s",
		 test_fixture("dwarf_stripped"), path);
	REQUIRE(system(cmd) == 0);
	ef = elf_file__open(path);
	REQUIRE(ef);
	errno = 0;
	CHECK(!function_starts__load(ef));
	CHECK_EQ_INT(errno, ENOENT);
	function_starts__free(NULL);
	elf_file__free(ef);
	unlink(path);
}

/* The stripped file: no symbol covers dw_static, its FDE does. The MiniDebugInfo file: the
 * symbol comes from .gnu_debugdata.
 */
TEST(file_symbols_fall_back)
{
	struct exe_registry *reg = exe_registry__new(NULL);
	struct file_symbols *fs = file_symbols__new(0);
	struct executable *stripped, *mini;
	uint64_t sym, start = 0, off = 99;
	const char *name;

	REQUIRE(reg && fs);
	stripped = fixture_exe(reg, "dwarf_stripped");
	mini = fixture_exe(reg, "dwarf_mini");
	REQUIRE(stripped && mini);
	sym = test_nm_addr(test_fixture("dwarf_inline"), "dw_static");
	REQUIRE(sym);
	CHECK(!file_symbols__symbol(fs, stripped, sym + 4, NULL));
	CHECK_EQ_INT(file_symbols__function_start(fs, stripped, sym + 4, &start), 0);
	CHECK_EQ_U64(start, sym);
	name = file_symbols__symbol(fs, mini, sym + 4, &off);
	REQUIRE(name);
	CHECK_STR(name, "dw_static");
	CHECK_EQ_U64(off, 4);
	file_symbols__free(fs);
	exe_registry__free(reg);
}

int main(void)
{
	RUN(every_pc_gives_its_function_start);
	RUN(no_eh_frame);
	RUN(file_symbols_fall_back);
	return test_summary();
}
