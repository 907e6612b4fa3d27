// std::sort with a comparator functor: main -> sort_loop -> std::sort internals ->
// ItemCompare::operator(). Names come out mangled (_ZN11ItemCompareclE... ) until the
// symbolizer demangles, so the test asserts on the stable substring "ItemCompare".
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

static volatile unsigned long sink;

struct ItemCompare {
	__attribute__((noinline)) bool operator()(int a, int b) const
	{
		for (int i = 0; i < 40; i++)
			sink += (unsigned long)(a ^ i) * 31u;
		return a < b;
	}
};

__attribute__((noinline)) static void sort_loop(double secs)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
	std::mt19937 rng(1);
	std::vector<int> v(4096);

	while (std::chrono::steady_clock::now() < end) {
		for (auto &x : v)
			x = (int)rng();
		std::sort(v.begin(), v.end(), ItemCompare());
	}
	sink++;
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? std::strtod(argv[1], nullptr) : 2.0;

	if (!(s > 0) || s > 60)
		s = 2.0;
	sort_loop(s);
	return 0;
}
