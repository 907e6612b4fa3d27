// Fixture for tests/unit/test_cfi.c: C++ with exceptions (personality + LSDA augmentations,
// landing pads, remember/restore_state around cold paths, stack arguments).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

struct Guard {
	std::string name;
	explicit Guard(const char *n) : name(n) {}
	~Guard() { std::fputs(name.c_str(), stderr); }
};

__attribute__((noinline)) static long many_args(long a, long b, long c, long d, long e, long f,
						long g, long h, long i)
{
	if (a + b + c > 1000)
		throw std::runtime_error("too big");
	return a + b + c + d + e + f + g + h + i;
}

__attribute__((noinline)) static long thrower(int n)
{
	Guard g("g");
	std::vector<long> v(static_cast<size_t>(n) + 1, 1);
	if (n > 3)
		throw std::out_of_range(std::to_string(n));
	return many_args(v[0], n, n, n, n, n, n, n, n);
}

__attribute__((noinline)) static long catcher(int n)
{
	long r = 0;
	for (int i = 0; i < n; i++) {
		try {
			r += thrower(i);
		} catch (const std::out_of_range &e) {
			r -= static_cast<long>(e.what()[0]);
		} catch (...) {
			r -= 1;
		}
	}
	return r;
}

int main(int argc, char **)
{
	std::printf("%ld\n", catcher(argc + 5));
	return 0;
}
