/* Driver for bench/symbolize.sh: symbolizes a list of ELF addresses (hex, one a line, on
 * stdin) in FILE with src/formats/dwarf.c and prints one line of results:
 *   addrs=N found=N inline=N secs=S rate=R/s index_kb=K cache_kb=K rss_kb=K
 * The first pass resolves every (unique) address; a second pass over the same list shows the
 * direct-mapped cache (sized 2x the list: most, not all, addresses hit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/dwarf.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	}
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	struct dwarf_opts opts = { .demangle = true };
	size_t n = 0, cap = 0, i, found = 0, inlined = 0;
	uint64_t *addrs = NULL, *tmp;
	const struct dwarf_line *lines;
	struct dwarf_stats st;
	struct dwarf_file *df;
	char line[64];
	double t0, t1, t2;
	long rss0;
	int cnt;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE < addresses\n", argv[0]);
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			tmp = realloc(addrs, cap * sizeof(*addrs));
			if (!tmp)
				return 1;
			addrs = tmp;
		}
		addrs[n++] = strtoull(line, NULL, 16);
	}
	opts.cache_cap = n * 2;
	rss0 = rss_kb();
	df = dwarf_file__open(argv[1], &opts);
	if (!df) {
		perror(argv[1]);
		return 1;
	}
	t0 = now_s();
	for (i = 0; i < n; i++) {
		cnt = dwarf_file__lookup(df, addrs[i], &lines);
		found += cnt > 0;
		inlined += cnt > 1;
	}
	t1 = now_s();
	for (i = 0; i < n; i++)
		dwarf_file__lookup(df, addrs[i], &lines);
	t2 = now_s();
	dwarf_file__stats(df, &st);
	printf("addrs=%zu found=%zu inline=%zu secs=%.3f rate=%.0f/s second_pass_rate=%.0f/s "
	       "units=%zu index_kb=%zu cache_kb=%zu rss_delta_kb=%ld\n",
	       n, found, inlined, t1 - t0, n / (t1 - t0 > 0 ? t1 - t0 : 1e-9),
	       n / (t2 - t1 > 0 ? t2 - t1 : 1e-9), st.unit_cnt, st.index_sz / 1024,
	       st.cache_sz / 1024, rss_kb() - rss0);
	dwarf_file__free(df);
	free(addrs);
	return 0;
}
