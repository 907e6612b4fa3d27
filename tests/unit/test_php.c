/* The PHP runtime (src/interp/php/) and its eBPF walk (bpf/interp/php/walk.h, compiled here as
 * plain C), against a real PHP 8.2 started by the test: tests/data/php_introspect.php calls
 * {main} -> alpha -> beta -> {closure} -> Klass::wait -> fgets and waits on stdin. The test finds
 * the process's mappings (proc/process.c, no eBPF), detects the PHP binary among them, attaches
 * (the layout check against the live executor globals and frames), runs the walk over the
 * live process's memory as eBPF would, symbolizes each frame it emits and compares function,
 * file and line with the script's marked lines. Reading our own child needs no root.
 *
 * Debian's php8.2-cli is installed by scripts/setup.sh: missing under CI fails.
 */
#include <errno.h>
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

/* Starts PHP -n [extra...] SCRIPT and waits for its "R" (it is then in fgets: a walk before
 * finds fflush's frame, or none, above Klass::wait). 0 or -1.
 */
static int child_start_with(struct test_child *c, const char *const *extra)
{
	const char *argv[16] = { PHP, "-n" };
	size_t n = 2;

	while (extra && *extra && n < 14)
		argv[n++] = *extra++;
	argv[n++] = SCRIPT;
	argv[n] = NULL;
	if (test_child_start(c, argv))
		return -1;
	return test_child_wait_ready(c);
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

	ss_interp_reset(&ic, 0);
	ic.is.file = world.file;
	ic.is.file_id = world.file_id;
	if (php_activation(&st, &ic.is, &ic.php, frames))
		for (i = 0; i < WALK_MAX && ic.is.emitting == FRAME_KIND_PHP; i++)
			php_emit(&st, &ic.is, &ic.php, frames);
	return (int)st.frame_cnt;
}

static void check_frame(void *rt, void *proc_state, const struct user_frame *uf,
			const char *function, int line)
{
	struct interp_symbol sym;

	interp_runtime__symbolize(&php_runtime, rt, proc_state, world.pid, uf, &sym);
	CHECK_STR(sym.function, function);
	CHECK_EQ_INT(sym.line, line);
	CHECK(!sym.marker);
	if (line)
		CHECK(sym.file && strstr(sym.file, SCRIPT));
	else
		CHECK(!sym.file);
}

/* ---- tests ---- */

TEST(live_chain)
{
	struct user_frame frames[SS_MAX_USER_FRAMES];
	struct interp_attached a;
	struct test_child c;
	int n, i;

	if (access(PHP, X_OK))
		SKIP_SETUP("%s missing (Debian php8.2-cli)", PHP);
	REQUIRE(!child_start(&c));
	attach(&a, &c);
	CHECK_EQ_INT(world.file.supported, 1);
	CHECK_EQ_INT(world.file.major, 8);
	CHECK_EQ_INT(world.file.minor, 2);
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
	check_frame(a.rt, a.proc_state, &frames[2], "{closure}", marked_line("CALL_WAIT"));
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
		{ PHP_MARKER_UNSUPPORTED, "[php: unsupported version]" },
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
TEST(jit_code_range)
{
	static const char *const jit[] = { "-d", "zend_extension=opcache.so",
					   "-d", "opcache.enable_cli=1",
					   "-d", "opcache.jit=tracing",
					   "-d", "opcache.jit_buffer_size=8M",
					   NULL };
	struct interp_code_range code[INTERP_CODE_RANGES];
	uint8_t insn[3] = { 0 };
	struct interp_attached a;
	struct test_child c;
	int i;

	if (access(PHP, X_OK))
		SKIP_SETUP("%s missing (Debian php8.2-cli)", PHP);
	for (i = 0; i < 2; i++) {
		REQUIRE(!child_start_with(&c, i ? jit : NULL));
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

static void tests(void)
{
	RUN(live_chain);
	RUN(wrong_layout_rejected);
	RUN(markers);
	RUN(jit_code_range);
}

int main(void)
{
	return test_process_main(tests);
}
