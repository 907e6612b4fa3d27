/*
 * Replay fixture, C++: std::sort with a function-pointer comparator. On its first call the
 * comparator goes through std::call_once (libc's pthread_once) to replay_once, which writes
 * to an ostream whose streambuf is ours, so libstdc++'s inserter calls back into the
 * executable:
 *   take_snapshot ReplayBuf::xsputn [libstdc++: __ostream_insert] replay_once
 *   [libc: pthread_once] [exe: call_once thunks] replay_cmp [exe: std::sort internals]
 *   replay_sort replay_a main ...
 * Usage: replay_cxx SNAPSHOT_FILE.
 */
#include <algorithm>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <vector>

#define REPLAY_NOINLINE __attribute__((noipa))

extern "C" void replay_init(int argc, char **argv);
extern "C" void take_snapshot(void);

static volatile unsigned long replay_sink;
static std::once_flag replay_flag;

class ReplayBuf : public std::streambuf {
protected:
	REPLAY_NOINLINE std::streamsize xsputn(const char *s, std::streamsize n) override
	{
		take_snapshot();
		replay_sink += (unsigned long)n + (unsigned long)s[0];
		return n;
	}
};

REPLAY_NOINLINE void replay_once(int x)
{
	ReplayBuf buf;
	std::ostream os(&buf);

	os << "replay";
	replay_sink += (unsigned long)x;
}

REPLAY_NOINLINE bool replay_cmp(int a, int b)
{
	std::call_once(replay_flag, replay_once, a);
	replay_sink++;
	return a < b;
}

REPLAY_NOINLINE int replay_sort(int seed)
{
	std::vector<int> v;

	for (int i = 0; i < 64; i++)
		v.push_back((i * 7919 + seed) % 101);
	std::sort(v.begin(), v.end(), replay_cmp);
	replay_sink += (unsigned long)v.front();
	return v.back();
}

REPLAY_NOINLINE int replay_a(int x)
{
	int r = replay_sort(x);

	replay_sink += (unsigned long)r;
	return r + 1;
}

int main(int argc, char **argv)
{
	replay_init(argc, argv);
	int r = replay_a(argc);
	replay_sink += (unsigned long)r;
	return 0;
}
