/* The PHP runtime (src/interp/php/) and its eBPF walk (bpf/interp/php/walk.h, compiled here as
 * plain C), against a real PHP started by the test: tests/data/php_introspect.php calls
 * {main} -> alpha -> beta -> {closure} -> Klass::wait -> fgets and waits on stdin. The test finds
 * the process's mappings (proc/process.c, no eBPF), detects the PHP binary among them, attaches
 * (the layout check against the live executor globals and frames), runs the walk over the
 * live process's memory as eBPF would, symbolizes each frame it emits and compares function,
 * file and line with the script's marked lines. Reading our own child needs no root.
 *
 * Debian's php8.2-cli is installed by scripts/setup.sh: missing under CI fails. Debian 11's
 * php7.4 and 13's and unstable's php8.4 are those of the runtime matrix's roots, when they are
 * built (make runtime-matrix), run by the roots' own dynamic loaders (reading the roots needs
 * root; without them, a SKIP).
 */
#include <errno.h>
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
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "child.h"
#include "process_main.h" /* reg, pt */
#include "test.h"

#define PHP "/usr/bin/php8.2"
#define SCRIPT "tests/data/php_introspect.php"
#define WALK_MAX 64

extern const struct interp_runtime php_runtime;

#include "bpf_world.h" /* the walk over the child's memory: world */
#include "interp_attach.h"

/* ---- the child ---- */

/* A PHP the tests run: Debian 12's from the host, or another Debian's from a root of the
 * runtime matrix (scripts/runtime_root.sh: RM_CACHE/roots/SUITE), run by the root's own
 * dynamic loader on the root's libraries (no chroot).
 */
struct php_build {
	const char *suite; /* NULL: the host's */
	const char *php;   /* its binary's name */
	int major, minor;
	const char *api; /* PHP 8: its extensions' folder under /usr/lib/php (opcache.so) */
	char argv_buf[3][PATH_MAX + 64];
	const char *argv[6]; /* the command before the PHP arguments, NULL-terminated */
};

/* Fills b->argv for PHP b->php of root b->suite (or the host's); 0, or -ENOENT when that root
 * or its PHP is not there.
 */
static int php_build__find(struct php_build *b)
{
	const char *cache = getenv("RM_CACHE");
	char root[PATH_MAX], ready[PATH_MAX + 32];

	if (!b->suite) {
		b->argv[0] = PHP;
		b->argv[1] = NULL;
		return access(PHP, X_OK) ? -ENOENT : 0;
	}
	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", b->suite);
	snprintf(ready, sizeof(ready), "%s/.stackscope-root", root);
	snprintf(b->argv_buf[0], sizeof(b->argv_buf[0]),
		 "%s/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
	snprintf(b->argv_buf[1], sizeof(b->argv_buf[1]), "%s/usr/lib/x86_64-linux-gnu", root);
	snprintf(b->argv_buf[2], sizeof(b->argv_buf[2]), "%s/usr/bin/%s", root, b->php);
	b->argv[0] = b->argv_buf[0];
	b->argv[1] = "--library-path";
	b->argv[2] = b->argv_buf[1];
	b->argv[3] = b->argv_buf[2];
	b->argv[4] = NULL;
	return access(ready, R_OK) || access(b->argv[0], X_OK) || access(b->argv[3], X_OK) ? -ENOENT
											   : 0;
}

static struct php_build host_php = { .php = "php8.2", .major = 8, .minor = 2 };

/* Starts b's PHP -n [extra...] SCRIPT and waits for its "R" (it is then in fgets: a walk before
 * finds fflush's frame, or none, above Klass::wait). 0 or -1.
 */
static int child_start_php(struct test_child *c, const struct php_build *b,
			   const char *const *extra)
{
	const char *argv[24];
	size_t n = 0;

	while (b->argv[n])
		argv[n] = b->argv[n], n++;
	argv[n++] = "-n";
	while (extra && *extra && n < 22)
		argv[n++] = *extra++;
	argv[n++] = SCRIPT;
	argv[n] = NULL;
	if (test_child_start(c, argv))
		return -1;
	return test_child_wait_ready(c);
}

static int child_start_with(struct test_child *c, const char *const *extra)
{
	return child_start_php(c, &host_php, extra);
}

static int child_start(struct test_child *c)
{
	return child_start_with(c, NULL);
}

/* The line of SCRIPT ending in "// mark". */
static int marked_line(const char *mark)
{
	return test_marked_line(SCRIPT, "//", mark);
}

/* The PHP binary the child maps, detected and attached: its state and entries in `world`. */
static void attach(struct interp_attached *a, const struct test_child *c)
{
	interp_attached__attach(a, &php_runtime, FRAME_KIND_PHP, pt, c->pid);
	REQUIRE(!a->err);
}

/* Runs the walk of one execute_ex activation over the child: the frames it emits. */
static int walk(struct user_frame *frames)
{
	struct unwind_cursor st = { .pid = (__u32)world.pid };
	struct interp_cursor ic;
	int i;

	ss_interp_reset(&ic, 0, 0);
	ic.is.file = world.file;
	ic.is.file_id = world.file_id;
	if (php_activation(&st, &ic.is, &ic.php, frames))
		for (i = 0; i < WALK_MAX && ic.is.emitting == FRAME_KIND_PHP; i++)
			php_emit(&st, &ic.is, &ic.php, frames);
	return (int)st.frame_cnt;
}

/* Frame uf symbolized: function (a prefix of it when it ends in '*': PHP 8.4 names a closure
 * "{closure:beta():16}"), the script's line (0: none, no file).
 */
static void check_frame(void *rt, void *proc_state, const struct user_frame *uf,
			const char *function, int line)
{
	size_t len = strlen(function);
	struct interp_symbol sym;

	interp_runtime__symbolize(&php_runtime, rt, proc_state, world.pid, uf, &sym);
	if (len && function[len - 1] == '*')
		CHECK(sym.function && !strncmp(sym.function, function, len - 1));
	else
		CHECK_STR(sym.function, function);
	CHECK_EQ_INT(sym.line, line);
	CHECK(!sym.marker);
	if (line)
		CHECK(sym.file && strstr(sym.file, SCRIPT));
	else
		CHECK(!sym.file);
}

/* ---- tests ---- */

/* b's PHP in fgets: detected, its layout checked on the live process, the walk's frames. */
static void check_live_chain(const struct php_build *b)
{
	struct user_frame frames[SS_MAX_USER_FRAMES];
	struct interp_attached a;
	struct test_child c;
	int n, i;

	REQUIRE(!child_start_php(&c, b, NULL));
	attach(&a, &c);
	CHECK_EQ_INT(world.file.supported, 1);
	CHECK_EQ_INT(world.file.major, b->major);
	CHECK_EQ_INT(world.file.minor, b->minor);
	CHECK(world.file.range_end[0] > world.file.range_start[0]); /* execute_ex */
	CHECK(world.file.range_end[1] > world.file.range_start[1]); /* zend_call_function */
	CHECK_EQ_INT(world.file.php.off.vm_regs, 1);                /* Debian: the HYBRID VM */
	/* The layout check: globals, then the running frames. */
	CHECK_EQ_INT(php_runtime.proc_tick(a.rt, a.proc_state, now_ns()), 0);
	{
		uint64_t own[16] = { 0 };

		interp_runtime__stats(&php_runtime, a.rt, own);
		CHECK_EQ_U64(own[0], 1); /* layouts verified */
	}
	memset(world.counters, 0, sizeof(world.counters));
	n = walk(frames);
	REQUIRE(n == 6);
	for (i = 0; i < n; i++)
		CHECK(frames[i].kind == FRAME_KIND_PHP && frames[i].addr);
	check_frame(a.rt, a.proc_state, &frames[0], "fgets", 0);
	check_frame(a.rt, a.proc_state, &frames[1], "Klass::wait", marked_line("WAIT"));
	check_frame(a.rt, a.proc_state, &frames[2], "{closure*", marked_line("CALL_WAIT"));
	check_frame(a.rt, a.proc_state, &frames[3], "beta", marked_line("CALL_CLOSURE"));
	check_frame(a.rt, a.proc_state, &frames[4], "alpha", marked_line("CALL_BETA"));
	check_frame(a.rt, a.proc_state, &frames[5], "{main}", marked_line("CALL_ALPHA"));
	CHECK_EQ_U64(world.counters[PHP_COUNTER_FRAMES], 6);
	CHECK_EQ_U64(world.counters[PHP_COUNTER_LINE_NONE], 0);
	/* A function whose cookie disagrees was freed and reused: a marker, not a wrong name. */
	{
		struct user_frame uf = frames[1];
		struct interp_symbol sym;

		uf.file_id ^= 0x10;
		interp_runtime__symbolize(&php_runtime, a.rt, a.proc_state, world.pid, &uf, &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, "[php: function reused]");
	}
	interp_attached__detach(&a);
	test_child_stop(&c);
}

TEST(live_chain)
{
	if (php_build__find(&host_php))
		SKIP_SETUP("%s missing (Debian php8.2-cli)", PHP);
	check_live_chain(&host_php);
}

/* Executor globals at the wrong address (a wrong layout): the check rejects the process. */
TEST(wrong_layout_rejected)
{
	struct interp_attached a;
	struct test_child c;

	if (access(PHP, X_OK))
		SKIP_SETUP("%s missing (Debian php8.2-cli)", PHP);
	REQUIRE(!child_start(&c));
	attach(&a, &c);
	interp_runtime__proc_free(&php_runtime, a.rt, a.proc_state);
	a.proc_state = NULL;
	REQUIRE(!interp_runtime__proc_attach(&php_runtime, a.rt, c.pid, a.file_state, a.bias + 8,
					     now_ns(), &a.proc_state, &world.proc));
	CHECK(php_runtime.proc_tick(a.rt, a.proc_state, now_ns()) < 0);
	interp_attached__detach(&a);
	test_child_stop(&c);
}

TEST(markers)
{
	static const struct interp_marker_text want[] = {
		{ PHP_MARKER_VERSION(8, 1, 0), "[php: unsupported version 8.1]" },
		{ PHP_MARKER_VERSION(8, 4, 1), "[php: unsupported version 8.4 ZTS]" },
		{ PHP_MARKER_VERSION(7, 3, 0), "[php: unsupported version 7.3]" },
		{ PHP_MARKER_TRUNCATED, "[php: more frames truncated]" },
		{ PHP_MARKER_READ_FAILED, "[php: frame unreadable]" },
		{ PHP_MARKER_BAD_FRAME, "[php: bad frame]" },
		{ PHP_MARKER_JIT_FRAME, "[php: JIT frame not placed]" },
		{ PHP_MARKER_MIXED, "[php: below another interpreter]" },
	};

	interp_check_markers(&php_runtime, FRAME_KIND_PHP, INTERP_MARKERS(want));
}

/* opcache's JIT (php_jit.c): with it on, the process's code range is the executable part of
 * opcache's shared memory, and eBPF is told execute_ex's dispatch jump (`jmp *(%r15)`, read
 * back from the child) and frame size; without opcache, no code range.
 */
static void check_jit_code_range(const struct php_build *b)
{
	char opcache[PATH_MAX + 128];
	const char *const jit[] = { "-d", opcache,
				    "-d", "opcache.enable_cli=1",
				    "-d", "opcache.jit=tracing",
				    "-d", "opcache.jit_buffer_size=8M",
				    NULL };
	struct interp_code_range code[INTERP_CODE_RANGES];
	uint8_t insn[3] = { 0 };
	struct interp_attached a;
	struct test_child c;
	int i;

	if (b->suite) /* the root's, by its path (the binary's extension_dir is the root's) */
		snprintf(opcache, sizeof(opcache), "zend_extension=%.*s/../lib/php/%s/opcache.so",
			 (int)(strrchr(b->argv[3], '/') - b->argv[3]), b->argv[3], b->api);
	else
		snprintf(opcache, sizeof(opcache), "zend_extension=opcache.so");
	for (i = 0; i < 2; i++) {
		REQUIRE(!child_start_php(&c, b, i ? jit : NULL));
		attach(&a, &c);
		CHECK_EQ_U64(world.proc.php.vm_entry, a.bias + world.file.range_start[0]);
		CHECK(world.proc.php.vm_dispatch > world.proc.php.vm_entry &&
		      world.proc.php.vm_dispatch < a.bias + world.file.range_end[0]);
		CHECK(!interp__read_mem(c.pid, world.proc.php.vm_dispatch, insn, sizeof(insn)));
		CHECK(insn[0] == 0x41 && insn[1] == 0xff && insn[2] == 0x27);
		CHECK(world.proc.php.vm_frame >= 16 && world.proc.php.vm_frame % 8 == 0);
		memset(code, 0, sizeof(code));
		CHECK_EQ_INT(php_runtime.proc_refresh(a.rt, a.proc_state, now_ns(), &world.proc,
						      code),
			     i ? 1 : 0);
		if (i)
			CHECK(code[0].end - code[0].start >= 8 << 20);
		else
			CHECK(!code[0].start && !code[0].end);
		interp_attached__detach(&a);
		test_child_stop(&c);
	}
}

TEST(jit_code_range)
{
	if (php_build__find(&host_php))
		SKIP_SETUP("%s missing (Debian php8.2-cli)", PHP);
	check_jit_code_range(&host_php);
}

/* The PHPs of Debian 11, 13 and unstable, from the runtime matrix's roots (a SKIP without):
 * the live chain, and PHP 8.4's JIT buffer and execute_ex frame (a CET build's prologue).
 */
TEST(live_chain_roots)
{
	static struct php_build builds[] = {
		{ .suite = "bullseye", .php = "php7.4", .major = 7, .minor = 4 },
		{ .suite = "trixie", .php = "php8.4", .major = 8, .minor = 4, .api = "20240924" },
		{ .suite = "sid", .php = "php8.4", .major = 8, .minor = 4, .api = "20240924" },
	};
	size_t i, found = 0;

	for (i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		if (php_build__find(&builds[i]))
			continue;
		found++;
		check_live_chain(&builds[i]);
		if (builds[i].api)
			check_jit_code_range(&builds[i]);
		printf("  %s of %s: chain%s\n", builds[i].php, builds[i].suite,
		       builds[i].api ? ", JIT buffer and dispatch" : "");
	}
	if (!found)
		SKIP("no runtime-matrix roots (make runtime-matrix)");
}

static void tests(void)
{
	RUN(live_chain);
	RUN(live_chain_roots);
	RUN(wrong_layout_rejected);
	RUN(markers);
	RUN(jit_code_range);
}

int main(void)
{
	return test_process_main(tests);
}
