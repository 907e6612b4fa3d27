/* Replay tests of the runtimes' eBPF walks (bpf/interp/), without a kernel: the eBPF code run
 * as C over a real interpreter process, fed by the real userspace runtime code.
 *
 * Each case starts an interpreter on a workload with a known chain (tests/data/py_chain.py,
 * rb_chain.rb, php_chain.php, JvmChain.java: the ones the system tests record), waits until
 * the thread that runs the chain has burnt CPU in its hot loop, then:
 *   - scans the process as the profiler does (proc/process.c, no eBPF) and hands every mapped
 *     file and the process to the runtime registry (src/interp/registry.c), whose writes to
 *     "interp_files", "interp_procs" and "interp_code" land in tests/unit/replay_maps.h's
 *     stand-ins; every mapped file's unwind table is built and loaded by the production loader
 *     into the same stand-ins;
 *   - stops that thread several times (ptrace seize + interrupt of our own child: no root),
 *     takes its registers (PTRACE_GETREGS, fsbase included) and runs the walk exactly as
 *     sampler.bpf.c's unwind_loop_cb drives it: ss_interp_step() before each
 *     ss_unwind_step(), at most SS_MAX_USER_FRAMES * 2 + 1 iterations, cursor pid = the tgid,
 *     over the stopped process's memory (ss_read_user: process_vm_readv, bounded, zeroed on
 *     failure like bpf_probe_read_user); CPython's main thread each stop again with the
 *     thread pointer arm64's task copy holds after an exec (its parent's: ours);
 *   - symbolizes the runtime frames through the registry (the runtime's own symbolize) and the
 *     native ones through the executables' symbols, and checks the documented chain: the
 *     runtime frames leaf to root with their exact lines (the hot function at its hot line),
 *     directly over the frame that runs them (the interpreter's loop in its file; HotSpot:
 *     the call stub, through the code-range hook), then only native frames of mapped files
 *     down to the thread's root (stack end "ok").
 * A stop that lands outside the hot function (PHP's Worker::run between two calls, a JVM
 * safepoint: rare) is taken again, at most STOP_TRIES times; every stop that lands in it must
 * match exactly. A failing check names the frame that differs and prints the whole stack with
 * the runtime's eBPF counters. A last stop with the process's "interp_procs" entry deleted (as
 * when the registry rejects a process) must show no runtime frame but markers, count the
 * reason, and (interpreters) still reach the thread's root.
 *
 * Interpreters: Debian's python3.11, ruby3.1, php8.2, OpenJDK 17 and nodejs 20 (scripts/setup.sh
 * installs them: a missing one is a SKIP, a failure under CI), pyenv's 3.12 and 3.13 (not
 * installed by setup: a SKIP), Debian 11's ruby2.7 and php7.4, 12's luajit (JIT on and off)
 * and OTP 25 (BEAM's JIT, on a scheduler thread), 11's OTP 23 (BEAM's interpreter),
 * and 13's ruby3.3 and php8.4 from the runtime matrix's roots (run through their own ld.so; a
 * missing root is a SKIP). A system
 * that forbids ptrace of one's own child is a SKIP.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "symbolize/file_symbols.h"
#include "child.h"
#include "test.h"

#include "replay_maps.h"

#define STOPS 4             /* stops checked per interpreter */
#define STOP_TRIES 8        /* stops allowed to land outside the hot function, per interpreter */
#define BURN_CPU_MS 150     /* CPU the interpreter burns before the first stop */
#define BURN_WAIT_MS 20000  /* ... within this much wall time */
#define READ_MAX 4096       /* the largest ss_read_user() the walks make is far below */
#define CHAIN_MAX 8         /* runtime frames in a documented chain */
#define TEST_TIMEOUT_S 120  /* the whole binary; 3 s of CPU */
#define SCRIPT_LINE_CAP 512 /* lines of a workload script the chain may name */
#define WORKLOAD_SECS "60"  /* the workload's own run time: it is killed long before */

/* ---- the world the walks see: the stopped process ---- */

static struct {
	pid_t pid;
	const struct process *proc; /* its scan: the mappings eBPF's "mappings" would hold */
	uint64_t reads, read_failures;
	uint64_t counters[FRAME_KIND_CNT][INTERP_COUNTER_MAX]; /* "interp_counters" */
} world;

static int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	struct iovec local = { dst, size }, remote = { (void *)(uintptr_t)addr, size };

	world.reads++;
	if (size > READ_MAX || process_vm_readv(world.pid, &local, 1, &remote, 1, 0) != size) {
		memset(dst, 0, size); /* bpf_probe_read_user() zeroes on failure */
		world.read_failures++;
		return -EFAULT;
	}
	return 0;
}

/* As the LPM map "mappings" answers: the process's file mapping around pc. */
static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	static struct mapping_info found;
	const struct process *p = world.proc;
	size_t i;

	for (i = 0; p && pid == (__u32)p->pid && i < p->map_cnt; i++) {
		if (pc >= p->maps[i].start && pc < p->maps[i].end) {
			found = (struct mapping_info){ .file_id = p->maps[i].exe->file_id,
						       .bias = p->maps[i].bias,
						       .start = p->maps[i].start,
						       .end = p->maps[i].end };
			return &found;
		}
	}
	return NULL;
}

#include "native_unwind.h"

static struct interp_file *ss_interp_file(__u64 file_id)
{
	return kmaps_interp_file(file_id);
}

static void ss_interp_count(__u32 runtime, __u32 which)
{
	if (runtime < FRAME_KIND_CNT && which < INTERP_COUNTER_MAX)
		world.counters[runtime][which]++;
}

#include "interp/dispatch.h"

/* ---- the cases ---- */

/* A runtime frame of the documented chain: its function, and the marker comment its line ends
 * with (or `alt`: compiled code may name any line of a loop).
 */
struct chain_frame {
	const char *function;
	const char *mark, *alt;
	bool optional; /* a frame that is there only in some tiers (a method not inlined yet) */
};

struct interp_case {
	const char *name;
	const char *argv[20]; /* [0]: the interpreter (given at run time); the workload follows */
	const char *script;   /* the source whose lines the chain names (tests/data/...) */
	const char *thread;   /* the comm of the thread to stop (NULL: the main thread) */
	long burn_ms;         /* CPU that thread burns before the first stop */
	uint8_t kind;         /* enum user_frame_kind */
	struct chain_frame chain[CHAIN_MAX]; /* leaf to root; the first is the hot function */
	/* The frame right under the chain: its kind, the start of its name (NULL: any; a native
	 * one must lie in the interpreter's file).
	 */
	uint8_t runner_kind;
	const char *runner;
	bool runtime_below; /* frames of the runtime may follow the runner (node's own loader) */
	const char *under;  /* part of a native frame's name further down */
	/* The thread's root: the starts of the last two frames' "function@file" ("?": a static
	 * function, in no symbol table of the file).
	 */
	const char *root[2];
	uint32_t no_proc_counter; /* the runtime's eBPF counter "no interp_procs entry" */
	bool jit_leaf; /* the hot frame may run in JIT code (no way through it detached) */
};

/* ---- the stopped interpreter ---- */

static struct exe_registry *exes;
static struct file_symbols *files; /* the native frames' names */
static struct process_table *procs;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* utime + stime of thread tid of pid in ms, or -1. */
static long cpu_ms(pid_t pid, pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, stt;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
		return -1;
	return (long)((ut + stt) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

/* Starts argv with stdout to /dev/null; the child's pid, or -errno. */
static pid_t start(const char *const *argv)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Kill the child; a traced thread other than its leader is reaped first (the leader cannot be
 * before its tracer has reaped it).
 */
static void stop_child(pid_t pid, pid_t traced)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	if (traced > 0 && traced != pid)
		waitpid(traced, NULL, __WALL);
	waitpid(pid, NULL, __WALL);
}

/* The thread of pid whose comm is `comm`, or -1. */
static pid_t thread_named(pid_t pid, const char *comm)
{
	char path[64], buf[32];
	pid_t found = -1;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	while (dir && found < 0 && (d = readdir(dir))) {
		ssize_t n;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0 && (size_t)n == strlen(comm) + 1 && !memcmp(buf, comm, (size_t)n - 1))
			found = (pid_t)strtol(d->d_name, NULL, 10);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* Mark in lines[] (1-based, < cap) every line of the script that ends with `mark`; returns
 * how many.
 */
static int mark_lines(const char *script, const char *mark, bool *lines, int cap)
{
	char line[512];
	size_t ml = strlen(mark);
	int n = 0, found = 0;
	FILE *f = fopen(script, "r");

	if (!f)
		return 0;
	while (++n < cap && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");

		if (len >= ml && !memcmp(line + len - ml, mark, ml)) {
			lines[n] = true;
			found++;
		}
	}
	fclose(f);
	return found;
}

/* Interrupt the seized child and take its registers into a fresh cursor. 0 or -errno. */
static int stop_and_take_regs(pid_t pid, struct unwind_cursor *st, __u64 *fsbase)
{
	struct user_regs_struct r;
	int status;

	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		return -errno;
	if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status))
		return -ECHILD;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r))
		return -errno;
	memset(st, 0, sizeof(*st));
	st->pid = (__u32)pid;
	st->regs[DWARF_RAX] = r.rax;
	st->regs[DWARF_RDX] = r.rdx;
	st->regs[DWARF_RCX] = r.rcx;
	st->regs[DWARF_RBX] = r.rbx;
	st->regs[DWARF_RSI] = r.rsi;
	st->regs[DWARF_RDI] = r.rdi;
	st->regs[DWARF_RBP] = r.rbp;
	st->regs[DWARF_RSP] = r.rsp;
	st->regs[DWARF_R8] = r.r8;
	st->regs[DWARF_R9] = r.r9;
	st->regs[DWARF_R10] = r.r10;
	st->regs[DWARF_R11] = r.r11;
	st->regs[DWARF_R12] = r.r12;
	st->regs[DWARF_R13] = r.r13;
	st->regs[DWARF_R14] = r.r14;
	st->regs[DWARF_R15] = r.r15;
	st->regs[DWARF_RIP] = r.rip;
	st->regs_valid = 1;
	*fsbase = r.fs_base;
	return 0;
}

/* ---- one walk, as sampler.bpf.c runs it ---- */

static struct unwind_cursor cur;
static struct interp_cursor icur;
static struct user_frame frames[SS_MAX_USER_FRAMES];

/* main_pid: the walked thread's pid when it is the main thread (on_sample's), else 0 */
static void walk(__u64 fsbase, __u32 main_pid)
{
	int i;

	memset(frames, 0, sizeof(frames));
	ss_interp_reset(&icur, fsbase, main_pid);
	/* on_sample's bpf_loop(SS_MAX_USER_FRAMES * 2 + 1, unwind_loop_cb) */
	for (i = 0; i < SS_MAX_USER_FRAMES * 2 + 1; i++) {
		if (!ss_interp_step(&cur, &icur, frames))
			ss_unwind_step(&cur, frames);
		if (cur.done)
			break;
	}
}

/* Frame i symbolized: owned copies, as a profile would show it. */
struct named_frame {
	uint8_t kind;
	char function[256];
	char file[256]; /* runtime frames: the source file's base name */
	int line;
	bool marker;
};

static const struct executable *exe_of(uint64_t file_id)
{
	const struct process *p = world.proc;
	size_t i;

	for (i = 0; i < p->map_cnt; i++)
		if (p->maps[i].exe->file_id == file_id)
			return p->maps[i].exe;
	return NULL;
}

static void name_frame(struct interp_registry *reg, const struct user_frame *uf,
		       struct named_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = uf->kind;
	if (uf->kind != FRAME_KIND_NATIVE) {
		struct interp_symbol sym;
		const char *base;

		interp_registry__symbolize(reg, world.pid, world.pid, &uf[0], &sym);
		snprintf(out->function, sizeof(out->function), "%s", sym.function);
		base = sym.file ? strrchr(sym.file, '/') : NULL;
		snprintf(out->file, sizeof(out->file), "%s",
			 base       ? base + 1
			 : sym.file ? sym.file
				    : "");
		out->line = sym.line;
		out->marker = sym.marker;
	} else {
		const struct executable *exe = exe_of(uf->file_id);
		uint64_t addr = uf->addr - ((uf->flags & USER_FRAME_RETURN) ? 1 : 0), off;
		const char *s = exe ? file_symbols__symbol(files, exe, addr, &off) : NULL;

		snprintf(out->function, sizeof(out->function), "%s", s ? s : "?");
		if (exe) {
			const char *base = strrchr(exe->path, '/');

			snprintf(out->file, sizeof(out->file), "%s", base ? base + 1 : exe->path);
		}
	}
}

static struct named_frame named[SS_MAX_USER_FRAMES];

static void print_stack(struct interp_registry *reg, uint8_t kind, const char *name, int stop)
{
	const struct interp_runtime *rt = interp_registry__runtime(reg, kind);
	static const char *const ends[] = {
		"ok",     "truncated",   "no cfi",   "unknown file", "read failed",
		"bad pc", "unsupported", "unmapped", "bad frame",    "no user",
	};
	__u32 i;

	printf("  %s stop %d: %u frames, end %s, %" PRIu64 " of %" PRIu64 " reads failed\n", name,
	       stop, cur.frame_cnt, cur.end < sizeof(ends) / sizeof(ends[0]) ? ends[cur.end] : "?",
	       world.read_failures, world.reads);
	for (i = 0; rt && i < rt->bpf_counter_cnt && i < INTERP_COUNTER_MAX; i++)
		if (world.counters[kind][i])
			printf("    %s counter \"%s\": %" PRIu64 "\n", rt->name,
			       rt->bpf_counter_names[i], world.counters[kind][i]);
	for (i = 0; i < cur.frame_cnt; i++) {
		const struct named_frame *nf = &named[i];

		if (nf->kind == FRAME_KIND_NATIVE)
			printf("    #%-3u %s (%s)\n", i, nf->function, nf->file);
		else
			printf("    #%-3u [kind %u] %s @ %s:%d%s\n", i, nf->kind, nf->function,
			       nf->file, nf->line, nf->marker ? " (marker)" : "");
	}
}

/* The index of the first runtime frame, or -1. */
static int first_runtime_frame(void)
{
	__u32 i;

	for (i = 0; i < cur.frame_cnt; i++)
		if (named[i].kind != FRAME_KIND_NATIVE)
			return (int)i;
	return -1;
}

/* Lines each frame of the chain may be at: want[k][line]. */
static bool want[CHAIN_MAX][SCRIPT_LINE_CAP];

static bool name_starts(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

static bool root_is(const struct named_frame *nf, const char *prefix)
{
	char both[sizeof(nf->function) + sizeof(nf->file) + 1];

	snprintf(both, sizeof(both), "%s@%s", nf->function, nf->file);
	return name_starts(both, prefix);
}

/* Check the symbolized walk against the case's chain; false (with what differs said) if not. */
static bool check_chain(const char *name, const struct interp_case *c, const char *script,
			size_t chain_len)
{
	const char *base = strrchr(script, '/') + 1;
	int first = first_runtime_frame();
	const struct interp_file *inf;
	bool seen_under = false;
	__u32 i, n = cur.frame_cnt;
	size_t k, fi = (size_t)first;

	if (first < 0) {
		test__fail("%s: no %s frame in the stack", name, c->name);
		return false;
	}
	for (k = 0; k < chain_len; k++) {
		const struct named_frame *nf = &named[fi];
		const struct chain_frame *cf = &c->chain[k];

		if (fi >= n || nf->kind != c->kind || strcmp(nf->function, cf->function) ||
		    strcmp(nf->file, base) || nf->line <= 0 || nf->line >= SCRIPT_LINE_CAP ||
		    !want[k][nf->line]) {
			if (cf->optional && fi < n && strcmp(nf->function, cf->function))
				continue;
			test__fail(
				"%s: frame #%zu is %s @ %s:%d (kind %u), want %s @ %s at the line "
				"marked \"%s\"%s%s",
				name, fi, fi < n ? nf->function : "(none)", fi < n ? nf->file : "",
				fi < n ? nf->line : 0, fi < n ? nf->kind : 0, cf->function, base,
				cf->mark, cf->alt ? " or " : "", cf->alt ? cf->alt : "");
			return false;
		}
		fi++;
	}
	i = (__u32)fi;
	inf = i < n ? kmaps_interp_file(frames[i].file_id) : NULL;
	if (i >= n || named[i].kind != c->runner_kind ||
	    (c->runner && !name_starts(named[i].function, c->runner)) ||
	    (c->runner_kind == FRAME_KIND_NATIVE && (!inf || inf->runtime != c->kind))) {
		test__fail("%s: frame #%u is %s (%s, kind %u), want %s (kind %u) under the chain",
			   name, i, i < n ? named[i].function : "(none)",
			   i < n ? named[i].file : "", i < n ? named[i].kind : 0,
			   c->runner ? c->runner : "the interpreter's frame", c->runner_kind);
		return false;
	}
	for (i++; i < n; i++) {
		if (c->runtime_below && named[i].kind == c->kind && !named[i].marker)
			continue;
		if (named[i].kind != FRAME_KIND_NATIVE || !named[i].file[0]) {
			test__fail("%s: frame #%u (%s) under the chain is not a native frame of a "
				   "mapped file",
				   name, i, named[i].function);
			return false;
		}
		seen_under |= strstr(named[i].function, c->under) != NULL;
	}
	if (!seen_under || cur.end != UNWIND_END_OK || n < 2 ||
	    !root_is(&named[n - 1], c->root[0]) || !root_is(&named[n - 2], c->root[1])) {
		test__fail("%s: the native frames do not reach %s through %s and %s (end %u)", name,
			   c->root[0], c->under, c->root[1], cur.end);
		return false;
	}
	return true;
}

/* The process detached (its "interp_procs" entry gone: rejected, exited, not attached yet):
 * one more stop must show no frame of the runtime but its markers, count the reason, and for
 * an interpreter still walk the native frames to the thread's root. The child is running.
 */
static bool check_detached(struct interp_registry *reg, const struct interp_case *c,
			   const char *name, pid_t pid, pid_t tid)
{
	struct interp_proc_key key = { .pid = (__u32)pid, .kind = c->kind };
	uint64_t before = world.counters[c->kind][c->no_proc_counter];
	__u64 fsbase = 0;
	__u32 i, n;
	int err;

	if (bpf_map_delete_elem(REPLAY_INTERP_PROCS_FD, &key)) {
		test__fail("%s: no interp_procs entry for pid %d", name, (int)pid);
		return true;
	}
	err = stop_and_take_regs(tid, &cur, &fsbase);
	if (err) {
		test__fail("%s: cannot stop thread %d: %s", name, (int)tid, strerror(-err));
		return true;
	}
	cur.pid = (__u32)pid;
	walk(fsbase, tid == pid ? (__u32)pid : 0);
	ptrace(PTRACE_CONT, tid, 0, 0);
	n = cur.frame_cnt;
	for (i = 0; i < n; i++) {
		name_frame(reg, &frames[i], &named[i]);
		if (named[i].kind != FRAME_KIND_NATIVE && !named[i].marker) {
			test__fail("%s, detached: frame #%u is %s", name, i, named[i].function);
			return false;
		}
	}
	if (world.counters[c->kind][c->no_proc_counter] <= before) {
		test__fail("%s, detached: no interp_procs entry, not counted", name);
		return false;
	}
	if (c->kind != FRAME_KIND_HOTSPOT && !c->jit_leaf && /* JIT code: no way through it
								   * without the entry */
	    (cur.end != UNWIND_END_OK || n < 2 || !root_is(&named[n - 1], c->root[0]))) {
		test__fail("%s, detached: the native walk does not reach %s (end %u)", name,
			   c->root[0], cur.end);
		return false;
	}
	return true;
}

/* Scan pid, give its files and itself to the registry, load its files' unwind tables. */
static const struct process *attach(struct interp_registry *reg, pid_t pid)
{
	struct process *p = process_table__scan(procs, pid, now_ns());
	size_t i;

	REQUIRE(p);
	for (i = 0; i < p->map_cnt; i++) {
		struct executable *exe = p->maps[i].exe;

		interp_registry__file_loaded(reg, exe);
		if (!kmaps_file(exe->file_id) && exe->elf)
			kmaps_load_table(exe->elf, exe->file_id); /* no table: frame pointers */
	}
	interp_registry__process_scanned(reg, p, now_ns());
	return p;
}

static void run_case(const struct interp_case *c, const char *interpreter)
{
	const char *name = strrchr(interpreter, '/') + 1;
	const char *argv[sizeof(c->argv) / sizeof(c->argv[0]) + 1];
	char script[PATH_MAX];
	int stop = 0, tries = 0, compiled = 0, err;
	struct interp_registry *reg = NULL;
	size_t n = 0, chain_len, i;
	pid_t pid = -1, tid = -1;
	__u64 fsbase = 0;
	uint64_t t0 = now_ns(), t_attach = 0, t_stops = 0;
	struct unwind_cursor taken; /* the stopped thread's registers, before a walk moves them */

	if (!realpath(c->script, script))
		REQUIRE(!"the workload script exists");
	memset(want, 0, sizeof(want));
	for (chain_len = 0; chain_len < CHAIN_MAX && c->chain[chain_len].function; chain_len++) {
		const struct chain_frame *cf = &c->chain[chain_len];

		REQUIRE(mark_lines(script, cf->mark, want[chain_len], SCRIPT_LINE_CAP) > 0);
		if (cf->alt)
			REQUIRE(mark_lines(script, cf->alt, want[chain_len], SCRIPT_LINE_CAP) > 0);
	}
	argv[n++] = interpreter;
	for (i = 1; i < sizeof(c->argv) / sizeof(c->argv[0]) && c->argv[i]; i++)
		argv[n++] = c->argv[i];
	argv[n] = NULL;

	REQUIRE(!kmaps_init());
	kmaps_interp_clear(); /* only this case's registry writes what its walks see */
	reg = interp_registry__new(REPLAY_INTERP_FILES_FD, REPLAY_INTERP_PROCS_FD);
	REQUIRE(reg);
	interp_registry__set_code_map(reg, REPLAY_INTERP_CODE_FD);
	pid = start(argv);
	if (pid < 0) {
		test__fail("%s: cannot start %s: %s", name, interpreter, strerror((int)-pid));
		goto cleanup;
	}
	while (now_ns() - t0 < BURN_WAIT_MS * 1000000ULL) {
		if (tid < 0)
			tid = c->thread ? thread_named(pid, c->thread) : pid;
		if (tid > 0 && cpu_ms(pid, tid) >= c->burn_ms)
			break;
		if (waitpid(pid, &err, WNOHANG) == pid) {
			test__fail("%s: exited early (status %d)", name, err);
			pid = -1;
			goto cleanup;
		}
		sleep_ms(10);
	}
	if (tid < 0 || cpu_ms(pid, tid) < c->burn_ms) {
		test__fail("%s: thread %s did not burn %ld ms of CPU in %d ms", name,
			   c->thread ? c->thread : "main", c->burn_ms, BURN_WAIT_MS);
		goto cleanup;
	}
	memset(&world, 0, sizeof(world));
	world.pid = pid;
	t_attach = now_ns();
	world.proc = attach(reg, pid);
	t_stops = now_ns();
	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		err = errno;
		if (err == EPERM) { /* Yama's ptrace_scope 3, or a container without ptrace */
			stop_child(pid, -1);
			interp_registry__free(reg);
			SKIP("ptrace of our own child not permitted");
		}
		test__fail("%s: cannot seize thread %d: %s", name, (int)tid, strerror(err));
		goto cleanup;
	}
	while (stop < STOPS) {
		err = stop_and_take_regs(tid, &cur, &fsbase);
		if (err) {
			test__fail("%s: cannot stop thread %d: %s", name, (int)tid, strerror(-err));
			goto cleanup;
		}
		cur.pid = (__u32)pid; /* the tgid, as on_sample's mapping owner */
		taken = cur;
		walk(fsbase, tid == pid ? (__u32)pid : 0);
		for (i = 0; i < cur.frame_cnt; i++)
			name_frame(reg, &frames[i], &named[i]);
		err = first_runtime_frame();
		if (err >= 0 && named[err].kind == c->kind &&
		    !strcmp(named[err].function, c->chain[0].function)) {
			if (!check_chain(name, c, script, chain_len)) {
				print_stack(reg, c->kind, name, stop);
				goto cleanup;
			}
			/* CPython's main thread: the same stop again with the thread pointer arm64's
			 * task copy holds after an exec until the thread is first switched out, its
			 * parent's (ours: we forked it), which the walk must not need
			 * (bpf/interp/python/bpf_abi.h, main_tp)
			 */
			if (c->kind == FRAME_KIND_CPYTHON && tid == pid) {
				cur = taken;
				walk((__u64)pthread_self(), (__u32)pid);
				for (i = 0; i < cur.frame_cnt; i++)
					name_frame(reg, &frames[i], &named[i]);
				if (!check_chain(name, c, script, chain_len)) {
					test__fail(
						"%s: with the parent's thread pointer (arm64 after an "
						"exec), not the same chain",
						name);
					print_stack(reg, c->kind, name, stop);
					goto cleanup;
				}
			}
			/* HotSpot: is the hot frame JIT code (the others are interpreted)? */
			compiled += c->kind == FRAME_KIND_HOTSPOT &&
				    frames[err].file_id >> 60 == HS_SUB_COMPILED;
			/* V8: in optimised code (its own, or OSR code found by pc)? */
			compiled += c->kind == FRAME_KIND_V8 &&
				    (frames[err].file_id >> 60 == V8_SUB_OPTIMIZED ||
				     frames[err].file_id >> 60 == V8_SUB_JIT);
			stop++;
		} else if (++tries > STOP_TRIES) {
			test__fail("%s: %d stops outside %s", name, tries, c->chain[0].function);
			print_stack(reg, c->kind, name, stop);
			goto cleanup;
		}
		if (ptrace(PTRACE_CONT, tid, 0, 0)) {
			test__fail("%s: cannot resume thread %d: %s", name, (int)tid,
				   strerror(errno));
			goto cleanup;
		}
		sleep_ms(7 + 11 * stop + 3 * tries); /* a different point of the loop each time */
	}
	printf("  %s: %d stops, %d outside %s, %" PRIu64 " reads (%" PRIu64 " failed); "
	       "start and burn %.2f s, scan and tables %.2f s, stops %.2f s\n",
	       name, stop, tries, c->chain[0].function, world.reads, world.read_failures,
	       (double)(t_attach - t0) / 1e9, (double)(t_stops - t_attach) / 1e9,
	       (double)(now_ns() - t_stops) / 1e9);
	if (c->kind == FRAME_KIND_HOTSPOT || c->kind == FRAME_KIND_V8)
		printf("  %s: %s in compiled code at %d of %d stops\n", name, c->chain[0].function,
		       compiled, stop);
	if (!check_detached(reg, c, name, pid, tid))
		print_stack(reg, c->kind, name, stop);
cleanup:
	stop_child(pid, tid);
	interp_registry__free(reg);
	memset(&world, 0, sizeof(world));
}

/* ---- the interpreters ---- */

static const struct interp_case python_case = {
	.name = "python",
	.argv = { NULL, "-S", "tests/data/py_chain.py", WORKLOAD_SECS },
	.script = "tests/data/py_chain.py",
	.burn_ms = BURN_CPU_MS,
	.kind = FRAME_KIND_CPYTHON,
	.chain = {
		{ "c", "# HOT" },
		{ "b", "# CALL_B" },
		{ "a", "# CALL_A" },
		{ "<module>", "# CALL_MODULE" },
	},
	.runner = "_PyEval_EvalFrameDefault",
	.under = "Py_BytesMain",
	.root = { "_start@", "__libc_start_main" },
	.no_proc_counter = PY_COUNTER_NO_PROC,
};

TEST(python311)
{
	if (access("/usr/bin/python3.11", X_OK))
		SKIP_SETUP("no /usr/bin/python3.11");
	run_case(&python_case, "/usr/bin/python3.11");
}

static void check_pyenv(int minor)
{
	char python[512];

	if (test_pyenv_python(minor, python, sizeof(python)))
		SKIP("no pyenv python 3.%d", minor);
	run_case(&python_case, python);
}

TEST(pyenv_312)
{
	check_pyenv(12);
}

TEST(pyenv_313)
{
	check_pyenv(13);
}

static const struct interp_case ruby_case = {
	.name = "ruby",
	.argv = { NULL, "--disable-gems", "tests/data/rb_chain.rb", WORKLOAD_SECS },
	.script = "tests/data/rb_chain.rb",
	.burn_ms = BURN_CPU_MS,
	.kind = FRAME_KIND_RUBY,
	.chain = {
		{ "Worker#gamma", "# HOT" },
		{ "Worker#beta", "# CALL_GAMMA" },
		{ "Worker#alpha", "# CALL_BETA" },
		{ "<main>", "# CALL_ALPHA" },
	},
	.runner = NULL, /* vm_exec_core: static, in no symbol table of Debian's */
	.under = "rb_vm_exec",
	.root = { "_start@", "__libc_start_main" },
	.no_proc_counter = RB_COUNTER_NO_PROC,
};

TEST(ruby31)
{
	if (access("/usr/bin/ruby3.1", X_OK))
		SKIP_SETUP("no /usr/bin/ruby3.1");
	run_case(&ruby_case, "/usr/bin/ruby3.1");
}

/* Another Debian's ruby, from the runtime matrix's root of that suite (scripts/runtime_root.sh,
 * RM_CACHE), run on this system through that root's own ld.so and libraries (no chroot: no
 * root needed); a missing root is a SKIP. under: a native function below the chain there.
 */
static void run_root_ruby(const char *suite, const char *ruby, const char *under)
{
	const char *cache = getenv("RM_CACHE");
	char root[PATH_MAX], ldso[PATH_MAX + 64], libs[2 * PATH_MAX + 64], bin[PATH_MAX + 64];
	struct interp_case c = ruby_case;

	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache ? cache : "/var/cache/stackscope/runtime-matrix", suite);
	snprintf(ldso, sizeof(ldso), "%s/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
	snprintf(libs, sizeof(libs), "%s/usr/lib/x86_64-linux-gnu:%s/lib/x86_64-linux-gnu", root,
		 root);
	snprintf(bin, sizeof(bin), "%s/usr/bin/%s", root, ruby);
	if (access(ldso, X_OK) || access(bin, X_OK))
		SKIP("no %s root with %s (scripts/runtime_root.sh %s)", suite, ruby, suite);
	c.argv[1] = "--library-path";
	c.argv[2] = libs;
	c.argv[3] = bin;
	c.argv[4] = ruby_case.argv[1];
	c.argv[5] = ruby_case.argv[2];
	c.argv[6] = ruby_case.argv[3];
	c.under = under;
	run_case(&c, ldso);
}

/* Debian 11's 2.7.4: each thread's context through its pthread key */
TEST(ruby27_bullseye)
{
	run_root_ruby("bullseye", "ruby2.7", "rb_vm_exec");
}

/* Debian 13's 3.3.8: rb_vm_exec hidden (vm_exec_core two calls below rb_iseq_eval_main) */
TEST(ruby33_trixie)
{
	run_root_ruby("trixie", "ruby3.3", "ruby_run_node");
}

static const struct interp_case php_case = {
	.name = "php",
	.argv = { NULL, "tests/data/php_chain.php", WORKLOAD_SECS },
	.script = "tests/data/php_chain.php",
	.burn_ms = BURN_CPU_MS,
	.kind = FRAME_KIND_PHP,
	.chain = {
		{ "gamma", "// HOT" },
		{ "beta", "// CALL_GAMMA" },
		{ "alpha", "// CALL_BETA" },
		{ "Worker::run", "// CALL_ALPHA" },
		{ "{main}", "// CALL_RUN" },
	},
	.runner = "execute_ex",
	.under = "php_execute_script",
	.root = { "_start@", "__libc_start_main" },
	.no_proc_counter = PHP_COUNTER_NO_PROC,
};

TEST(php82)
{
	if (access("/usr/bin/php8.2", X_OK))
		SKIP_SETUP("no /usr/bin/php8.2");
	run_case(&php_case, "/usr/bin/php8.2");
}

/* The same with opcache in the CLI: the op arrays live in its shared memory. */
TEST(php82_opcache)
{
	struct interp_case c = php_case;

	if (access("/usr/bin/php8.2", X_OK))
		SKIP_SETUP("no /usr/bin/php8.2");
	c.argv[1] = "-d";
	c.argv[2] = "opcache.enable_cli=1";
	c.argv[3] = php_case.argv[1];
	c.argv[4] = php_case.argv[2];
	run_case(&c, "/usr/bin/php8.2");
}

/* PHP 7.4 (Debian 11) and 8.4 (Debian 13, unstable) from the runtime matrix's roots
 * (scripts/runtime_root.sh: RM_CACHE/roots/SUITE, built by `make runtime-matrix`; a missing
 * or unreadable root is a SKIP), run from here by the root's own dynamic loader on the root's
 * libraries (no chroot: no root needed but to read the roots), with no php.ini. The loader is
 * started through a symlink named after the PHP, so that the case is named so too.
 */
static void run_root_php(const char *suite, const char *php)
{
	const char *cache = getenv("RM_CACHE");
	char root[PATH_MAX], ready[PATH_MAX + 32], ld[PATH_MAX + 64], libs[PATH_MAX + 64];
	char bin[PATH_MAX + 64], dir[] = "/tmp/ss-replay-php.XXXXXX", link[sizeof(dir) + 32];
	struct interp_case c = php_case;

	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite);
	snprintf(ready, sizeof(ready), "%s/.stackscope-root", root);
	snprintf(ld, sizeof(ld), "%s/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
	snprintf(libs, sizeof(libs), "%s/usr/lib/x86_64-linux-gnu", root);
	snprintf(bin, sizeof(bin), "%s/usr/bin/%s", root, php);
	if (access(ready, R_OK) || access(ld, X_OK) || access(bin, X_OK))
		SKIP("no %s in a %s root (%.160s: make runtime-matrix)", php, suite, root);
	if (!mkdtemp(dir)) {
		test__fail("mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(link, sizeof(link), "%s/%s", dir, php);
	if (symlink(ld, link)) {
		test__fail("symlink %s: %s", link, strerror(errno));
		rmdir(dir);
		return;
	}
	c.argv[1] = "--library-path";
	c.argv[2] = libs;
	c.argv[3] = bin;
	c.argv[4] = "-n";
	c.argv[5] = php_case.argv[1];
	c.argv[6] = php_case.argv[2];
	/* the maps hold REPLAY_FILE_CAP files: the root's PHP and libraries start them afresh */
	kmaps_free();
	run_case(&c, link);
	unlink(link);
	rmdir(dir);
}

TEST(php74_bullseye)
{
	run_root_php("bullseye", "php7.4");
}

TEST(php84_trixie)
{
	run_root_php("trixie", "php8.4");
}

/* HotSpot through the code-range hook: the Java thread "ssreplay" (JvmChain names its main
 * thread after its first argument) in C2/OSR or interpreted code, under the call stub, on a
 * thread started by the launcher. The classes: tests/data/replay_interp.mk.
 */
TEST(jvm17)
{
	static const char java[] = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
	char classes[512], class_file[600];
	struct interp_case c = {
		.name = "jvm",
		.argv = { NULL, "-cp", classes, "JvmChain", "ssreplay", WORKLOAD_SECS },
		.script = "tests/data/JvmChain.java",
		.thread = "ssreplay",
		.burn_ms = 4 * BURN_CPU_MS, /* gamma's loop compiled (C2, on-stack replacement) */
		.kind = FRAME_KIND_HOTSPOT,
		.chain = {
			/* heavy: too big to inline, its own frame; mix: inlined into gamma once
			 * compiled (one frame here: the outer method's), its own frame before
			 */
			{ "JvmChain.heavy", "// HEAVY", "too big to inline)" },
			{ "JvmChain.mix", "// CALL_HEAVY", .optional = true },
			/* compiled code has lines only at its pc descriptors: any line of the loop */
			{ "JvmChain.gamma", "// LOOP", "// HOT" },
			{ "JvmChain.beta", "// CALL_GAMMA" },
			{ "JvmChain.alpha", "// CALL_BETA" },
			{ "JvmChain.main", "// CALL_ALPHA" },
		},
		.runner_kind = FRAME_KIND_HOTSPOT,
		.runner = "[jvm stub] ",
		.under = "call_helper",
		.root = { "?@libc.so", "?@libc.so" }, /* __clone3, start_thread */
		.no_proc_counter = HS_COUNTER_NO_PROC,
	};

	if (access(java, X_OK))
		SKIP_SETUP("no OpenJDK 17 (%s)", java);
	snprintf(classes, sizeof(classes), "%s", test_fixture("jvm"));
	snprintf(class_file, sizeof(class_file), "%s/JvmChain.class", classes);
	if (access(class_file, R_OK)) {
		test__fail("%s missing (make fixtures)", class_file);
		return;
	}
	run_case(&c, java);
}

/* V8 through its code ranges and node's builtins: the chain of tests/data/node_chain.js with
 * default flags, gamma's loop in the code TurboFan compiled for it on the stack (OSR) or in
 * gamma's optimised code, each frame at its line; TurboFan's inlining off so that every
 * function keeps a frame. Under the top level: node's module loader (JavaScript), then its
 * native entry (Builtins_JSEntry) down to _start.
 */
TEST(node20)
{
	static const struct interp_case c = {
		.name = "node",
		.argv = { NULL, "--no-turbo-inlining", "tests/data/node_chain.js", WORKLOAD_SECS },
		.script = "tests/data/node_chain.js",
		.burn_ms = 4 * BURN_CPU_MS, /* gamma's loop compiled */
		.kind = FRAME_KIND_V8,
		.chain = {
			{ "gamma", "// LOOP", "// HOT" },
			{ "beta", "// CALL_GAMMA" },
			{ "alpha", "// CALL_BETA" },
			{ "<anonymous>:1:1", "// CALL_ALPHA" }, /* the module's top level */
		},
		.runner_kind = FRAME_KIND_V8,
		.runner = "Module._compile",
		.runtime_below = true,
		.under = "Builtins_JSEntry",
		.root = { "_start@", "__libc_start_main" },
		.no_proc_counter = V8_COUNTER_NO_PROC,
	};

	if (access("/usr/bin/node", X_OK))
		SKIP_SETUP("no /usr/bin/node");
	run_case(&c, "/usr/bin/node");
}

/* LuaJIT (Debian 12's luajit 2.1, GC64, from the runtime matrix's root, run through the root's
 * ld.so as run_root_ruby runs Ruby; a missing root is a SKIP) on tests/data/lua_chain.lua:
 * frames named by their callers' call instructions, each at its line, over the VM's C frame
 * (lua_pcall's); with its JIT (gamma's loop a trace: the frame the trace started in, through
 * the code-range hook) and without (-joff: the interpreter's registers at the leaf).
 */
static void run_root_luajit(const char *suite, bool jit)
{
	const char *cache = getenv("RM_CACHE");
	char root[PATH_MAX], ldso[PATH_MAX + 64], libs[2 * PATH_MAX + 64], bin[PATH_MAX + 64];
	struct interp_case c = {
		.name = "luajit",
		.script = "tests/data/lua_chain.lua",
		.burn_ms = BURN_CPU_MS,
		.kind = FRAME_KIND_LUAJIT,
		.chain = {
			{ "M.gamma", "-- HOT" },
			{ "obj:beta", "-- CALL_GAMMA" },
			{ "alpha", "-- CALL_BETA" },
			{ "<main>", "-- CALL_ALPHA" },
		},
		.runner = NULL, /* the VM's C frame: lj_vm_*, in no symbol table of Debian's */
		.under = "lua_pcall",
		.root = { "_start@", "__libc_start_main" },
		.no_proc_counter = LUAJIT_COUNTER_NO_PROC,
		.jit_leaf = jit,
	};
	int n = 1;

	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite);
	snprintf(ldso, sizeof(ldso), "%s/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
	snprintf(libs, sizeof(libs), "%s/usr/lib/x86_64-linux-gnu:%s/lib/x86_64-linux-gnu", root,
		 root);
	snprintf(bin, sizeof(bin), "%s/usr/bin/luajit", root);
	if (access(ldso, X_OK) || access(bin, X_OK))
		SKIP("no %s root with luajit (scripts/runtime_root.sh %s)", suite, suite);
	c.argv[n++] = "--library-path";
	c.argv[n++] = libs;
	c.argv[n++] = bin;
	if (!jit)
		c.argv[n++] = "-joff";
	c.argv[n++] = "tests/data/lua_chain.lua";
	c.argv[n++] = WORKLOAD_SECS;
	kmaps_free(); /* the root's files start the maps afresh */
	run_case(&c, ldso);
}

TEST(luajit21_bookworm)
{
	run_root_luajit("bookworm", true);
}

TEST(luajit21_bookworm_joff)
{
	run_root_luajit("bookworm", false);
}

/* BEAM (Debian 12's OTP 25, its JIT, and Debian 11's OTP 23, its interpreter, from the runtime
 * matrix's roots, run through the root's ld.so with the environment erlexec gives beam.smp; a
 * missing root is a SKIP) on
 * tests/data/erl_chain.erl, compiled and loaded from the source by the emulator itself (no
 * erlc, nothing written): one scheduler, so that the chain runs on "1_scheduler". Erlang
 * frames of the process's stack, each at its line, through the code-range hook, under the
 * shell's evaluator (erl_eval, init: OTP's modules, no lines), then the scheduler's native
 * frames down to start_thread.
 */
static void run_root_beam(const char *suite, bool jit)
{
	static const char *const env[] = { "ROOTDIR",  "BINDIR", "EMU",
					   "PROGNAME", "HOME",   "ERL_CRASH_DUMP_SECONDS" };
	const char *cache = getenv("RM_CACHE");
	char root[PATH_MAX], ldso[PATH_MAX + 64], libs[2 * PATH_MAX + 64], otp[PATH_MAX + 64];
	char data[PATH_MAX + 128], erts[64], bindir[PATH_MAX + 192], bin[PATH_MAX + 256];
	struct interp_case c = {
		.name = "beam",
		.script = "tests/data/erl_chain.erl",
		.thread = "1_scheduler",
		.burn_ms = 8 * BURN_CPU_MS, /* the source compiled (~0.5 s), then gamma's loop */
		.kind = FRAME_KIND_BEAM,
		.chain = {
			{ "erl_chain:gamma/3", "% HOT" },
			{ "erl_chain:beta/1", "% CALL_GAMMA" },
			{ "erl_chain:alpha/1", "% CALL_BETA" },
			{ "erl_chain:main/1", "% CALL_ALPHA" },
		},
		.runner_kind = FRAME_KIND_BEAM,
		.runner = "erl_eval:",
		.runtime_below = true,
		/* the JIT: sched_thread_func (static in a stripped beam.smp) over glibc 2.36's
		 * __clone3 and start_thread; the interpreter: process_main (exported) over
		 * glibc 2.31's start_thread, where the walk ends (its clone's child marks the
		 * return address undefined), and the emulator's thread function
		 */
		.under = jit ? "?" : "process_main",
		.root = { jit ? "?@libc.so" : "start_thread@libpthread", jit ? "?@libc.so" : "?@beam.smp" },
		.no_proc_counter = BEAM_COUNTER_NO_PROC,
		.jit_leaf = jit,
	};
	FILE *fp;
	size_t i;
	int n = 1;

	snprintf(root, sizeof(root), "%s/roots/%s",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite);
	snprintf(ldso, sizeof(ldso), "%s/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root);
	snprintf(libs, sizeof(libs), "%s/usr/lib/x86_64-linux-gnu:%s/lib/x86_64-linux-gnu", root,
		 root);
	snprintf(otp, sizeof(otp), "%s/usr/lib/erlang", root);
	/* the erts version: the one start.boot's release names (releases/start_erl.data) */
	snprintf(data, sizeof(data), "%s/releases/start_erl.data", otp);
	fp = fopen(data, "re");
	if (access(ldso, X_OK) || !fp) {
		if (fp)
			fclose(fp);
		SKIP("no %s root with erlang-base (scripts/runtime_root.sh %s)", suite, suite);
	}
	i = fread(erts, 1, sizeof(erts) - 1, fp);
	fclose(fp);
	erts[i] = '\0';
	erts[strcspn(erts, " \n")] = '\0';
	snprintf(bindir, sizeof(bindir), "%s/erts-%s/bin", otp, erts);
	snprintf(bin, sizeof(bin), "%s/beam.smp", bindir);
	if (access(bin, X_OK))
		SKIP("no erts-%s/bin/beam.smp in %s's root", erts, suite);
	c.argv[n++] = "--library-path";
	c.argv[n++] = libs;
	c.argv[n++] = bin;
	c.argv[n++] = "-S";
	c.argv[n++] = "1";
	c.argv[n++] = "--"; /* the emulator's flags end here, then init's */
	c.argv[n++] = "-root";
	c.argv[n++] = otp;
	c.argv[n++] = "-bindir";
	c.argv[n++] = bindir;
	c.argv[n++] = "-progname";
	c.argv[n++] = "erl";
	c.argv[n++] = "--";
	c.argv[n++] = "-noshell";
	c.argv[n++] = "-eval";
	c.argv[n++] = "{ok,erl_chain,B}=compile:file(\"tests/data/erl_chain.erl\",[binary]),"
		      "{module,_}=code:load_binary(erl_chain,\"tests/data/erl_chain.erl\",B),"
		      "erl_chain:main([\"" WORKLOAD_SECS "\"])";
	setenv("ROOTDIR", otp, 1);
	setenv("BINDIR", bindir, 1);
	setenv("EMU", "beam", 1);
	setenv("PROGNAME", "erl", 1);
	setenv("HOME", "/tmp", 1);
	setenv("ERL_CRASH_DUMP_SECONDS", "0", 1); /* no erl_crash.dump in the tree */
	kmaps_free();                             /* the root's files start the maps afresh */
	run_case(&c, ldso);
	for (i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		unsetenv(env[i]);
}

TEST(beam25_bookworm)
{
	run_root_beam("bookworm", true);
}

TEST(beam23_bullseye_emu)
{
	run_root_beam("bullseye", false);
}

int main(void)
{
	int ret;

	log__set_level(LOG_WARN);
	alarm(TEST_TIMEOUT_S); /* a hang fails (no summary line) rather than stalls make test */
	exes = exe_registry__new(NULL);
	files = file_symbols__new(0);
	procs = exes ? process_table__new(exes, -1, -1) : NULL;
	if (!procs || !files || kmaps_init()) {
		printf("cannot create the process table or the maps\n");
		return 1;
	}
	RUN(python311);
	RUN(pyenv_312);
	RUN(pyenv_313);
	RUN(ruby31);
	RUN(ruby27_bullseye);
	RUN(ruby33_trixie);
	RUN(php82);
	RUN(php82_opcache);
	RUN(php74_bullseye);
	RUN(php84_trixie);
	RUN(jvm17);
	RUN(node20);
	RUN(luajit21_bookworm);
	RUN(luajit21_bookworm_joff);
	RUN(beam25_bookworm);
	RUN(beam23_bullseye_emu);
	ret = test_summary();
	process_table__free(procs);
	file_symbols__free(files); /* before the executables whose pages it borrows */
	exe_registry__free(exes);
	kmaps_free();
	return ret;
}
