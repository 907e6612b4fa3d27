/* Options as tables: the shared table and the parser. See option_table.h. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include "base/log.h"
#include "cli/option_table.h"
#include "cli/option_value.h"
#include "interp/otel/obi_map.h"
#include "pipeline/session.h"
#include "sampler/map_sizing.h"
#include "sampler/mem_alloc.h"
#include "sampler/mem_growth.h"
#include "sampler/off_cpu.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define bad_value(spec, command, arg) option_error(command, (spec)->error, arg)

OPTION_SETTER(option_set_true)
{
	(void)spec, (void)arg, (void)command;
	*(bool *)field = true;
	return 0;
}

OPTION_SETTER(option_set_false)
{
	(void)spec, (void)arg, (void)command;
	*(bool *)field = false;
	return 0;
}

OPTION_SETTER(option_set_string)
{
	(void)spec, (void)command;
	*(const char **)field = arg;
	return 0;
}

OPTION_SETTER(option_set_ulong)
{
	if (option_value__ulong(arg, (unsigned long)spec->min, (unsigned long)spec->max, field))
		return bad_value(spec, command, arg);
	return 0;
}

/* A setter of a whole number of another type: type and value (from v) of the field. */
#define WHOLE_SETTER(name, type, value)                             \
	OPTION_SETTER(name)                                         \
	{                                                           \
		unsigned long v;                                    \
		int err = option_set_ulong(spec, arg, &v, command); \
                                                                    \
		if (!err)                                           \
			*(type *)field = (value);                   \
		return err;                                         \
	}
WHOLE_SETTER(option_set_uint, unsigned int, (unsigned int)v)
WHOLE_SETTER(option_set_u64, uint64_t, v)
WHOLE_SETTER(option_set_mib, uint64_t, (uint64_t)v << 20)

OPTION_SETTER(option_set_double)
{
	if (option_value__double(arg, spec->min, spec->max, field))
		return bad_value(spec, command, arg);
	return 0;
}

OPTION_SETTER(option_set_hours)
{
	int err = option_set_double(spec, arg, field, command);

	if (!err)
		*(double *)field *= 3600;
	return err;
}

int option_add_debug_dir(const char *command, const char *arg, const char **dirs, size_t cap,
			 size_t *cnt, const char *too_many)
{
	int err;

	if (*cnt >= cap)
		return option_error(command, too_many, (int)cap);
	err = option_value__directory(arg);
	if (err)
		return option_error(command, "--debug-dir %s: %s", arg, strerror(-err));
	dirs[(*cnt)++] = arg;
	return 0;
}

/* -F: a whole number of Hz ("99", "1e3"). */
static OPTION_SETTER(set_freq)
{
	double hz;

	if (option_value__double(arg, spec->min, spec->max, &hz) || hz != floor(hz))
		return bad_value(spec, command, arg);
	*(unsigned int *)field = (unsigned int)hz;
	return 0;
}

static OPTION_SETTER(set_pids)
{
	struct sampling_options *o = field;

	if (option_value__pid_list(arg, o->pids, OPTION_MAX_PIDS, &o->pid_cnt))
		return bad_value(spec, command, arg);
	return 0;
}

/* --off-cpu-min and --off-cpu-rate (spec->max != 0), with the sampler's rules and words. */
static OPTION_SETTER(set_off_cpu)
{
	struct sampling_options *o = field;
	bool rate = spec->max != 0;

	if (off_cpu__parse_option(rate, arg, &o->off_cpu_min_ns, &o->off_cpu_rate))
		return option_error(command, "%s, not '%s'", off_cpu__option_usage(rate), arg);
	return 0;
}

static OPTION_SETTER(set_fault_period)
{
	struct sampling_options *o = field;

	(void)spec;
	if (mem_growth__parse_period(arg, &o->fault_period))
		return option_error(command,
				    "--fault-period must be page faults per sample (1-1000000000), "
				    "not '%s'",
				    arg);
	return 0;
}

static OPTION_SETTER(set_alloc_rate)
{
	struct sampling_options *o = field;

	(void)spec;
	if (mem_alloc__parse_rate(arg, &o->alloc_rate))
		return option_error(command,
				    "--alloc-rate must be mean bytes between samples "
				    "(1-1073741824), not '%s'",
				    arg);
	return 0;
}

/* --select-KIND / --exclude-KIND: the kind in spec->min, exclude in spec->max. */
static OPTION_SETTER(set_selection)
{
	struct sampling_options *o = field;
	char why[256];

	if (selection_spec__add(&o->select, (enum selection_kind)spec->min, spec->max != 0, arg,
				why, sizeof(why)))
		return option_error(command, "%s", why);
	return 0;
}

static OPTION_SETTER(set_help)
{
	option_set_true(spec, arg, field, command);
	return 1;
}

#define COMMON(f) offsetof(struct sampling_options, f)
#define ALL (OPTION_RECORD | OPTION_AGENT | OPTION_TOP)

static const struct option_spec shared_options[] = {
	{ "freq", 'F', true, set_freq, COMMON(freq_hz), 1, 10000,
	  "-F must be a frequency between 1 and 10000 Hz, not '%s'", ALL },
	{ "pid", 'p', true, set_pids, 0, 0, 0,
	  "-p takes PID[,PID...] (at most " STR(OPTION_MAX_PIDS) "), not '%s'",
	  OPTION_RECORD | OPTION_TOP },
	{ "no-symbolize", 0, false, option_set_false, COMMON(symbolize), 0, 0, NULL,
	  OPTION_RECORD | OPTION_AGENT },
	{ "cache-dir", 0, true, option_set_string, COMMON(cache_dir), 0, 0, NULL, ALL },
	{ "off-cpu", 0, false, option_set_true, COMMON(off_cpu), 0, 0, NULL,
	  OPTION_RECORD | OPTION_AGENT },
	{ "off-cpu-min", 0, true, set_off_cpu, 0, 0, 0, NULL, OPTION_RECORD | OPTION_AGENT },
	{ "off-cpu-rate", 0, true, set_off_cpu, 0, 0, 1, NULL, OPTION_RECORD | OPTION_AGENT },
	{ "faults", 0, false, option_set_true, COMMON(faults), 0, 0, NULL,
	  OPTION_RECORD | OPTION_AGENT },
	{ "fault-period", 0, true, set_fault_period, 0, 0, 0, NULL, OPTION_RECORD | OPTION_AGENT },
	{ "alloc", 0, false, option_set_true, COMMON(alloc), 0, 0, NULL,
	  OPTION_RECORD | OPTION_AGENT },
	{ "alloc-rate", 0, true, set_alloc_rate, 0, 0, 0, NULL, OPTION_RECORD | OPTION_AGENT },
#define SELECT_RULE(name, kind, exclude)                                                           \
	{                                                                                          \
		name, 0, true, set_selection, 0, kind, exclude, NULL, OPTION_RECORD | OPTION_AGENT \
	}
	SELECT_RULE("select-pid", SELECTION_PID, 0),
	SELECT_RULE("select-name", SELECTION_NAME, 0),
	SELECT_RULE("select-cgroup", SELECTION_CGROUP, 0),
	SELECT_RULE("select-container", SELECTION_CONTAINER, 0),
	SELECT_RULE("select-pod", SELECTION_POD, 0),
	SELECT_RULE("exclude-pid", SELECTION_PID, 1),
	SELECT_RULE("exclude-name", SELECTION_NAME, 1),
	SELECT_RULE("exclude-cgroup", SELECTION_CGROUP, 1),
	SELECT_RULE("exclude-container", SELECTION_CONTAINER, 1),
	SELECT_RULE("exclude-pod", SELECTION_POD, 1),
	{ "map-scale", 0, true, option_set_uint, COMMON(map_scale), 1, MAP_SCALE_MAX,
	  "--map-scale must be a factor between 1 and " STR(MAP_SCALE_MAX) ", not '%s'",
	  OPTION_RECORD | OPTION_AGENT },
	{ "obi-map", 0, true, option_set_string, COMMON(obi_map), 0, 0, NULL,
	  OPTION_RECORD | OPTION_AGENT },
	{ "verbose", 'v', false, option_set_true, COMMON(verbose), 0, 0, NULL,
	  ALL | OPTION_SYMBOLIZE },
	{ "help", 'h', false, set_help, COMMON(help), 0, 0, NULL, ALL | OPTION_SYMBOLIZE },
};

void sampling_options__init(struct sampling_options *o, unsigned int freq_hz)
{
	memset(o, 0, sizeof(*o));
	o->freq_hz = freq_hz;
	o->symbolize = true;
	o->cache_dir = SESSION_DEFAULT_CACHE_DIR;
	o->off_cpu_min_ns = OFF_CPU_DEFAULT_MIN_NS;
	o->obi_map = OBI_MAP_DEFAULT_PATH;
}

/* One option a command takes, with where its field lives. */
struct option_use {
	const struct option_spec *spec;
	void *base;
};

int option_table__parse(const char *command, unsigned int command_bit,
			struct sampling_options *common, const struct option_spec *own, void *opts,
			bool posix, int argc, char **argv)
{
	struct option longopts[OPTION_TABLE_MAX + 1];
	struct option_use uses[OPTION_TABLE_MAX];
	char optstring[2 * OPTION_TABLE_MAX + 3], *p = optstring;
	size_t n = 0, i;
	int c, err;

	for (i = 0; i < sizeof(shared_options) / sizeof(shared_options[0]); i++)
		if (shared_options[i].commands & command_bit)
			uses[n++] = (struct option_use){ &shared_options[i], common };
	for (; own->name && n < OPTION_TABLE_MAX; own++)
		uses[n++] = (struct option_use){ own, opts };
	if (posix)
		*p++ = '+';
	*p++ = ':'; /* ':' for a missing value, '?' for an unknown option */
	for (i = 0; i < n; i++) {
		const struct option_spec *s = uses[i].spec;

		longopts[i] = (struct option){ s->name,
					       s->has_arg ? required_argument : no_argument, NULL,
					       s->letter ? s->letter : 256 + (int)i };
		if (s->letter) {
			*p++ = (char)s->letter;
			if (s->has_arg)
				*p++ = ':';
		}
	}
	*p = '\0';
	memset(&longopts[n], 0, sizeof(longopts[n]));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		for (i = 0; i < n; i++)
			if (longopts[i].val == c)
				break;
		if (i == n) /* ':' or '?' */
			return option_error_getopt(command, c, argv[optind - 1]);
		err = uses[i].spec->set(uses[i].spec, optarg,
					(char *)uses[i].base + uses[i].spec->offset, command);
		if (err)
			return err;
	}
	return 0;
}

bool sampling_options__begin(const struct sampling_options *o, void (*usage)(FILE *f),
			     int quiet_level, bool raise_fds)
{
	struct rlimit rl;

	if (o->help) {
		usage(stdout);
		return true;
	}
	log__set_level(o->verbose ? LOG_DEBUG : (enum log_level)quiet_level);
	if (raise_fds && !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return false;
}
