/* arm64 known chain that records its own stack: main -> chain_a -> chain_b -> chain_c ->
 * hot_leaf, built for arm64 (aarch64-linux-gnu-gcc, static, with pointer authentication of
 * return addresses: -mbranch-protection=pac-ret) and run under qemu-aarch64 on any machine.
 * A SIGPROF timer interrupts hot_leaf, a leaf with no stack frame (its return address is
 * still in x30); the handler writes the interrupted registers and the stack above the
 * interrupted sp to the file argv[1]:
 *   "SSA64\0\0\0", pc, sp, x29, x30, stack size, stack bytes (from sp up to 256 bytes
 *   above main's frame)
 * The unwinder replays over it (tests/unit/test_replay_arm64.c).
 * Usage: arm64_chain DUMP_FILE | arm64_chain - SECONDS (no dump: spin for SECONDS, a
 * workload for a profiler on an arm64 machine)
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>


extern char __start_leaf_text[], __stop_leaf_text[];
static const char *dump_path;
static volatile sig_atomic_t dumped;
static uint64_t stack_top; /* above main's frame */
volatile uint64_t sink;

__attribute__((noinline, section("leaf_text"))) uint64_t hot_leaf(uint64_t n)
{
	uint64_t x = n;

	while (!dumped)
		x = x * 6364136223846793005ULL + sink;
	return x;
}

__attribute__((noinline)) uint64_t chain_c(uint64_t n)
{
	return hot_leaf(n + 3) + 1;
}

__attribute__((noinline)) uint64_t chain_b(uint64_t n)
{
	return chain_c(n * 5) + 2;
}

__attribute__((noinline)) uint64_t chain_a(uint64_t n)
{
	return chain_b(n ^ 7) + 3;
}

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t pc = uc->uc_mcontext.pc, sp = uc->uc_mcontext.sp, hdr[5];
	FILE *f;

	(void)sig;
	(void)si;
	if (dumped || pc < (uint64_t)__start_leaf_text || pc >= (uint64_t)__stop_leaf_text)
		return;
	hdr[0] = pc;
	hdr[1] = sp;
	hdr[2] = uc->uc_mcontext.regs[29];
	hdr[3] = uc->uc_mcontext.regs[30];
	hdr[4] = stack_top > sp ? stack_top - sp : 0;
	f = fopen(dump_path, "wb");
	if (!f || fwrite("SSA64\0\0\0", 8, 1, f) != 1 || fwrite(hdr, sizeof(hdr), 1, f) != 1 ||
	    fwrite((const void *)sp, hdr[4], 1, f) != 1 || fclose(f))
		_exit(3);
	dumped = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: arm64_chain DUMP_FILE | arm64_chain - SECONDS\n");
		return 2;
	}
	if (argc == 3 && !strcmp(argv[1], "-")) {
		alarm((unsigned int)atoi(argv[2]));
		sink = chain_a(1);
		return 0;
	}
	dump_path = argv[1];
	stack_top = (uint64_t)__builtin_frame_address(0) + 256;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL))
		return 1;
	alarm(60); /* never spin forever: SIGALRM ends the run, the test fails */
	sink = chain_a((uint64_t)argc);
	return dumped ? 0 : 1;
}
