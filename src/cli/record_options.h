/* Options of `stackscope record`, parsed and validated before anything is loaded. */
#ifndef STACKSCOPE_RECORD_OPTIONS_H
#define STACKSCOPE_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli/option_table.h"

enum output_format {
	OUTPUT_PPROF = 1,
	OUTPUT_FOLDED,
	OUTPUT_SVG,
};

#define RECORD_MAX_PIDS OPTION_MAX_PIDS
#define RECORD_MAX_OUTPUTS 4

struct record_output {
	const char *path;
	enum output_format format;
};

struct record_options {
	struct sampling_options common; /* -F (default 99), -p, --cache-dir, --off-cpu... */
	double duration_s;              /* 0: until Ctrl-C or the command exits */
	struct record_output outputs[RECORD_MAX_OUTPUTS];
	size_t output_cnt;                              /* at least 1 after parsing */
	enum output_format formats[RECORD_MAX_OUTPUTS]; /* --format as given, in order */
	size_t format_cnt;
	char **command; /* argv after "--", NULL-terminated, or NULL */
	const char *debug_dirs[RECORD_MAX_OUTPUTS * 2]; /* --debug-dir */
	size_t debug_dir_cnt;
	bool cpu; /* CPU samples: default, or --cpu with --off-cpu */
	bool quiet;
	bool fold_runtime; /* --fold runtime: folded and SVG outputs (profile/runtime_fold.h) */
	bool trace_frames; /* --trace-frames: folded/svg get a "[trace: ...]" frame per span */
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
