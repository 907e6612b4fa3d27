/* CPython line tables (src/interp/python/python_lines.c) against the interpreters themselves: every
 * instruction of a few stdlib modules, per installed version, must get the line that
 * dis.findlinestarts() / co_lines() give (tests/data/py_lines_dump.py prints them), also for
 * the interpreters of the runtime matrix's Debian roots (scripts/runtime_root.sh; run there with
 * chroot: as root only, and a root not built here is a skip), each through the one-shot decoder
 * and through the index the profiler keeps per code object. Plus hand-made tables for the
 * edges, hostile ones (huge, lines overflowing int) and random bytes that must never be read
 * out of bounds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp/python/python_lines.h"
#include "random_buffers.h"
#include "test.h"

#define DUMP_SCRIPT "tests/data/py_lines_dump.py"

struct run_result {
	size_t codes, insns, mismatches;
	int major, minor;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* One "C first hex lines..." record; returns mismatches, or -1 if malformed. */
static long check_code(char *line, enum python_line_format fmt, size_t *insns)
{
	char *save = NULL, *first = strtok_r(line + 2, " \n", &save);
	char *hex = strtok_r(NULL, " \n", &save), *tok;
	struct python_line_index ix;
	uint8_t *tab;
	size_t n = 0, i, len;
	long bad = 0;
	uint32_t off = 0;

	if (!first || !hex)
		return -1;
	len = strcmp(hex, "-") ? strlen(hex) / 2 : 0;
	tab = malloc(len ? len : 1);
	if (!tab)
		return -1;
	for (i = 0; i < len; i++)
		tab[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
	if (python_lines__index(fmt, tab, len, atoi(first), 1u << 20, &ix)) {
		free(tab);
		return -1;
	}
	while ((tok = strtok_r(NULL, " \n", &save))) {
		int want = atoi(tok), got = python_lines__line(fmt, tab, len, atoi(first), off);
		int indexed = python_lines__lookup(&ix, off);

		if ((got != want || indexed != want) && bad++ < 3)
			printf("  first line %s, offset %u: got %d (index %d), interpreter says %d\n",
			       first, off, got, indexed, want);
		off += 2;
		n++;
	}
	*insns += n;
	python_lines__index_free(&ix);
	free(tab);
	return bad;
}

/* Runs cmd (an interpreter reading DUMP_SCRIPT) and checks what it prints into r. */
static int run_dump(const char *cmd, struct run_result *r)
{
	char *line = NULL;
	size_t cap = 0;
	enum python_line_format fmt = PYTHON_LINES_LOCATIONS;
	FILE *f;
	int status;

	memset(r, 0, sizeof(*r));
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		long bad;

		if (line[0] == 'V') {
			sscanf(line, "V %d %d", &r->major, &r->minor);
			fmt = r->minor <= 9    ? PYTHON_LINES_LNOTAB
			      : r->minor == 10 ? PYTHON_LINES_LINETABLE
					       : PYTHON_LINES_LOCATIONS;
			continue;
		}
		if (line[0] != 'C')
			continue;
		bad = check_code(line, fmt, &r->insns);
		r->codes++;
		r->mismatches += bad < 0 ? 1 : (size_t)bad;
	}
	free(line);
	status = pclose(f);
	return status == 0 && r->major == 3 ? 0 : -1;
}

static int run_python(const char *python, struct run_result *r)
{
	char cmd[512];

	memset(r, 0, sizeof(*r));
	if (access(python, X_OK))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s", python, DUMP_SCRIPT);
	return run_dump(cmd, r);
}

static void check_result(const char *python, const struct run_result *r)
{
	printf("  %s: %zu code objects, %zu instructions, %zu mismatches\n", python, r->codes,
	       r->insns, r->mismatches);
	CHECK(r->insns > 5000);
	CHECK_EQ_INT(r->mismatches, 0);
}

/* pyenv is not among what scripts/setup.sh installs: a missing version is a plain skip. */
static void check_pyenv(int minor)
{
	struct run_result r;
	char python[512];

	if (test_pyenv_python(minor, python, sizeof(python)))
		SKIP("no pyenv python 3.%d", minor);
	REQUIRE(run_python(python, &r) == 0);
	CHECK_EQ_INT(r.minor, minor);
	check_result(python, &r);
}

TEST_PYENV(check_pyenv)

/* Debian's python3 (whatever its minor version): scripts/setup.sh installs it. */
TEST(debian_python3)
{
	struct run_result r;

	if (access("/usr/bin/python3", X_OK))
		SKIP_SETUP("no /usr/bin/python3");
	REQUIRE(run_python("/usr/bin/python3", &r) == 0);
	check_result("/usr/bin/python3", &r);
}

/* SUITE's python3.MINOR in the runtime matrix's root (RM_CACHE as scripts/runtime_root.sh has
 * it), the script on its stdin: nothing is written into the root.
 */
static void check_root(const char *suite, int minor)
{
	const char *cache = getenv("RM_CACHE");
	char root[512], python[600], cmd[1400];
	struct run_result r;

	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite);
	snprintf(python, sizeof(python), "%s/usr/bin/python3.%d", root, minor);
	if (access(python, X_OK))
		SKIP("no %s root here (scripts/runtime_root.sh %s)", suite, suite);
	if (geteuid())
		SKIP("%s's python3.%d runs under chroot: root only", suite, minor);
	snprintf(cmd, sizeof(cmd), "chroot %s /usr/bin/python3.%d -B - < %s", root, minor,
		 DUMP_SCRIPT);
	REQUIRE(run_dump(cmd, &r) == 0);
	CHECK_EQ_INT(r.minor, minor);
	check_result(python, &r);
}

TEST(bullseye_python39)
{
	check_root("bullseye", 9);
}

TEST(trixie_python313)
{
	check_root("trixie", 13);
}

TEST(sid_python314)
{
	check_root("sid", 14);
}

TEST(edges)
{
	/* 3.8 lnotab: +2 bytes line+1, +4 bytes line-2 (signed) */
	static const uint8_t lnotab[] = { 2, 1, 4, 0xfe };
	/* 3.10: [0,2) line+1, empty range line+3, [2,6) no line, [6,8) line+0 */
	static const uint8_t lt310[] = { 2, 1, 0, 3, 4, 0x80, 2, 0 };
	/* 3.11: short form 1 unit (same line); no-column form line +2 for 2 units; none 1 unit;
	 * one-line form +1 for 1 unit
	 */
	static const uint8_t loc[] = { 0x80, 0x05, 0xe9, 0x04, 0xf8, 0xd8, 0x01, 0x02 };

	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 4, 10, 0), 10);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 4, 10, 2), 11);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 4, 10, 6), 9);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 4, 10, UINT32_MAX), 10);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LINETABLE, lt310, 8, 10, 0), 11);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LINETABLE, lt310, 8, 10, 2), -1);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LINETABLE, lt310, 8, 10, 6), 14);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LINETABLE, lt310, 8, 10, 8), -1);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 0), 10);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 2), 12);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 4), 12);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 6), -1);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 8), 13);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 8, 10, 10), -1);
	/* truncated varint, empty and NULL tables */
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, 3, 10, 8), -1);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, NULL, 0, 7, 4), 7);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LINETABLE, NULL, 5, 7, 4), -1);
}

/* Every offset of tab (and past it) answers the same through the index as one-shot. */
static size_t index_mismatches(enum python_line_format fmt, const uint8_t *tab, size_t len,
			       int first, uint32_t upto)
{
	struct python_line_index ix;
	size_t bad = 0;
	uint32_t off;

	if (python_lines__index(fmt, tab, len, first, 1u << 20, &ix))
		return SIZE_MAX;
	for (off = 0; off < upto; off++)
		bad += python_lines__lookup(&ix, off) !=
		       python_lines__line(fmt, tab, len, first, off);
	bad += python_lines__lookup(&ix, UINT32_MAX) != first;
	python_lines__index_free(&ix);
	return bad;
}

TEST(edges_indexed)
{
	static const uint8_t lnotab[] = { 2, 1, 4, 0xfe, 0, 3, 6, 0 };
	static const uint8_t lt310[] = { 2, 1, 0, 3, 4, 0x80, 2, 0 };
	static const uint8_t loc[] = { 0x80, 0x05, 0xe9, 0x04, 0xf8, 0xd8, 0x01, 0x02 };

	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LNOTAB, lnotab, sizeof(lnotab), 10, 40), 0);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LINETABLE, lt310, sizeof(lt310), 10, 40), 0);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LOCATIONS, loc, sizeof(loc), 10, 40), 0);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LOCATIONS, loc, 3, 10, 40), 0);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LNOTAB, NULL, 0, 7, 40), 0);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LINETABLE, NULL, 0, 7, 40), 0);
}

/* Line deltas read from another process that would overflow int (UBSan's abort before): the
 * table ends there as corrupt, the lines before it stand.
 */
TEST(line_overflow)
{
	/* 3.8: +2 bytes line+127, again: past INT_MAX from INT_MAX - 200 */
	static const uint8_t lnotab[] = { 2, 127, 2, 127, 2, 127 };
	/* 3.11: no-column form, line delta +2^27 (varint) each, 2 units */
	static const uint8_t loc[] = { 0xe9, 0x40, 0x40, 0x40, 0x40, 0x08,
				       0xe9, 0x40, 0x40, 0x40, 0x40, 0x08 };
	int near = 2147483647 - 200;

	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 6, near, 0), near);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 6, near, 2), near + 127);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LNOTAB, lnotab, 6, near, 5), near + 127);
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LNOTAB, lnotab, 6, near, 16), 0);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, sizeof(loc), near, 0), -1);
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, sizeof(loc), 5, 0),
		     5 + (1 << 26));
	CHECK_EQ_INT(python_lines__line(PYTHON_LINES_LOCATIONS, loc, sizeof(loc), 5, 4),
		     5 + (1 << 27));
	CHECK_EQ_INT(index_mismatches(PYTHON_LINES_LOCATIONS, loc, sizeof(loc), near, 16), 0);
}

/* A hostile table: 1 MiB of one-unit entries alternating lines (3.11). The index holds at most
 * what it is allowed, says it was truncated, and the offsets it covers are exact.
 */
TEST(huge_table_bounded)
{
	size_t len = 1u << 20, i;
	uint8_t *tab = malloc(len);
	struct python_line_index ix;

	REQUIRE(tab);
	for (i = 0; i < len; i++) /* one unit each: line + 1 (one-line form), no location */
		tab[i] = (i & 1) ? 0xf8 : 0xd8;
	REQUIRE(python_lines__index(PYTHON_LINES_LOCATIONS, tab, len, 1, 1000, &ix) == 0);
	CHECK(ix.truncated);
	CHECK_EQ_INT(ix.n, 1000);
	CHECK_EQ_INT(python_lines__index_bytes(&ix), 8000);
	CHECK_EQ_INT(python_lines__lookup(&ix, 0), 2);
	CHECK_EQ_INT(python_lines__lookup(&ix, 2), -1);
	CHECK_EQ_INT(python_lines__lookup(&ix, 4), 3);
	CHECK_EQ_INT(python_lines__lookup(&ix, 1998), -1);
	CHECK_EQ_INT(python_lines__lookup(&ix, 2000), -1); /* past what it holds */
	python_lines__index_free(&ix);
	free(tab);
}

static void decode_random(const uint8_t *tab, size_t len, unsigned int i, unsigned int *seed)
{
	enum python_line_format fmt = (enum python_line_format)(i % 3);
	struct python_line_index ix;
	uint32_t off = (uint32_t)(rand_r(seed) % 512);

	python_lines__line(fmt, tab, len, 1, off);
	if (python_lines__index(fmt, tab, len, 1, 64, &ix))
		return;
	python_lines__lookup(&ix, off);
	python_lines__index_free(&ix);
}

/* Random tables of every format: the decoders stay inside the buffer (ASan build). */
TEST(random_tables)
{
	test_random_buffers(12345, 20000, 64, decode_random);
	CHECK(1);
}

/* Random tables: the index answers every offset as the one-shot decoder. */
TEST(random_tables_indexed)
{
	unsigned int seed = 777, t;
	uint8_t tab[48];
	size_t bad = 0, i;

	for (t = 0; t < 3000; t++) {
		for (i = 0; i < sizeof(tab); i++)
			tab[i] = (uint8_t)rand_r(&seed);
		bad += index_mismatches((enum python_line_format)(t % 3), tab, sizeof(tab),
					(int)(rand_r(&seed) % 1000), 512);
	}
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	RUN_PYENV();
	RUN(debian_python3);
	RUN(bullseye_python39);
	RUN(trixie_python313);
	RUN(sid_python314);
	RUN(edges);
	RUN(edges_indexed);
	RUN(line_overflow);
	RUN(huge_table_bounded);
	RUN(random_tables);
	RUN(random_tables_indexed);
	return test_summary();
}
