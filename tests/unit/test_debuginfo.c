/* Tests for src/formats/debuginfo.c on the fixtures of tests/data/dwarf.mk: the file itself,
 * a .build-id tree (also under a container root), debuglinks in the same folder and in .debug/
 * with their CRC, a wrong build id and a wrong CRC rejected, MiniDebugInfo, and debuginfod
 * against an unreachable server (pending, then remembered as missing). Each found debug file
 * is opened with dwarf.h and must name the fixture's functions.
 *
 * With --server (tests/unit/test_debuginfod.sh starts a local debuginfod first and sets
 * DEBUGINFOD_URLS), only the test against that server runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "formats/elf_file.h"
#include "formats/debuginfo.h"
#include "formats/dwarf.h"

/* dw_entry's address in dwarf_inline (the stripped copies share its layout). */
static uint64_t dw_entry_addr(void)
{
	char cmd[1024];
	unsigned long long a = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"dw_entry\" {print $1}'",
		 test_fixture("dwarf_inline"));
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%llx", &a) != 1)
			a = 0;
		pclose(p);
	}
	return a;
}

/* The debug file found must name dw_entry, with a source line when it has DWARF. */
static void check_names_dw_entry(const struct debuginfo_result *res, bool want_line)
{
	struct dwarf_file *df;
	const struct dwarf_line *l;
	uint64_t addr = dw_entry_addr();
	int cnt;

	REQUIRE(addr);
	df = res->image ? dwarf_file__open_mem(res->image, res->image_sz, NULL)
			: dwarf_file__open_fd(res->fd, res->path, NULL);
	REQUIRE(df);
	cnt = dwarf_file__lookup(df, addr, &l);
	REQUIRE(cnt >= 1);
	CHECK_STR(l[cnt - 1].function, "dw_entry");
	if (want_line)
		CHECK(l[0].file && l[0].line > 0);
	dwarf_file__free(df);
}

/* A finder without the system dirs, looking in dir too when not NULL; ends the test if it
 * cannot be made.
 */
static struct debuginfo *new_finder(const char *dir)
{
	static const char *dirs[1];
	struct debuginfo_opts opts = { .no_system_dirs = true };
	struct debuginfo *di;

	if (dir) {
		dirs[0] = dir;
		opts.debug_dirs = dirs;
		opts.debug_dir_cnt = 1;
	}
	di = debuginfo__new(&opts);
	REQUIRE(di);
	return di;
}

/* The debug info of the fixture named fixture (no container root) into res: ends the test
 * unless it is found, and checks that it came from source.
 */
static void find_fixture(struct debuginfo *di, const char *fixture, enum debuginfo_source source,
			 struct debuginfo_result *res)
{
	REQUIRE(!debuginfo__find(di, test_fixture(fixture), NULL, res));
	CHECK_EQ_INT(res->source, source);
}

TEST(self)
{
	struct debuginfo *di = new_finder(NULL);
	struct debuginfo_result res;

	find_fixture(di, "dwarf_inline", DEBUGINFO_SELF, &res);
	CHECK_STR(res.path, test_fixture("dwarf_inline"));
	debuginfo_result__release(&res);
	debuginfo__free(di);
}

TEST(build_id_tree)
{
	struct debuginfo *di = new_finder(test_fixture("dwarf_debugroot"));
	struct debuginfo_result res;
	struct debuginfo_stats st;

	find_fixture(di, "dwarf_stripped", DEBUGINFO_BUILD_ID, &res);
	CHECK(strstr(res.path, "/.build-id/"));
	check_names_dw_entry(&res, true);
	debuginfo_result__release(&res);
	debuginfo__stats(di, &st);
	CHECK_EQ_U64(st.found[DEBUGINFO_BUILD_ID], 1);
	debuginfo__free(di);

	/* without the tree: nothing */
	di = new_finder(NULL);
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res), -ENOENT);
	debuginfo__free(di);
}

/* A container root: <root>/usr/lib/debug/.build-id/... is found with the system dirs on; a
 * symlink inside the root that leads out of it (to the same tree on the host) is not followed.
 */
TEST(build_id_under_root)
{
	char root[] = "/tmp/test_debuginfo_XXXXXX", dir[600], cmd[2048], target[600];
	struct debuginfo_opts opts = { 0 };
	struct debuginfo_result res;
	struct debuginfo *di;
	char build_id[2 * ELF_BUILD_ID_MAX + 1];
	struct elf_file *ef;

	REQUIRE(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/usr/lib/debug", root);
	REQUIRE(realpath(test_fixture("dwarf_debugroot"), target));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && ln -s %s/.build-id %s/.build-id", dir, target,
		 dir);
	REQUIRE(!system(cmd));
	di = debuginfo__new(&opts);
	REQUIRE(di);
	/* the link's absolute target is resolved inside root, where it does not exist */
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), root, &res), -ENOENT);

	snprintf(cmd, sizeof(cmd), "rm %s/.build-id && cp -r %s/.build-id %s/", dir, target, dir);
	REQUIRE(!system(cmd));
	REQUIRE(!debuginfo__find(di, test_fixture("dwarf_stripped"), root, &res));
	CHECK_EQ_INT(res.source, DEBUGINFO_BUILD_ID);
	CHECK(!strncmp(res.path, root, strlen(root)));
	CHECK(res.fd >= 0);
	debuginfo_result__release(&res);

	/* by build id alone */
	ef = elf_file__open(test_fixture("dwarf_stripped"));
	REQUIRE(ef);
	REQUIRE(elf_file__build_id_hex(ef, build_id, sizeof(build_id)) == 0);
	elf_file__free(ef);
	REQUIRE(!debuginfo__find_build_id(di, build_id, root, &res));
	CHECK_EQ_INT(res.source, DEBUGINFO_BUILD_ID);
	check_names_dw_entry(&res, true);
	debuginfo_result__release(&res);
	CHECK_EQ_INT(debuginfo__find_build_id(di, "00112233445566778899", root, &res), -ENOENT);
	debuginfo__free(di);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(!system(cmd));
}

TEST(debuglink_same_dir_and_subdir)
{
	struct debuginfo *di = new_finder(NULL);
	struct debuginfo_result res;

	find_fixture(di, "dwarf_linked", DEBUGINFO_DEBUGLINK, &res);
	CHECK_STR(res.path, test_fixture("dwarf_linked.debug"));
	check_names_dw_entry(&res, true);
	debuginfo_result__release(&res);

	find_fixture(di, "dwarf_linked_sub", DEBUGINFO_DEBUGLINK, &res);
	CHECK(strstr(res.path, "/.debug/dwarf_linked_sub.debug"));
	debuginfo_result__release(&res);
	debuginfo__free(di);
}

TEST(debuglink_crc)
{
	struct debuginfo *di = new_finder(NULL);
	struct debuginfo_result res;
	struct debuginfo_stats st;
	struct elf_file *ef;
	const char *name;
	uint32_t link_crc, file_crc;

	/* the CRC we compute is the one objcopy wrote */
	ef = elf_file__open(test_fixture("dwarf_linked"));
	REQUIRE(ef);
	REQUIRE(!elf_file__debuglink(ef, &name, &link_crc));
	REQUIRE(!debuginfo__file_crc(test_fixture("dwarf_linked.debug"), &file_crc));
	CHECK_EQ_U64(file_crc, link_crc);
	elf_file__free(ef);

	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_badcrc"), NULL, &res), -ENOENT);
	debuginfo__stats(di, &st);
	CHECK_EQ_U64(st.crc_mismatch, 1);
	debuginfo__free(di);
}

TEST(wrong_build_id_rejected)
{
	struct debuginfo *di = new_finder(test_fixture("dwarf_wrongroot"));
	struct debuginfo_result res;
	struct debuginfo_stats st;

	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_wrongid"), NULL, &res), -ENOENT);
	debuginfo__stats(di, &st);
	CHECK(st.build_id_mismatch >= 1);
	CHECK_EQ_U64(st.not_found, 1);
	debuginfo__free(di);
}

TEST(minidebuginfo)
{
	struct debuginfo *di = new_finder(NULL);
	struct debuginfo_result res;

	find_fixture(di, "dwarf_mini", DEBUGINFO_MINIDEBUGINFO, &res);
	REQUIRE(res.image && res.image_sz > 64);
	CHECK(!memcmp(res.image, "\177ELF", 4));
	check_names_dw_entry(&res, false);
	debuginfo_result__release(&res);
	debuginfo__free(di);
}

TEST(bad_input)
{
	struct debuginfo *di = new_finder(NULL);
	struct debuginfo_result res;

	CHECK_EQ_INT(debuginfo__find(di, "/nonexistent/file", NULL, &res), -ENOENT);
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("elf_bad_magic"), NULL, &res), -ENOEXEC);
	debuginfo__free(di);
	debuginfo__free(NULL);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An unreachable server: the lookup returns "pending" at once, the worker fails, and the miss
 * is then answered from the negative cache without asking again.
 */
TEST(debuginfod_unreachable_is_pending_then_negative)
{
	struct debuginfo_opts opts = { .no_system_dirs = true, .debuginfod = true };
	char cache[] = "/tmp/test_debuginfo_cache_XXXXXX", cmd[600];
	struct debuginfo_result res;
	struct debuginfo_stats st;
	struct debuginfo *di;
	uint64_t t0;

	REQUIRE(mkdtemp(cache));
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	di = debuginfo__new(&opts);
	REQUIRE(di);
	t0 = mono_ms();
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res), -EAGAIN);
	CHECK(mono_ms() - t0 < 100);
	CHECK_EQ_INT(debuginfo__wait(di, 20000), 0);
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res), -ENOENT);
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res), -ENOENT);
	debuginfo__stats(di, &st);
	CHECK_EQ_U64(st.debuginfod_queries, 1);
	CHECK_EQ_U64(st.debuginfod_failed, 1);
	CHECK_EQ_U64(st.negative_hits, 2);
	debuginfo__free(di);
	unsetenv("DEBUGINFOD_URLS");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache);
	CHECK(!system(cmd));
}

/* Run by tests/unit/test_debuginfod.sh with a local server serving dwarf_debuginfod/. */
TEST(debuginfod_server)
{
	struct debuginfo_opts opts = { .no_system_dirs = true, .debuginfod = true };
	struct debuginfo_result res;
	struct debuginfo *di = debuginfo__new(&opts);
	int err;

	REQUIRE(di);
	CHECK_EQ_INT(debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res), -EAGAIN);
	CHECK_EQ_INT(debuginfo__wait(di, 60000), 0);
	err = debuginfo__find(di, test_fixture("dwarf_stripped"), NULL, &res);
	CHECK_EQ_INT(err, 0);
	if (!err) {
		CHECK_EQ_INT(res.source, DEBUGINFO_DEBUGINFOD);
		check_names_dw_entry(&res, true);
	}
	debuginfo__free(di);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--server")) {
		RUN(debuginfod_server);
		return test_summary();
	}
	unsetenv("DEBUGINFOD_URLS");
	RUN(self);
	RUN(build_id_tree);
	RUN(build_id_under_root);
	RUN(debuglink_same_dir_and_subdir);
	RUN(debuglink_crc);
	RUN(wrong_build_id_rejected);
	RUN(minidebuginfo);
	RUN(bad_input);
	RUN(debuginfod_unreachable_is_pending_then_negative);
	return test_summary();
}
