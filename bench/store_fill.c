/* bench/store.sh's filler: real interval profiles (pprof files the agent wrote) replayed into a
 * store as COUNT consecutive intervals, each a copy of the next file (round robin) moved to its
 * own time, INTERVAL_S apart, ending now. The first PPROF_CNT of them are also written as
 * pprof files into PPROF_DIR (the peer's input: the agent's pprof folder for that span).
 * Prints the write time per interval.
 * Usage: store_fill STORE COUNT INTERVAL_S PPROF_DIR PPROF_CNT FILE.pb.gz...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/pprof.h"
#include "export/pprof_read.h"
#include "profile/profile.h"
#include "store/pprof_import.h"
#include "store/store.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct store_opts so = { 0 };
	struct pprof_profile **in;
	struct store *st;
	char err[512], path[4096];
	long count, pprof_cnt, i;
	double interval_s, t0, write_s = 0;
	uint64_t end_ns;
	int n, k;

	if (argc < 7) {
		fprintf(stderr, "usage: store_fill STORE COUNT INTERVAL_S PPROF_DIR PPROF_CNT FILE...\n");
		return 2;
	}
	so.path = argv[1];
	count = strtol(argv[2], NULL, 10);
	interval_s = strtod(argv[3], NULL);
	pprof_cnt = strtol(argv[5], NULL, 10);
	n = argc - 6;
	in = calloc((size_t)n, sizeof(*in));
	for (k = 0; k < n; k++) {
		int e = pprof_profile__read(argv[6 + k], 0, &in[k]);

		if (e) {
			fprintf(stderr, "store_fill: %s: %s\n", argv[6 + k], strerror(-e));
			return 1;
		}
	}
	st = store__open(&so, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "store_fill: %s\n", err);
		return 1;
	}
	end_ns = (uint64_t)time(NULL) * 1000000000ULL;
	for (i = 0; i < count; i++) {
		struct pprof_profile *pp = in[i % n];
		struct profile *p = NULL;
		int e;

		pp->time_nanos = (int64_t)(end_ns - (uint64_t)((double)(count - i) * interval_s * 1e9));
		pp->duration_nanos = (int64_t)(interval_s * 1e9);
		e = pprof_import(pp, &p);
		if (e) {
			fprintf(stderr, "store_fill: import: %s\n", strerror(-e));
			return 1;
		}
		t0 = now_s();
		e = store__write(st, p, NULL, NULL);
		write_s += now_s() - t0;
		if (e) {
			fprintf(stderr, "store_fill: write: %s\n", strerror(-e));
			return 1;
		}
		if (i < pprof_cnt) {
			snprintf(path, sizeof(path), "%s/%06ld.pb.gz", argv[4], i);
			e = pprof__write(p, path);
			if (e) {
				fprintf(stderr, "store_fill: %s: %s\n", path, strerror(-e));
				return 1;
			}
		}
		profile__free(p);
	}
	printf("write_ms_per_interval %.2f\n", write_s * 1e3 / (double)count);
	store__close(st);
	for (k = 0; k < n; k++)
		pprof_profile__free(in[k]);
	free(in);
	return 0;
}
