/*
 * Replay fixture: a call that is the last instruction of its function. replay_c never
 * returns, so replay_b ends with `call replay_c` and its return address is the first byte
 * after replay_b (alignment padding without CFI, or the next function). Only the lookup at
 * return address - 1 finds replay_b's rule.
 *   main -> replay_a -> replay_b -> replay_c -> take_snapshot
 * Usage: replay_noreturn SNAPSHOT_FILE.
 */
#include <stdlib.h>

#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

void replay_init(int argc, char **argv);
void take_snapshot(void);

static volatile unsigned long replay_sink;

REPLAY_NOINLINE __attribute__((noreturn)) void replay_c(int x)
{
	take_snapshot();
	replay_sink += (unsigned long)x;
	exit(0);
}

/* Keeps a value live across the call so the frame has a nonzero size. */
REPLAY_NOINLINE void replay_b(int x)
{
	volatile int keep = x;

	replay_c(keep * 2);
}

REPLAY_NOINLINE int replay_a(int x)
{
	replay_b(x + 1);
	replay_sink++;
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	replay_init(argc, argv);
	r = replay_a(argc);
	replay_sink += (unsigned long)r;
	return 0;
}
