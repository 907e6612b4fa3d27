/*
 * Snapshot writer of the unwinder replay fixtures (read by tests/unit/test_replay.c).
 *
 * A fixture calls replay_init(argc, argv) first, walks down a known call chain and calls
 * take_snapshot() at the bottom. take_snapshot() arms a CPU-time timer and spins; the
 * SIGPROF handler captures the *interrupted* frame from its ucontext_t: the exact registers
 * of take_snapshot's spin loop (not of the handler), the stack from that rsp up to the end
 * of the [stack] mapping, and /proc/self/maps. So the unwinder replays what the eBPF
 * program would see when a perf sample lands in take_snapshot.
 *
 * File format (native byte order, x86-64 only):
 *   struct replay_file_header (below), then stack_sz bytes of stack starting at address
 *   regs[7] (rsp), then maps_sz bytes of /proc/self/maps text.
 * Registers are in DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip.
 *
 * The handler uses only async-signal-safe calls (open, read, write, close). The bytes above
 * the interrupted rsp do not change while it runs: it runs below them on the same stack.
 */
#define _GNU_SOURCE /* REG_* of ucontext_t, memmem */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

#define REPLAY_MAGIC "SSREPLAY"
#define REPLAY_VERSION 1
#define REPLAY_REG_CNT 17
#define REPLAY_MAPS_CAP (256 * 1024)
/* take_snapshot() gives up after this many spins (seconds of CPU, not a hang). */
#define REPLAY_SPIN_MAX 4000000000UL

struct replay_file_header {
	char magic[8];
	uint32_t version;
	uint32_t reg_cnt;
	uint64_t regs[REPLAY_REG_CNT];
	uint64_t stack_sz;
	uint64_t maps_sz;
};

void replay_init(int argc, char **argv);
void take_snapshot(void);

static const char *snap_path;
static volatile sig_atomic_t snap_armed, snap_written, snap_failed;
static volatile unsigned long snap_spin;
static char snap_maps[REPLAY_MAPS_CAP];

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static uint64_t parse_hex(const char **s)
{
	uint64_t v = 0;

	for (;; (*s)++) {
		char c = **s;

		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* End of the [stack] mapping containing sp, or 0. */
static uint64_t stack_end(const char *maps, size_t len, uint64_t sp)
{
	const char *line = maps, *end = maps + len;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *s = line;
		uint64_t lo, hi;

		if (!nl)
			nl = end;
		lo = parse_hex(&s);
		if (*s == '-') {
			s++;
			hi = parse_hex(&s);
			if (sp >= lo && sp < hi && memmem(line, (size_t)(nl - line), "[stack]", 7))
				return hi;
		}
		line = nl + 1;
	}
	return 0;
}

static void write_snapshot(const ucontext_t *uc)
{
	static const int gregs_of_dwarf[REPLAY_REG_CNT] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	struct replay_file_header h;
	size_t maps_sz = 0;
	uint64_t sp, top;
	ssize_t n;
	int fd, i;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, REPLAY_MAGIC, sizeof(h.magic));
	h.version = REPLAY_VERSION;
	h.reg_cnt = REPLAY_REG_CNT;
	for (i = 0; i < REPLAY_REG_CNT; i++)
		h.regs[i] = (uint64_t)uc->uc_mcontext.gregs[gregs_of_dwarf[i]];
	sp = h.regs[7];

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto fail;
	while ((n = read(fd, snap_maps + maps_sz, sizeof(snap_maps) - maps_sz)) > 0)
		maps_sz += (size_t)n;
	close(fd);
	if (n < 0 || maps_sz == sizeof(snap_maps))
		goto fail;
	top = stack_end(snap_maps, maps_sz, sp);
	if (!top)
		goto fail;
	h.stack_sz = top - sp;
	h.maps_sz = maps_sz;

	fd = open(snap_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (write_all(fd, &h, sizeof(h)) || write_all(fd, (const void *)sp, h.stack_sz) ||
	    write_all(fd, snap_maps, maps_sz)) {
		close(fd);
		goto fail;
	}
	if (close(fd))
		goto fail;
	return;
fail:
	snap_failed = 1;
}

static void on_snapshot_signal(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	/* Only once, and only when the pc is in take_snapshot's spin loop. */
	if (!snap_armed || snap_written)
		return;
	write_snapshot(ucv);
	snap_written = 1;
}

void replay_init(int argc, char **argv)
{
	struct sigaction sa;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SNAPSHOT_FILE\n", argv[0]);
		exit(2);
	}
	snap_path = argv[1];
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_snapshot_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL)) {
		perror("sigaction");
		exit(1);
	}
}

REPLAY_NOINLINE void take_snapshot(void)
{
	struct itimerval on = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	unsigned long n;

	if (setitimer(ITIMER_PROF, &on, NULL)) {
		perror("setitimer");
		exit(1);
	}
	__asm__ volatile("" ::: "memory");
	snap_armed = 1;
	for (n = 0; !snap_written && n < REPLAY_SPIN_MAX; n++)
		snap_spin++;
	snap_armed = 0;
	__asm__ volatile("" ::: "memory");
	setitimer(ITIMER_PROF, &off, NULL);
	if (!snap_written || snap_failed) {
		fprintf(stderr, "take_snapshot: %s\n", snap_written ? "write failed" : "no signal");
		exit(1);
	}
}
