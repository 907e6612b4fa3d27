/* `stackscope symbolize IN -o OUT`: its options; the work is the offline symbolizer's
 * (pipeline/offline_symbolizer.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/output_file.h"
#include "cli/commands.h"
#include "cli/option_value.h"
#include "pipeline/offline_symbolizer.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope symbolize IN -o OUT [options]\n"
		"\n"
		"Fills in functions, source lines and inlined frames for the native frames of\n"
		"the pprof profile IN that are addresses (record --no-symbolize), from debug\n"
		"files found by build id or file name, and writes the result (gzipped pprof)\n"
		"to OUT.\n"
		"\n"
		"  -o, --output FILE          where to write the symbolized profile\n"
		"      --debug-dir DIR        also look there: DIR/.build-id/xx/yyyy.debug,\n"
		"                             DIR/<build id>/<name>, DIR/<name>; repeatable\n"
		"      --no-debuginfod        do not ask debuginfod (DEBUGINFOD_URLS) for files\n"
		"      --debuginfod-timeout S how long to wait for debuginfod (default %d s)\n"
		"  -v, --verbose              say where each file's debug info came from\n"
		"  -h, --help                 this help\n",
		SYM_DEFAULT_TIMEOUT_S);
}

#define opt_fail(...) return option_error("symbolize", __VA_ARGS__)

/* 0, 1 for --help (done), or -EINVAL after printing the problem. */
static int sym_options__parse(int argc, char **argv, struct offline_symbolizer_opts *o)
{
	enum { OPT_DEBUG_DIR = 256, OPT_NO_DEBUGINFOD, OPT_TIMEOUT };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "debuginfod-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long v;
	int c, err;

	memset(o, 0, sizeof(*o));
	o->debuginfod = true;
	o->debuginfod_timeout_s = SYM_DEFAULT_TIMEOUT_S;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case OPT_DEBUG_DIR:
			if (o->debug_dir_cnt >= SYM_MAX_DEBUG_DIRS)
				opt_fail("at most %d --debug-dir options", SYM_MAX_DEBUG_DIRS);
			err = option_value__directory(optarg);
			if (err)
				opt_fail("--debug-dir %s: %s", optarg, strerror(-err));
			o->debug_dirs[o->debug_dir_cnt++] = optarg;
			break;
		case OPT_NO_DEBUGINFOD:
			o->debuginfod = false;
			break;
		case OPT_TIMEOUT:
			if (option_value__ulong(optarg, 1, 3600, &v))
				opt_fail("--debuginfod-timeout takes 1-3600 seconds, not '%s'",
					 optarg);
			o->debuginfod_timeout_s = (int)v;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default: /* ':' or '?' */
			return option_error_getopt("symbolize", c, argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->in = argv[optind++];
	if (optind < argc)
		opt_fail("one input profile only ('%s' is extra)", argv[optind]);
	if (!o->in)
		opt_fail("no input profile (usage: stackscope symbolize IN -o OUT)");
	if (!o->out)
		opt_fail("no output file (-o OUT)");
	err = output_file__check(o->out);
	if (err)
		opt_fail("cannot write '%s': %s", o->out, output_file__strerror(err));
	return 0;
}

int cmd_symbolize(int argc, char **argv)
{
	struct offline_symbolizer_opts o;
	int err;

	err = sym_options__parse(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	if (o.verbose)
		log__set_level(LOG_DEBUG);
	return offline_symbolizer__run(&o);
}
