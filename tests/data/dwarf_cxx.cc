// Fixture for the DWARF and demangling tests: C++ names (namespaces, templates, operators,
// lambdas, constructors) and inlining across them, built -O2 -g.
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace dwcxx {

template <typename T> struct Accumulator {
	T total{};
	__attribute__((always_inline)) inline void add(T v) { total += v * 3 + 1; }
	Accumulator &operator+=(T v)
	{
		add(v);
		return *this;
	}
};

template <typename T, int N> __attribute__((noinline)) T sum_squares(const std::vector<T> &v)
{
	Accumulator<T> acc;
	for (auto x : v)
		acc += x * x + N;
	return acc.total;
}

class Widget {
public:
	explicit Widget(int n) : n_(n) {}
	__attribute__((noinline)) long spin(long k) const
	{
		auto f = [this](long x) __attribute__((always_inline)) { return x * n_ + 7; };
		long r = 0;
		for (long i = 0; i < k; i++)
			r += f(i);
		return r;
	}

private:
	int n_;
};

} // namespace dwcxx

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	std::vector<long> v(n, 3);
	dwcxx::Widget w(n);

	std::printf("%ld %ld %d\n", dwcxx::sum_squares<long, 4>(v), w.spin(n),
		    dwcxx::sum_squares<int, 2>(std::vector<int>(n, 2)));
	return 0;
}
