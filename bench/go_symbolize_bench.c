/* Driver for bench/go_symbolize.sh: symbolizes a list of ELF addresses (hex, one a line, on
 * stdin) in a Go executable FILE with src/formats/gopclntab.c (function, file, line, inlined
 * calls) and prints one line: addrs=N found=N inline=N secs=S rate=R/s
 * No cache: every address is decoded from the table (what the trace handler does per frame).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "formats/elf_file.h"
#include "formats/gopclntab.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct elf_file *ef = argc > 1 ? elf_file__open(argv[1]) : NULL;
	struct gopclntab *t = ef ? gopclntab__open(ef) : NULL;
	size_t n = 0, cap = 0, i, found = 0, inlined = 0;
	unsigned long long *addrs = NULL, a;
	double t0, secs;

	if (!t) {
		fprintf(stderr, "usage: %s GO_EXECUTABLE < addresses\n", argv[0]);
		return 1;
	}
	while (scanf("%llx", &a) == 1) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n++] = a;
	}
	t0 = now_s();
	for (i = 0; i < n; i++) {
		struct go_frame fr[GO_MAX_FRAMES];
		int k = gopclntab__lookup(t, addrs[i], fr, GO_MAX_FRAMES);

		found += k > 0;
		inlined += k > 1;
	}
	secs = now_s() - t0;
	printf("addrs=%zu found=%zu inline=%zu secs=%.4f rate=%.0f/s\n", n, found, inlined, secs,
	       secs > 0 ? (double)n / secs : 0.0);
	free(addrs);
	gopclntab__free(t);
	elf_file__free(ef);
	return 0;
}
