/* Options of `stackscope record`, parsed and validated before anything is loaded. */
#ifndef STACKSCOPE_RECORD_OPTIONS_H
#define STACKSCOPE_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum output_format {
	OUTPUT_PPROF = 1,
	OUTPUT_FOLDED,
	OUTPUT_SVG,
};

#define RECORD_MAX_PIDS 64
#define RECORD_MAX_OUTPUTS 4

struct record_output {
	const char *path;
	enum output_format format;
};

struct record_options {
	unsigned int freq_hz; /* 1..10000, default 99 */
	double duration_s;    /* 0: until Ctrl-C or the command exits */
	pid_t pids[RECORD_MAX_PIDS];
	size_t pid_cnt;
	struct record_output outputs[RECORD_MAX_OUTPUTS];
	size_t output_cnt;     /* at least 1 after parsing */
	char **command;        /* argv after "--", NULL-terminated, or NULL */
	const char *cache_dir; /* unwind-table cache; "" disables */
	const char *debug_dirs[RECORD_MAX_OUTPUTS * 2]; /* --debug-dir */
	size_t debug_dir_cnt;
	bool symbolize;
	bool off_cpu;              /* --off-cpu: an off-CPU profile */
	bool cpu;                  /* CPU samples: default, or --cpu with --off-cpu */
	uint64_t off_cpu_min_ns;   /* --off-cpu-min (microseconds on the command line) */
	unsigned int off_cpu_rate; /* --off-cpu-rate: stack walks per second (0: default) */
	bool verbose;
	bool quiet;
	bool help;
};

/* Parse argv (argv[0] is "record"). Returns 0, or -EINVAL after printing one clear error line
 * to stderr. Checks every -o path with output_file__check() (nothing written, a FIFO not
 * opened) and that every --debug-dir is a directory.
 */
int record_options__parse(int argc, char **argv, struct record_options *o);
void record_options__usage(FILE *f);

/* Format implied by a file name (".pb.gz", ".pprof", ".pb" -> pprof; ".folded", ".txt" ->
 * folded; ".svg" -> svg), or 0 if none.
 */
enum output_format output_format__from_path(const char *path);
enum output_format output_format__from_name(const char *name);

#endif
