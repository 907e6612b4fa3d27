/* The Perl runtime (src/interp/perl/) and its eBPF walk (bpf/interp/perl/walk.h, compiled here as
 * plain C), against a real Perl 5.36 started by the test: tests/data/perl_introspect.pl calls
 * main -> alpha -> beta -> an anonymous sub -> Klass::wait_line -> <STDIN> and waits on stdin.
 * The test finds the process's mappings (proc/process.c, no eBPF), detects the Perl binary among
 * them, attaches (the layout check against the live interpreter), takes the child's TLS base
 * with ptrace (what eBPF reads from its task), runs the walk of its runops activation over the
 * live process's memory as eBPF would, symbolizes each frame it emits and compares function,
 * file and line with the script's marked lines. Tracing and reading our own child needs no
 * root.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "interp/common/proc_memory.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "child.h"
#include "process_main.h" /* reg, pt */
#include "test.h"

#define PERL "/usr/bin/perl"
#define SCRIPT "tests/data/perl_introspect.pl"
#define WALK_MAX 64

extern const struct interp_runtime perl_runtime;

#include "bpf_world.h" /* the walk over the child's memory: world */
#include "interp_attach.h"

/* ---- the child ---- */

static struct test_child child = { .to_child = -1 };

/* Starts perl SCRIPT and waits for its "R" (printed before <STDIN> is read). 0 or -1. */
static int child_start(const char *perl)
{
	const char *argv[] = { perl, SCRIPT, NULL };

	if (test_child_start(&child, argv))
		return -1;
	return test_child_wait_ready(&child);
}

/* The child's TLS base (its main thread's fs_base), as eBPF reads it from the task; 0 on
 * failure.
 */
static uint64_t child_fsbase(void)
{
	struct user_regs_struct regs;
	uint64_t fs = 0;
	int status;

	if (ptrace(PTRACE_SEIZE, child.pid, NULL, NULL))
		return 0;
	if (!ptrace(PTRACE_INTERRUPT, child.pid, NULL, NULL) &&
	    waitpid(child.pid, &status, 0) == child.pid &&
	    !ptrace(PTRACE_GETREGS, child.pid, NULL, &regs))
		fs = regs.fs_base;
	ptrace(PTRACE_DETACH, child.pid, NULL, NULL);
	return fs;
}

/* The line of SCRIPT ending in "# mark". */
static int marked_line(const char *mark)
{
	return test_marked_line(SCRIPT, "#", mark);
}

/* The Perl binary the child maps, detected and attached: its state and entries in `world`. */
static void attach(struct interp_attached *a)
{
	interp_attached__attach(a, &perl_runtime, FRAME_KIND_PERL, pt, child.pid);
}

/* Runs the walk of one runops activation over the child: the frames it emits. */
static int walk(struct user_frame *frames, uint64_t fsbase)
{
	struct unwind_cursor st = { .pid = (__u32)world.pid };
	struct interp_cursor ic;
	int i;

	ss_interp_reset(&ic, fsbase, 0);
	ic.is.file = world.file;
	ic.is.file_id = world.file_id;
	if (perl_activation(&st, &ic.is, &ic.perl, frames))
		for (i = 0; i < WALK_MAX && ic.is.emitting == FRAME_KIND_PERL; i++)
			perl_emit(&st, &ic.is, &ic.perl, frames);
	return (int)st.frame_cnt;
}

static void check_frame(void *rt, void *proc_state, const struct user_frame *uf,
			const char *function, int line)
{
	struct interp_symbol sym;

	interp_runtime__symbolize(&perl_runtime, rt, proc_state, world.pid, uf, &sym);
	CHECK_STR(sym.function, function);
	CHECK_EQ_INT(sym.line, line);
	CHECK(!sym.marker);
	CHECK(sym.file && strstr(sym.file, SCRIPT));
}

/* ---- tests ---- */

TEST(live_chain)
{
	struct user_frame frames[SS_MAX_USER_FRAMES];
	uint64_t own[16] = { 0 }, fsbase;
	struct interp_attached a;
	int n, i;

	if (access(PERL, X_OK))
		SKIP_SETUP("%s missing (Debian perl)", PERL);
	REQUIRE(!child_start(PERL));
	attach(&a);
	REQUIRE(!a.err);
	CHECK_EQ_INT(world.file.supported, 1);
	CHECK_EQ_INT(world.file.major, 5);
	CHECK_EQ_INT(world.file.minor, 36);
	CHECK(world.file.range_end[0] > world.file.range_start[0]); /* Perl_runops_standard */
	/* The layout check against the live interpreter. */
	CHECK_EQ_INT(perl_runtime.proc_tick(a.rt, a.proc_state, now_ns()), 0);
	interp_runtime__stats(&perl_runtime, a.rt, own);
	CHECK_EQ_U64(own[0], 1); /* layouts verified */
	fsbase = child_fsbase();
	REQUIRE(fsbase);
	memset(world.counters, 0, sizeof(world.counters));
	n = walk(frames, fsbase);
	REQUIRE(n == 5);
	for (i = 0; i < n; i++)
		CHECK(frames[i].kind == FRAME_KIND_PERL && frames[i].addr);
	check_frame(a.rt, a.proc_state, &frames[0], "Klass::wait_line", marked_line("WAIT"));
	check_frame(a.rt, a.proc_state, &frames[1], "main::__ANON__", marked_line("CALL_WAIT"));
	check_frame(a.rt, a.proc_state, &frames[2], "main::beta", marked_line("CALL_CLOSURE"));
	check_frame(a.rt, a.proc_state, &frames[3], "main::alpha", marked_line("CALL_BETA"));
	check_frame(a.rt, a.proc_state, &frames[4], "main", marked_line("CALL_ALPHA"));
	CHECK_EQ_U64(frames[1].addr >> PERL_FRAME_TYPE_SHIFT, PERL_FRAME_SUB); /* its glob */
	CHECK_EQ_U64(world.counters[PERL_COUNTER_FRAMES], 5);
	CHECK_EQ_U64(world.counters[PERL_COUNTER_READ_FAILED], 0);
	CHECK_EQ_U64(world.counters[PERL_COUNTER_BAD_FRAME], 0);
	/* A COP whose line disagrees with the sample's is not used: eBPF's line, no file. */
	{
		struct user_frame uf = frames[2];
		struct interp_symbol sym;

		uf.file_id ^= 1ull << PERL_FRAME_LINE_SHIFT;
		interp_runtime__symbolize(&perl_runtime, a.rt, a.proc_state, world.pid, &uf, &sym);
		CHECK_STR(sym.function, "main::beta");
		CHECK(!sym.file);
		CHECK_EQ_INT(sym.line, marked_line("CALL_CLOSURE") ^ 1);
	}
	/* A sub without a glob whose CV holds another name HEK than the sample saw (freed and
	 * reused): a marker, not a wrong name.
	 */
	{
		struct user_frame uf = frames[2];
		struct interp_symbol sym;

		CHECK_EQ_U64(uf.addr >> PERL_FRAME_TYPE_SHIFT, PERL_FRAME_NAMED);
		uf.addr ^= 1ull << PERL_FRAME_COOKIE_SHIFT;
		interp_runtime__symbolize(&perl_runtime, a.rt, a.proc_state, world.pid, &uf, &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, "[perl: sub unreadable]");
	}
	/* Statements checked against their COP at most once a COP_RECHECK_NS (250 ms): a deep
	 * stack would cost two reads per frame of every sample. Past the process's read budget,
	 * a sub's name not cached is the budget marker, counted, and a cached statement is used
	 * without its check.
	 */
	{
		struct interp_proc_base *pb = a.proc_state;
		struct user_frame uf = frames[2];
		struct interp_symbol sym;
		uint64_t before[16] = { 0 }, after[16] = { 0 };

		interp_runtime__stats(&perl_runtime, a.rt, before);
		check_frame(a.rt, a.proc_state, &frames[3], "main::alpha",
			    marked_line("CALL_BETA"));
		interp_runtime__stats(&perl_runtime, a.rt, after);
		CHECK_EQ_U64(after[4], before[4]); /* statements read: none */
		usleep(300 * 1000);
		check_frame(a.rt, a.proc_state, &frames[3], "main::alpha",
			    marked_line("CALL_BETA"));
		interp_runtime__stats(&perl_runtime, a.rt, after);
		CHECK_EQ_U64(after[4], before[4] + 1); /* read again once due */
		pb->budget_at = now_ns();
		pb->budget_ns = -1000 * 1000 * 1000LL;      /* a second of reading owed */
		uf.addr ^= 1ull << PERL_FRAME_COOKIE_SHIFT; /* a name not cached */
		interp_runtime__symbolize(&perl_runtime, a.rt, a.proc_state, world.pid, &uf, &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, "[perl: over the process's read budget]");
		usleep(300 * 1000);
		check_frame(a.rt, a.proc_state, &frames[3], "main::alpha",
			    marked_line("CALL_BETA"));
		interp_runtime__stats(&perl_runtime, a.rt, after);
		CHECK_EQ_U64(after[4], before[4] + 1); /* not read: over budget */
		CHECK_EQ_U64(after[7],
			     before[7] + 2); /* reads over budget: the name, the statement */
		pb->budget_at = 0;           /* a full budget again */
		usleep(300 * 1000);          /* every statement due for its check */
	}
	/* No interpreter in the thread's TSD slot (a wrong TLS base): no frames, counted. */
	memset(world.counters, 0, sizeof(world.counters));
	CHECK_EQ_INT(walk(frames, fsbase + 4096), 0);
	CHECK_EQ_U64(world.counters[PERL_COUNTER_NO_INTERP] +
			     world.counters[PERL_COUNTER_READ_FAILED] +
			     world.counters[PERL_COUNTER_BAD_FRAME],
		     1);
	/* The process gone (a sample read after its exit): the statements cached for those COPs
	 * at those lines still give the file; a line that disagrees still gives none.
	 */
	test_child_stop(&child);
	memset(own, 0, sizeof(own));
	check_frame(a.rt, a.proc_state, &frames[4], "main", marked_line("CALL_ALPHA"));
	check_frame(a.rt, a.proc_state, &frames[3], "main::alpha", marked_line("CALL_BETA"));
	interp_runtime__stats(&perl_runtime, a.rt, own);
	CHECK_EQ_U64(own[6], 2); /* statements after exit */
	{
		struct user_frame uf = frames[3];
		struct interp_symbol sym;

		uf.file_id ^= 1ull << PERL_FRAME_LINE_SHIFT;
		interp_runtime__symbolize(&perl_runtime, a.rt, a.proc_state, world.pid, &uf, &sym);
		CHECK(!sym.file);
	}
	interp_attached__detach(&a);
}

/* An interpreter that does not check out: the child's PL_curinterp moved 8 bytes on (written
 * with ptrace), so PL_defstash reads as PL_curstack, an array and not the main stash: the
 * check rejects the process, whose samples then show a marker instead of Perl frames.
 */
TEST(wrong_layout_rejected)
{
	static const char *const names[] = { "PL_curinterp" };
	struct interp_sym sym = { 0 };
	struct process *p;
	struct interp_attached a;
	uint64_t addr = 0, interp;
	int status, poked = 0;
	size_t i;

	if (access(PERL, X_OK))
		SKIP_SETUP("%s missing (Debian perl)", PERL);
	REQUIRE(!child_start(PERL));
	p = process_table__scan(pt, child.pid, now_ns());
	REQUIRE(p);
	for (i = 0; i < p->map_cnt && !addr; i++) {
		if (!p->maps[i].exe || !p->maps[i].exe->elf || strcmp(p->maps[i].exe->path, PERL))
			continue;
		interp_elf__symbols(p->maps[i].exe->elf, names, 1, &sym);
		if (sym.found)
			addr = p->maps[i].bias + sym.addr;
	}
	REQUIRE(addr);
	REQUIRE(!interp__read_u64(child.pid, addr, &interp) && interp);
	if (!ptrace(PTRACE_SEIZE, child.pid, NULL, NULL)) {
		if (!ptrace(PTRACE_INTERRUPT, child.pid, NULL, NULL) &&
		    waitpid(child.pid, &status, 0) == child.pid &&
		    !ptrace(PTRACE_POKEDATA, child.pid, (void *)addr, (void *)(interp + 8)))
			poked = 1;
		ptrace(PTRACE_DETACH, child.pid, NULL, NULL);
	}
	REQUIRE(poked);
	attach(&a);
	REQUIRE(!a.err);
	CHECK_EQ_INT(perl_runtime.proc_tick(a.rt, a.proc_state, now_ns()), 0);
	/* Kept, with its eBPF entry flagged: the walk emits a marker and no Perl frame. */
	CHECK_EQ_INT(perl_runtime.proc_refresh(a.rt, a.proc_state, now_ns(), &world.proc, NULL), 1);
	CHECK_EQ_INT(world.proc.perl.rejected, 1);
	CHECK_EQ_INT(perl_runtime.proc_refresh(a.rt, a.proc_state, now_ns(), &world.proc, NULL), 0);
	{
		struct user_frame frames[SS_MAX_USER_FRAMES];
		struct interp_symbol sym;

		memset(world.counters, 0, sizeof(world.counters));
		REQUIRE(walk(frames, 0) == 1);
		interp_runtime__symbolize(&perl_runtime, a.rt, a.proc_state, world.pid, &frames[0],
					  &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, "[perl: layout check failed]");
		CHECK_EQ_U64(world.counters[PERL_COUNTER_REJECTED], 1);
	}
	interp_attached__detach(&a);
	test_child_stop(&child);
}

TEST(markers)
{
	static const struct interp_marker_text want[] = {
		{ PERL_MARKER_UNSUPPORTED, "[perl: unsupported version]" },
		{ PERL_MARKER_TRUNCATED, "[perl: more frames truncated]" },
		{ PERL_MARKER_READ_FAILED, "[perl: context unreadable]" },
		{ PERL_MARKER_BAD_FRAME, "[perl: bad context]" },
		{ PERL_MARKER_MIXED, "[perl: another interpreter in the stack]" },
		{ PERL_MARKER_REJECTED, "[perl: layout check failed]" },
	};

	interp_check_markers(&perl_runtime, FRAME_KIND_PERL, INTERP_MARKERS(want));
}

static void tests(void)
{
	RUN(live_chain);
	RUN(wrong_layout_rejected);
	RUN(markers);
}

int main(void)
{
	return test_process_main(tests);
}
