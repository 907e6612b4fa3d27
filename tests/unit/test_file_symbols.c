/* The per-file symbolization state (src/symbolize/file_symbols.c) over fixture files in the
 * executable registry: symbols and their copied names, DWARF lines through debuginfo, Go lines,
 * the vDSO's "no debug info", and the table's cap and forget (state read again afterwards).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "formats/debuginfo.h"
#include "formats/dwarf.h"
#include "formats/gopclntab.h"
#include "proc/executable.h"
#include "symbolize/file_symbols.h"
#include "test.h"

/* The registry's executable for fixture NAME (opened by its absolute path). */
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

TEST(symbols_and_copies)
{
	struct exe_registry *reg = exe_registry__new(NULL);
	struct file_symbols *fs = file_symbols__new(0);
	struct executable *pie;
	const char *a, *b;
	uint64_t alpha, off = 99;
	struct go_frame gf[4];

	REQUIRE(reg && fs);
	pie = fixture_exe(reg, "elf_pie");
	REQUIRE(pie); /* run 'make fixtures' */
	alpha = test_nm_addr(test_fixture("elf_pie"), "ss_alpha");
	REQUIRE(alpha);
	a = file_symbols__symbol(fs, pie, alpha + 3, &off);
	REQUIRE(a);
	CHECK_STR(a, "ss_alpha");
	CHECK_EQ_U64(off, 3);
	/* the name was copied the first time: the same copy every time after */
	b = file_symbols__symbol(fs, pie, alpha, NULL);
	CHECK(a == b);
	CHECK(!file_symbols__symbol(fs, pie, 0x10, NULL));
	CHECK_EQ_INT(file_symbols__go_lines(fs, pie, alpha, gf, 4), -ENOENT);
	file_symbols__free(fs);
	exe_registry__free(reg);
}

/* With room for one file, two files asked for in turn push each other out: each answer is
 * still right (read again), and a forgotten file reads again too.
 */
TEST(cap_and_forget)
{
	struct exe_registry *reg = exe_registry__new(NULL);
	struct file_symbols *fs = file_symbols__new(1);
	struct executable *pie, *inl;
	uint64_t alpha, entry;
	int i;

	REQUIRE(reg && fs);
	pie = fixture_exe(reg, "elf_pie");
	inl = fixture_exe(reg, "dwarf_inline");
	REQUIRE(pie && inl && pie != inl);
	alpha = test_nm_addr(test_fixture("elf_pie"), "ss_alpha");
	entry = test_nm_addr(test_fixture("dwarf_inline"), "dw_entry");
	REQUIRE(alpha && entry);
	for (i = 0; i < 4; i++) {
		const char *name = file_symbols__symbol(fs, pie, alpha, NULL);

		/* (a name is valid until the next call: checked before it) */
		CHECK_STR(name ? name : "(null)", "ss_alpha");
		name = file_symbols__symbol(fs, inl, entry, NULL);
		CHECK_STR(name ? name : "(null)", "dw_entry");
	}
	file_symbols__forget(fs, inl->file_id);
	file_symbols__forget(fs, inl->file_id); /* no state: nothing */
	CHECK_STR(file_symbols__symbol(fs, inl, entry, NULL), "dw_entry");
	file_symbols__free(fs);
	exe_registry__free(reg);
}

TEST(dwarf_lines)
{
	struct debuginfo_opts dopts = { .no_system_dirs = true };
	struct exe_registry *reg = exe_registry__new(NULL);
	struct file_symbols *fs = file_symbols__new(0);
	struct debuginfo *di = debuginfo__new(&dopts);
	struct proc_map vdso = { .path = "[vdso]" };
	const struct dwarf_line *dl = NULL;
	struct executable *inl, *v;
	uint64_t entry;
	int n;

	REQUIRE(reg && fs && di);
	inl = fixture_exe(reg, "dwarf_inline");
	entry = test_nm_addr(test_fixture("dwarf_inline"), "dw_entry");
	REQUIRE(inl && entry);
	n = file_symbols__dwarf_lines(fs, inl, di, entry, &dl);
	REQUIRE(n >= 1);
	CHECK_STR(dl[n - 1].function, "dw_entry");
	CHECK(dl[n - 1].file && strstr(dl[n - 1].file, "dwarf_inline.c"));
	CHECK(dl[n - 1].line > 0);
	v = exe_registry__get(reg, getpid(), &vdso);
	if (v) /* the vDSO has no debug file to look for */
		CHECK_EQ_INT(file_symbols__dwarf_lines(fs, v, di, v->text_start, &dl), -ENOENT);
	file_symbols__free(fs);
	debuginfo__free(di);
	exe_registry__free(reg);
}

/* A Go executable's functions have lines from .gopclntab. */
TEST(go_lines)
{
	struct exe_registry *reg = exe_registry__new(NULL);
	struct file_symbols *fs = file_symbols__new(0);
	struct executable *go;
	struct go_frame gf[GO_MAX_FRAMES];
	uint64_t addr;
	int n = -ENOENT;

	REQUIRE(reg && fs);
	if (access(test_fixture("wl_go"), R_OK)) {
		file_symbols__free(fs);
		exe_registry__free(reg);
		SKIP_SETUP("no Go fixtures (golang-go missing?)");
	}
	go = fixture_exe(reg, "wl_go");
	REQUIRE(go);
	for (addr = go->text_start; addr < go->text_end && n < 1; addr += 64)
		n = file_symbols__go_lines(fs, go, addr, gf, GO_MAX_FRAMES);
	REQUIRE(n >= 1);
	CHECK(gf[n - 1].function && gf[n - 1].function[0]);
	file_symbols__free(fs);
	exe_registry__free(reg);
}

int main(void)
{
	RUN(symbols_and_copies);
	RUN(cap_and_forget);
	RUN(dwarf_lines);
	RUN(go_lines);
	return test_summary();
}
