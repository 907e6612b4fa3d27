/*
 * Replay fixture: deep recursion. main -> replay_a -> replay_recurse x 300 -> take_snapshot.
 * replay_recurse keeps a live local across its call and uses the result afterwards, so the
 * compiler can turn the recursion neither into a loop nor into tail calls.
 * Usage: replay_recurse SNAPSHOT_FILE.
 */
#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

#define REPLAY_DEPTH 300

void replay_init(int argc, char **argv);
void take_snapshot(void);

static volatile unsigned long replay_sink;

REPLAY_NOINLINE unsigned long replay_recurse(int depth, unsigned long acc)
{
	unsigned long r;

	if (depth == 0) {
		take_snapshot();
		return acc;
	}
	r = replay_recurse(depth - 1, acc * 31 + (unsigned long)depth);
	__asm__ volatile("" : "+r"(r) : : "memory");
	replay_sink += r ^ acc;
	return r + acc;
}

REPLAY_NOINLINE int replay_a(int x)
{
	unsigned long r = replay_recurse(REPLAY_DEPTH, (unsigned long)x);

	replay_sink += r;
	return (int)(r & 7);
}

int main(int argc, char **argv)
{
	int r;

	replay_init(argc, argv);
	r = replay_a(argc);
	replay_sink += (unsigned long)r;
	return 0;
}
