/* `stackscope record` option parsing and validation. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/output_file.h"
#include "cli/option_value.h"
#include "cli/record_options.h"
#include "profile/runtime_fold.h"

void record_options__usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope record [options] [-- COMMAND [ARGS...]]\n"
		"\n"
		"Samples every thread on every online CPU (or only COMMAND's process tree, or -p)\n"
		"and writes the stacks as pprof, folded stacks or an SVG flamegraph.\n"
		"\n"
		"  -F, --freq HZ          samples per second per CPU (1-10000, default 99)\n"
		"  -d, --duration SECS    stop after SECS seconds (default: Ctrl-C or COMMAND exit)\n"
		"  -p, --pid PID[,PID]    only these processes\n" SELECTION_USAGE
		"  -o, --output FILE      output file (default stackscope.pb.gz); repeatable; '-' is\n"
		"                         stdout; a FIFO's reader must be there at the end\n"
		"  -f, --format FMT       pprof | folded | svg (default: from the file name)\n"
		"      --fold runtime     folded and SVG outputs without the interpreter's native\n"
		"                         frames between two script frames (pprof keeps them)\n"
		"      --off-cpu          where threads wait instead of where they run: stacks at\n"
		"                         the moment a thread left the CPU, weighted by the time\n"
		"                         it stayed off (ns), leaf [off-cpu: sleep|uninterruptible|\n"
		"                         preempted|...]; --cpu too: both, one profile\n"
		"      --cpu              CPU samples (the default; with --off-cpu or --faults: both)\n"
		"      --faults           where memory grows: page faults (one stack every\n"
		"                         --fault-period faults, default 64; types faults,\n"
		"                         fault_bytes) and brk()/anonymous mmap() calls (type\n"
		"                         mapped_bytes), leaf [mem: page fault|brk|mmap]\n"
		"      --alloc            what is allocated and still live: uprobes on libc's malloc\n"
		"                         family, sampled by bytes (types alloc_objects, alloc_space,\n"
		"                         inuse_objects, inuse_space), leaf [alloc: malloc|...]\n"
		"      --alloc-rate BYTES mean bytes between allocation samples (default 524288)\n"
		"      --off-cpu-min USECS  skip shorter stays off CPU (default 1000, counted)\n"
		"      --off-cpu-rate N   at most N off-CPU stack walks per second (default 2000;\n"
		"                         the rest are counted with their time)\n"
		"      --map-scale N      BPF maps N times what the machine and its processes at\n"
		"                         start suggest (1-64)\n"
		"      --no-symbolize     write addresses and build ids only\n"
		"      --cache-dir DIR    unwind-table cache (default /var/cache/stackscope, \"\" = off)\n"
		"      --debug-dir DIR    also look for debug files there (build-id tree or by name);\n"
		"                         DEBUGINFOD_URLS is used when set\n"
		"      --trace-frames     folded: a [trace: ID span ID] frame under the process\n"
		"                         name for samples taken in an OpenTelemetry span\n"
		"      --obi-map PATH     OBI's pinned span map traces_ctx_v1 (default\n"
		"                         /sys/fs/bpf/otel/traces_ctx_v1; \"\" = not read)\n"
		"  -q, --quiet            no summary\n"
		"  -v, --verbose          debug logging\n"
		"  -h, --help             this help\n");
}

enum output_format output_format__from_name(const char *name)
{
	if (!strcmp(name, "pprof"))
		return OUTPUT_PPROF;
	if (!strcmp(name, "folded"))
		return OUTPUT_FOLDED;
	if (!strcmp(name, "svg"))
		return OUTPUT_SVG;
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

enum output_format output_format__from_path(const char *path)
{
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") || ends_with(path, ".pb"))
		return OUTPUT_PPROF;
	if (ends_with(path, ".folded") || ends_with(path, ".txt"))
		return OUTPUT_FOLDED;
	if (ends_with(path, ".svg"))
		return OUTPUT_SVG;
	return 0;
}

#define fail(...) return option_error("record", __VA_ARGS__)
#define RECORD(f) offsetof(struct record_options, f)

static OPTION_SETTER(set_duration)
{
	double *d = field;

	if (option_value__double(arg, spec->min, spec->max, d) || !(*d > 0))
		return option_error(command, spec->error, arg);
	return 0;
}

static OPTION_SETTER(add_output)
{
	struct record_options *o = field;

	(void)spec;
	if (o->output_cnt >= RECORD_MAX_OUTPUTS)
		return option_error(command, "at most %d -o outputs", RECORD_MAX_OUTPUTS);
	o->outputs[o->output_cnt++].path = arg;
	return 0;
}

static OPTION_SETTER(add_format)
{
	struct record_options *o = field;

	if (o->format_cnt >= RECORD_MAX_OUTPUTS)
		return option_error(command, "too many --format options");
	o->formats[o->format_cnt] = output_format__from_name(arg);
	if (!o->formats[o->format_cnt])
		return option_error(command, spec->error, arg);
	o->format_cnt++;
	return 0;
}

static OPTION_SETTER(add_debug_dir)
{
	struct record_options *o = field;

	(void)spec;
	return option_add_debug_dir(command, arg, o->debug_dirs,
				    sizeof(o->debug_dirs) / sizeof(o->debug_dirs[0]),
				    &o->debug_dir_cnt, "too many --debug-dir options");
}

static OPTION_SETTER(set_fold)
{
	if (runtime_fold__parse(arg, field))
		return option_error(command, spec->error, arg);
	return 0;
}

/* record's own options; -F, -p, --off-cpu... are shared (option_table.c). */
static const struct option_spec record_option_specs[] = {
	{ "duration", 'd', true, set_duration, RECORD(duration_s), 0, 365.0 * 86400,
	  "-d must be a positive number of seconds, not '%s'" },
	{ "output", 'o', true, add_output, 0 },
	{ "format", 'f', true, add_format, 0, 0, 0, "unknown format '%s' (pprof, folded or svg)" },
	{ "debug-dir", 0, true, add_debug_dir, 0 },
	{ "cpu", 0, false, option_set_true, RECORD(cpu) },
	{ "quiet", 'q', false, option_set_true, RECORD(quiet) },
	{ "fold", 0, true, set_fold, RECORD(fold_runtime), 0, 0,
	  "--fold takes 'runtime' or 'none', not '%s'" },
	{ "trace-frames", 0, false, option_set_true, RECORD(trace_frames) },
	{ 0 },
};

int record_options__parse(int argc, char **argv, struct record_options *o)
{
	size_t i;
	int err;

	memset(o, 0, sizeof(*o));
	sampling_options__init(&o->common, 99);
	err = option_table__parse("record", OPTION_RECORD, &o->common, record_option_specs, o, true,
				  argc, argv);
	if (err)
		return err < 0 ? err : 0;
	if (optind < argc)
		o->command = &argv[optind]; /* after "--", or the first non-option */
	if (o->command && o->common.pid_cnt)
		fail("-p and a COMMAND cannot be combined");
	if (!o->common.off_cpu && !o->common.faults && !o->common.alloc)
		o->cpu = true;
	if (!o->output_cnt)
		o->outputs[o->output_cnt++].path = "stackscope.pb.gz";
	if (o->format_cnt > 1 && o->format_cnt != o->output_cnt)
		fail("give one --format, or one per -o");
	for (i = 0; i < o->output_cnt; i++) {
		struct record_output *out = &o->outputs[i];

		out->format = o->format_cnt ? o->formats[o->format_cnt == 1 ? 0 : i]
					    : output_format__from_path(out->path);
		if (!out->format)
			out->format = OUTPUT_PPROF;
		err = output_file__check(out->path);
		if (err)
			fail("cannot write '%s': %s", out->path, output_file__strerror(err));
	}
	return 0;
}
