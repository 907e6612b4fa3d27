/* `stackscope symbolize IN -o OUT`: its options; the work is the offline symbolizer's
 * (pipeline/offline_symbolizer.h).
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/output_file.h"
#include "cli/commands.h"
#include "cli/option_table.h"
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
#define SYM(f) offsetof(struct offline_symbolizer_opts, f)

static OPTION_SETTER(add_debug_dir)
{
	struct offline_symbolizer_opts *o = field;

	(void)spec;
	return option_add_debug_dir(command, arg, o->debug_dirs, SYM_MAX_DEBUG_DIRS,
				    &o->debug_dir_cnt, "at most %d --debug-dir options");
}

/* symbolize's options; -v and -h are the shared ones (option_table.c). */
static const struct option_spec sym_option_specs[] = {
	{ "output", 'o', true, option_set_string, SYM(out) },
	{ "debug-dir", 0, true, add_debug_dir, 0 },
	{ "no-debuginfod", 0, false, option_set_false, SYM(debuginfod) },
	{ "debuginfod-timeout", 0, true, option_set_uint, SYM(debuginfod_timeout_s), 1, 3600,
	  "--debuginfod-timeout takes 1-3600 seconds, not '%s'" },
	{ 0 },
};

/* 0, 1 for --help (done), or -EINVAL after printing the problem. */
static int sym_options__parse(int argc, char **argv, struct offline_symbolizer_opts *o)
{
	struct sampling_options common = { 0 };
	int err;

	memset(o, 0, sizeof(*o));
	o->debuginfod = true;
	o->debuginfod_timeout_s = SYM_DEFAULT_TIMEOUT_S;
	err = option_table__parse("symbolize", OPTION_SYMBOLIZE, &common, sym_option_specs, o,
				  false, argc, argv);
	o->verbose = common.verbose;
	if (err > 0)
		usage(stdout);
	if (err)
		return err;
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
