/* `stackscope record` option parsing and validation. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/output_file.h"
#include "cli/option_value.h"
#include "cli/record_options.h"
#include "sampler/off_cpu.h"

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
		"  -p, --pid PID[,PID]    only these processes\n"
		"  -o, --output FILE      output file (default stackscope.pb.gz); repeatable; '-' is\n"
		"                         stdout; a FIFO's reader must be there at the end\n"
		"  -f, --format FMT       pprof | folded | svg (default: from the file name)\n"
		"      --off-cpu          where threads wait instead of where they run: stacks at\n"
		"                         the moment a thread left the CPU, weighted by the time\n"
		"                         it stayed off (ns), leaf [off-cpu: sleep|uninterruptible|\n"
		"                         preempted|...]; --cpu too: both, one profile\n"
		"      --cpu              CPU samples (the default; with --off-cpu: both)\n"
		"      --off-cpu-min USECS  skip shorter stays off CPU (default 1000, counted)\n"
		"      --off-cpu-rate N   at most N off-CPU stack walks per second (default 2000;\n"
		"                         the rest are counted with their time)\n"
		"      --no-symbolize     write addresses and build ids only\n"
		"      --cache-dir DIR    unwind-table cache (default /var/cache/stackscope, \"\" = off)\n"
		"      --debug-dir DIR    also look for debug files there (build-id tree or by name);\n"
		"                         DEBUGINFOD_URLS is used when set\n"
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

int record_options__parse(int argc, char **argv, struct record_options *o)
{
	enum {
		OPT_NO_SYMBOLIZE = 256,
		OPT_CACHE_DIR,
		OPT_DEBUG_DIR,
		OPT_OFF_CPU,
		OPT_CPU,
		OPT_OFF_CPU_MIN,
		OPT_OFF_CPU_RATE,
	};
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-symbolize", no_argument, NULL, OPT_NO_SYMBOLIZE },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "cpu", no_argument, NULL, OPT_CPU },
		{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
		{ "off-cpu-rate", required_argument, NULL, OPT_OFF_CPU_RATE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum output_format formats[RECORD_MAX_OUTPUTS] = { 0 };
	size_t format_cnt = 0, i;
	unsigned long v;
	int c, err;

	memset(o, 0, sizeof(*o));
	o->freq_hz = 99;
	o->symbolize = true;
	o->cache_dir = "/var/cache/stackscope";
	o->off_cpu_min_ns = OFF_CPU_DEFAULT_MIN_NS;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:F:d:p:o:f:qvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (option_value__ulong(optarg, 1, 10000, &v))
				fail("-F must be a frequency between 1 and 10000 Hz, not '%s'",
				     optarg);
			o->freq_hz = (unsigned int)v;
			break;
		case 'd':
			if (option_value__double(optarg, 0, 365.0 * 86400, &o->duration_s) ||
			    !(o->duration_s > 0))
				fail("-d must be a positive number of seconds, not '%s'", optarg);
			break;
		case 'p':
			if (option_value__pid_list(optarg, o->pids, RECORD_MAX_PIDS, &o->pid_cnt))
				fail("-p takes PID[,PID...] (at most %d), not '%s'",
				     RECORD_MAX_PIDS, optarg);
			break;
		case 'o':
			if (o->output_cnt >= RECORD_MAX_OUTPUTS)
				fail("at most %d -o outputs", RECORD_MAX_OUTPUTS);
			o->outputs[o->output_cnt++].path = optarg;
			break;
		case 'f':
			if (format_cnt >= RECORD_MAX_OUTPUTS)
				fail("too many --format options");
			formats[format_cnt] = output_format__from_name(optarg);
			if (!formats[format_cnt])
				fail("unknown format '%s' (pprof, folded or svg)", optarg);
			format_cnt++;
			break;
		case OPT_NO_SYMBOLIZE:
			o->symbolize = false;
			break;
		case OPT_CACHE_DIR:
			o->cache_dir = optarg;
			break;
		case OPT_DEBUG_DIR:
			if (o->debug_dir_cnt >= sizeof(o->debug_dirs) / sizeof(o->debug_dirs[0]))
				fail("too many --debug-dir options");
			err = option_value__directory(optarg);
			if (err)
				fail("--debug-dir %s: %s", optarg, strerror(-err));
			o->debug_dirs[o->debug_dir_cnt++] = optarg;
			break;
		case OPT_OFF_CPU:
			o->off_cpu = true;
			break;
		case OPT_CPU:
			o->cpu = true;
			break;
		case OPT_OFF_CPU_MIN:
		case OPT_OFF_CPU_RATE:
			if (off_cpu__parse_option(c == OPT_OFF_CPU_RATE, optarg, &o->off_cpu_min_ns,
						  &o->off_cpu_rate))
				fail("%s, not '%s'", off_cpu__option_usage(c == OPT_OFF_CPU_RATE),
				     optarg);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			o->help = true;
			return 0;
		default: /* ':' or '?' */
			return option_error_getopt("record", c, argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->command = &argv[optind]; /* after "--", or the first non-option */
	if (o->command && o->pid_cnt)
		fail("-p and a COMMAND cannot be combined");
	if (!o->off_cpu)
		o->cpu = true;
	if (!o->output_cnt)
		o->outputs[o->output_cnt++].path = "stackscope.pb.gz";
	if (format_cnt > 1 && format_cnt != o->output_cnt)
		fail("give one --format, or one per -o");
	for (i = 0; i < o->output_cnt; i++) {
		struct record_output *out = &o->outputs[i];

		out->format = format_cnt ? formats[format_cnt == 1 ? 0 : i]
					 : output_format__from_path(out->path);
		if (!out->format)
			out->format = OUTPUT_PPROF;
		err = output_file__check(out->path);
		if (err)
			fail("cannot write '%s': %s", out->path, output_file__strerror(err));
	}
	return 0;
}
