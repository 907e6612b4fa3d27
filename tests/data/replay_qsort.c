/*
 * Replay fixture: a callback through libc. main -> replay_a -> replay_sort -> qsort (libc,
 * internal frames) -> replay_cmp -> take_snapshot, on the comparator's first call.
 * Usage: replay_qsort SNAPSHOT_FILE.
 */
#include <stdlib.h>

#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

#define REPLAY_SORT_CNT 64

void replay_init(int argc, char **argv);
void take_snapshot(void);

static volatile unsigned long replay_sink;
static int replay_snapped;

REPLAY_NOINLINE int replay_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!replay_snapped) {
		replay_snapped = 1;
		take_snapshot();
	}
	replay_sink++;
	return (x > y) - (x < y);
}

REPLAY_NOINLINE int replay_sort(int seed)
{
	int v[REPLAY_SORT_CNT], i;

	for (i = 0; i < REPLAY_SORT_CNT; i++)
		v[i] = (i * 7919 + seed) % 101;
	qsort(v, REPLAY_SORT_CNT, sizeof(v[0]), replay_cmp);
	replay_sink += (unsigned long)v[0];
	return v[REPLAY_SORT_CNT - 1];
}

REPLAY_NOINLINE int replay_a(int x)
{
	int r = replay_sort(x);

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
