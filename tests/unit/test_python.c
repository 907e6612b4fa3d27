/* The CPython runtime (src/interp/python/) through the runtime registry (src/interp/interp.h), against real
 * interpreters started by the test: tests/data/py_introspect.py reports the address of some of
 * its code objects (id()), its frames' byte offsets and lines, then waits in a Python function
 * on stdin. The test finds the process's mappings (proc/process.c, no eBPF), gives every
 * mapped file to interp_registry__file_loaded() (detection: symbols, version, layout; 3.13's
 * and 3.14's _Py_DebugOffsets), the process to interp_registry__process_scanned() (the layout
 * check against the live interpreter list, thread states, TSD slot and newest frame), then
 * symbolizes each reported frame as eBPF would send it (code address, byte offset, cookie) and
 * compares function, file and line with what the interpreter said. Reading another process of
 * the same user that is our child needs no root.
 *
 * pyenv's interpreters (3.6-3.13, and 2.7 for the unsupported path) are not installed by
 * scripts/setup.sh: a missing one is a skip. Debian's python3 is: missing under CI fails.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "child.h"
#include "process_main.h" /* reg, pt */
#include "test.h"

#define SCRIPT "tests/data/py_introspect.py"
#define MAX_CODES 16

struct reported {
	uint64_t code;
	uint32_t cookie, offset;
	int line;
	char file[512], name[256];
};

/* A running tests/data/py_introspect.py and what it reported. */
struct child {
	struct test_child proc;
	int major, minor;
	struct reported codes[MAX_CODES];
	size_t code_cnt;
};

static void child_stop(struct child *c)
{
	test_child_stop(&c->proc);
}

/* Starts PYTHON -S SCRIPT and reads its report up to "R" (it is then waiting in wait()).
 * 0, or -errno (the child is stopped again).
 */
static int child_start(struct child *c, const char *python)
{
	const char *argv[] = { python, "-S", SCRIPT, NULL };
	char line[2048];
	int err;

	memset(c, 0, sizeof(*c));
	err = test_child_start(&c->proc, argv);
	if (err)
		return err;
	while (fgets(line, sizeof(line), c->proc.from_child)) {
		struct reported *r = &c->codes[c->code_cnt];

		if (line[0] == 'V') {
			sscanf(line, "V %d %d", &c->major, &c->minor);
		} else if (line[0] == 'C' && c->code_cnt < MAX_CODES &&
			   sscanf(line, "C %" SCNu64 " %" SCNu32 " %" SCNu32 " %d %511s %255s",
				  &r->code, &r->cookie, &r->offset, &r->line, r->file,
				  r->name) == 6) {
			c->code_cnt++;
		} else if (line[0] == 'R') {
			return 0;
		}
	}
	child_stop(c);
	return -EIO;
}

/* The CPython runtime's counters: the registry's, and its own by name. */
static struct interp_runtime_stats stats_of(struct interp_registry *py)
{
	struct interp_runtime_stats st[4];
	size_t i, n = interp_registry__stats(py, NULL, st, 4);

	for (i = 0; i < n; i++)
		if (st[i].rt->frame_kind == FRAME_KIND_CPYTHON)
			return st[i];
	memset(st, 0, sizeof(st[0]));
	return st[0];
}

static uint64_t own(const struct interp_runtime_stats *st, const char *name)
{
	size_t i;

	for (i = 0; st->rt && i < st->rt->stat_cnt; i++)
		if (!strcmp(st->rt->stat_names[i], name))
			return st->own[i];
	return UINT64_MAX;
}

static uint64_t code_reads(struct interp_registry *py)
{
	struct interp_runtime_stats st = stats_of(py);

	return own(&st, "code objects read");
}

/* Scans pid's mappings and hands every mapped file, then the process, to py. */
static const struct process *attach(struct interp_registry *py, pid_t pid)
{
	struct process *p = process_table__scan(pt, pid, now_ns());
	size_t i;

	REQUIRE(p);
	for (i = 0; i < p->map_cnt; i++)
		interp_registry__file_loaded(py, p->maps[i].exe);
	interp_registry__process_scanned(py, p, now_ns());
	return p;
}

static struct user_frame frame_of(uint64_t code, uint32_t offset, uint32_t cookie)
{
	struct user_frame uf = { .addr = code,
				 .file_id = (uint64_t)offset << 32 | cookie,
				 .kind = FRAME_KIND_CPYTHON };

	return uf;
}

/* Every reported code object symbolizes to the interpreter's own name, file and line; its
 * frames share one memo (interp.h), which no other code object's has.
 */
static void check_reported(struct interp_registry *py, const struct child *c)
{
	uint64_t memos[64] = { 0 };
	size_t i, j;

	for (i = 0; i < c->code_cnt; i++) {
		const struct reported *r = &c->codes[i];
		struct user_frame uf = frame_of(r->code, r->offset, r->cookie);
		struct interp_symbol sym;

		interp_registry__symbolize(py, c->proc.pid, c->proc.pid, &uf, &sym);
		CHECK(!sym.marker);
		CHECK_STR(sym.function, r->name);
		CHECK_STR(sym.file, r->file);
		CHECK_EQ_INT(sym.line, r->line);
		CHECK(sym.memo != 0);
		if (i < 64)
			memos[i] = sym.memo;
		for (j = 0; j < i && j < 64; j++)
			CHECK(memos[j] != sym.memo || c->codes[j].code == r->code);
		/* a frame not started yet: the code object's first line, whatever the table */
		uf = frame_of(r->code, UINT32_MAX, r->cookie);
		interp_registry__symbolize(py, c->proc.pid, c->proc.pid, &uf, &sym);
		CHECK_EQ_INT(sym.line, (int)(r->cookie & 0xffffff));
		CHECK(i >= 64 || sym.memo == memos[i]); /* the same read, another offset */
	}
}

/* The whole path on one supported interpreter. */
static void check_interpreter(const char *python, int want_minor)
{
	struct interp_registry *py = interp_registry__new(-1, -1);
	struct interp_runtime_stats st;
	struct interp_symbol sym;
	struct user_frame uf;
	struct child c;
	uint64_t reads;
	pid_t absent, pid;

	REQUIRE(py);
	REQUIRE(child_start(&c, python) == 0);
	printf("  %s: 3.%d, %zu code objects reported\n", python, c.minor, c.code_cnt);
	if (want_minor >= 0)
		CHECK_EQ_INT(c.minor, want_minor);
	CHECK_EQ_INT(c.code_cnt, 7);
	attach(py, c.proc.pid);
	st = stats_of(py);
	CHECK_EQ_INT(st.files, 1); /* libpython (pyenv) or the static python (Debian) */
	CHECK_EQ_INT(st.files_unsupported, 0);
	CHECK_EQ_INT(st.procs_attached, 1);
	CHECK_EQ_INT(own(&st, "layouts verified"), 1);
	CHECK_EQ_INT(st.procs_rejected, 0);

	check_reported(py, &c);
	st = stats_of(py);
	reads = own(&st, "code objects read");
	CHECK_EQ_INT(reads, c.code_cnt); /* once each: the second lookups hit the cache */
	CHECK_EQ_INT(own(&st, "code objects unreadable"), 0);

	/* a cookie that disagrees: the object at that address is not the one eBPF saw */
	uf = frame_of(c.codes[0].code, c.codes[0].offset, c.codes[0].cookie ^ 1);
	interp_registry__symbolize(py, c.proc.pid, c.proc.pid, &uf, &sym);
	CHECK(sym.marker);
	CHECK_STR(sym.function, "[python: code object reused]");
	CHECK(sym.file == NULL);
	st = stats_of(py);
	CHECK_EQ_INT(own(&st, "code objects stale"), 1);

	/* an address with nothing mapped */
	uf = frame_of(8, 0, 0);
	interp_registry__symbolize(py, c.proc.pid, c.proc.pid, &uf, &sym);
	CHECK_STR(sym.function, "[python: code object unreadable]");
	st = stats_of(py);
	CHECK_EQ_INT(own(&st, "code objects unreadable"), 1);

	/* a forked child not known yet, read through its parent's state; the child is gone so
	 * its parent's memory (the same code) is read
	 */
	absent = (pid_t)(INT_MAX - 1);
	if (kill(absent, 0) && errno == ESRCH) {
		uint64_t forked = stats_of(py).forked_frames;

		uf = frame_of(c.codes[1].code, c.codes[1].offset, c.codes[1].cookie);
		interp_registry__symbolize(py, absent, c.proc.pid, &uf, &sym);
		CHECK_STR(sym.function, c.codes[1].name);
		CHECK_EQ_INT(sym.line, c.codes[1].line);
		CHECK_EQ_INT(stats_of(py).forked_frames, forked + 1);
	}

	/* exec: the same addresses belong to a new image, so nothing cached is trusted: the
	 * process is unknown until scanned again, then read afresh
	 */
	interp_registry__process_exec(py, c.proc.pid);
	uf = frame_of(c.codes[0].code, c.codes[0].offset, c.codes[0].cookie);
	interp_registry__symbolize(py, c.proc.pid, c.proc.pid, &uf, &sym);
	CHECK_STR(sym.function, "[python: unknown process]");
	attach(py, c.proc.pid);
	reads = code_reads(py);
	interp_registry__symbolize(py, c.proc.pid, c.proc.pid, &uf, &sym);
	CHECK_STR(sym.function, c.codes[0].name);
	CHECK_EQ_INT(code_reads(py), reads + 1);

	/* exited: late samples still symbolize, from the cache */
	pid = c.proc.pid;
	child_stop(&c);
	interp_registry__process_exited(py, pid, now_ns());
	reads = code_reads(py);
	interp_registry__symbolize(py, pid, pid, &uf, &sym);
	CHECK_STR(sym.function, c.codes[0].name);
	CHECK_EQ_INT(sym.line, c.codes[0].line);
	CHECK_EQ_INT(code_reads(py), reads);
	/* and after the grace period, forgotten */
	interp_registry__tick(py, now_ns() + INTERP_EXITED_GRACE_NS + 1);
	interp_registry__symbolize(py, pid, pid, &uf, &sym);
	CHECK_STR(sym.function, "[python: unknown process]");
	CHECK_EQ_INT(stats_of(py).procs_reaped, 1);
	interp_registry__free(py);
}

TEST(markers)
{
	static const struct {
		uint64_t marker;
		const char *text;
	} cases[] = {
		{ PY_MARKER_UNSUPPORTED, "[python: unsupported version]" },
		{ PY_MARKER_TRUNCATED, "[python: more frames truncated]" },
		{ PY_MARKER_READ_FAILED, "[python: frame unreadable]" },
		{ 999, "[python: ?]" },
	};
	struct interp_registry *py = interp_registry__new(-1, -1);
	struct interp_symbol sym;
	size_t i;

	REQUIRE(py);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct user_frame uf = { .addr = 0,
					 .file_id = cases[i].marker,
					 .kind = FRAME_KIND_CPYTHON };

		interp_registry__symbolize(py, getpid(), getpid(), &uf, &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, cases[i].text);
		CHECK(sym.file == NULL);
		CHECK_EQ_INT(sym.line, 0);
	}
	/* a frame of a process never attached */
	{
		struct user_frame uf = frame_of(0x1000, 0, 0);

		interp_registry__symbolize(py, getpid(), getpid(), &uf, &sym);
		CHECK_STR(sym.function, "[python: unknown process]");
		CHECK_EQ_INT(stats_of(py).frames, 0);
	}
	interp_registry__free(py);
}

/* A process with no interpreter mapped: no file, no attach. */
TEST(not_python)
{
	struct interp_registry *py = interp_registry__new(-1, -1);

	REQUIRE(py);
	attach(py, getpid());
	CHECK_EQ_INT(stats_of(py).files, 0);
	CHECK_EQ_INT(stats_of(py).procs_attached, 0);
	interp_registry__free(py);
}

static void check_pyenv(int minor)
{
	char python[512];

	if (test_pyenv_python(minor, python, sizeof(python)))
		SKIP("no pyenv python 3.%d", minor);
	check_interpreter(python, minor);
}

TEST_PYENV(check_pyenv)

/* Debian's python3: static, non-PIE, symbols in .dynsym only. */
TEST(debian_python3)
{
	if (access("/usr/bin/python3", X_OK))
		SKIP_SETUP("no /usr/bin/python3");
	check_interpreter("/usr/bin/python3", -1);
}

/* A CPython without a layout of ours (pyenv's 2.7: its eval loop PyEval_EvalFrameEx, no
 * _PyRuntime): found, counted unsupported (eBPF marks its eval loop), never attached.
 */
TEST(unsupported_version)
{
	const char *root = getenv("PYENV_ROOT");
	const char *argv[] = { NULL, "-S", "-c",
			       "import sys; sys.stdout.write('R\\n'); sys.stdout.flush(); "
			       "sys.stdin.readline()",
			       NULL };
	struct interp_registry *py;
	struct test_child c;
	char python[512];
	glob_t g;

	snprintf(python, sizeof(python), "%s/versions/2.7.*/bin/python2.7",
		 root && *root ? root : "/root/.pyenv");
	if (glob(python, 0, NULL, &g))
		SKIP("no pyenv python 2.7");
	snprintf(python, sizeof(python), "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	argv[0] = python;
	py = interp_registry__new(-1, -1);
	REQUIRE(py);
	if (test_child_start(&c, argv) || test_child_wait_ready(&c)) {
		interp_registry__free(py);
		REQUIRE(!"python 2.7 started");
	}
	attach(py, c.pid);
	CHECK_EQ_INT(stats_of(py).files, 1);
	CHECK_EQ_INT(stats_of(py).files_unsupported, 1);
	CHECK_EQ_INT(stats_of(py).procs_attached, 0);
	test_child_stop(&c);
	interp_registry__free(py);
}

static void tests(void)
{
	RUN(markers);
	RUN(not_python);
	RUN_PYENV();
	RUN(debian_python3);
	RUN(unsupported_version);
}

int main(void)
{
	return test_process_main(tests);
}
