/*
 * Replay fixture: a plain chain main -> replay_a -> replay_b -> replay_c -> take_snapshot,
 * built -O2 -fomit-frame-pointer by gcc and clang (and once with frame pointers). Every
 * function on the chain is out of line and does work after its call, so no call is a tail
 * call. replay_b realigns its stack (see there). Usage: replay_chain_* SNAPSHOT_FILE.
 */
#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

void replay_init(int argc, char **argv);
void take_snapshot(void);

static volatile unsigned long replay_sink;

REPLAY_NOINLINE int replay_c(int x)
{
	take_snapshot();
	replay_sink += (unsigned long)x;
	return x + 3;
}

/* An over-aligned local next to a variable-length array: gcc realigns the stack through a
 * DRAP register (r10) and describes the CFA as an expression, *(rbp - 8), which the table
 * turns into UNWIND_RULE_CFA_DEREF. clang keeps the CFA at rbp + 16.
 */
REPLAY_NOINLINE int replay_b(int x)
{
	char vla[(x & 7) + 1];
	char aligned[64] __attribute__((aligned(64)));
	int r;

	vla[0] = (char)x;
	aligned[0] = (char)(x + 1);
	__asm__ volatile("" : : "r"(vla), "r"(aligned) : "memory");
	r = replay_c(x * 2 + vla[0] - aligned[0]);
	replay_sink += (unsigned long)r;
	return r + 2;
}

REPLAY_NOINLINE int replay_a(int x)
{
	int r = replay_b(x + 1);

	replay_sink += (unsigned long)r;
	return r + 1;
}

int main(int argc, char **argv)
{
	int r;

	replay_init(argc, argv);
	r = replay_a(argc);
	replay_sink += (unsigned long)r;
	return 0;
}
