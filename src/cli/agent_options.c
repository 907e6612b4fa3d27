/* `stackscope agent` options (flags). The OTEL_EXPORTER_OTLP_* environment is read by the OTLP
 * configuration (export/otlp_client.c); these flags override it.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/agent_options.h"
#include "cli/commands.h"
#include "cli/option_value.h"
#include "sampler/off_cpu.h"

void agent_options__usage(FILE *f)
{
	fprintf(f,
		"usage: stackscope agent [options]\n"
		"\n"
		"Profiles every process continuously and exports one profile per interval: as OTLP\n"
		"profiles when an endpoint is configured, else into the embedded store (or as\n"
		"pprof files with --output-dir; with an endpoint, the store only with --store).\n"
		"Stops cleanly on SIGINT/SIGTERM after flushing the last interval.\n"
		"\n"
		"  -F, --freq HZ              samples per second per CPU (default 19)\n"
		"      --interval SECS        report interval (default 5)\n"
		"      --otlp-endpoint URL    OTLP receiver (env OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,\n"
		"                             OTEL_EXPORTER_OTLP_ENDPOINT)\n"
		"      --otlp-protocol P      http/protobuf (default) or grpc (env OTEL_EXPORTER_OTLP_PROTOCOL)\n"
		"      --otlp-headers K=V,..  extra headers (env OTEL_EXPORTER_OTLP_HEADERS)\n"
		"      --otlp-ca-file FILE    CA bundle for https (default: system CAs)\n"
		"      --queue-max-mb N       export queue bound; oldest dropped beyond (default 32)\n"
		"      --output-dir DIR       pprof files without an endpoint (default /var/lib/stackscope;\n"
		"                             root's alone: not a symlink, not writable by others)\n"
		"      --output-max-mb N      cap of that folder, oldest deleted first (default 256)\n"
		"      --store FILE           the embedded store (default /var/lib/stackscope/profiles.db\n"
		"                             without an endpoint or --output-dir; read it with\n"
		"                             'stackscope store')\n"
		"      --store-max-mb N       its size cap, oldest intervals dropped first (default 256)\n"
		"      --store-max-age HOURS  its age cap (default 168: 7 days)\n"
		"      --metrics-addr H:P     Prometheus text on http://H:P/metrics\n"
		"      --ui H:P               the web UI over the store on http://H:P/ (as\n"
		"                             'stackscope serve'; e.g. 127.0.0.1:7434)\n"
		"      --log-interval SECS    counters in the log (default 60)\n"
		"      --cache-dir DIR        unwind-table cache (default /var/cache/stackscope, \"\" = off)\n"
		"      --unwind-entries N     unwind-table pool in BPF, 4 bytes each (default 2097152);\n"
		"                             when full, the least recently sampled tables make room;\n"
		"                             files still beyond it use frame pointers (counted)\n"
		"      --include-cmdline      send process command lines (may hold secrets)\n"
		"      --include-env          send process environments (may hold secrets)\n"
		"      --no-symbolize         send addresses and build ids only\n"
		"      --symbolize-lines      also source lines and inline frames from debug info found\n"
		"                             on the host or via DEBUGINFOD_URLS (costs memory)\n"
		"      --off-cpu              also where threads wait: an off-CPU profile (off_cpu/\n"
		"                             nanoseconds) next to the CPU one, in the same request\n"
		"      --off-cpu-min USECS    skip shorter stays off CPU (default 1000, counted)\n"
		"      --off-cpu-rate N       at most N off-CPU stack walks per second (default 2000)\n"
		"  -v, --verbose              debug logging\n"
		"  -h, --help                 this help\n");
}

#define fail(...) return option_error("agent", __VA_ARGS__)

/* A size in MiB (1 MiB to 1 TiB), in bytes. */
static int parse_mb(const char *s, uint64_t *out)
{
	unsigned long v;

	if (option_value__ulong(s, 1, 1024 * 1024, &v))
		return -EINVAL;
	*out = (uint64_t)v << 20;
	return 0;
}

int agent_options__parse(int argc, char **argv, struct agent_options *o)
{
	enum {
		OPT_INTERVAL = 256,
		OPT_ENDPOINT,
		OPT_PROTOCOL,
		OPT_HEADERS,
		OPT_CA,
		OPT_QUEUE,
		OPT_OUTDIR,
		OPT_OUTMAX,
		OPT_METRICS,
		OPT_LOGINT,
		OPT_CMDLINE,
		OPT_ENV,
		OPT_NOSYM,
		OPT_CACHE,
		OPT_ENTRIES,
		OPT_LINES,
		OPT_STORE,
		OPT_STOREMAX,
		OPT_STOREAGE,
		OPT_OFF_CPU,
		OPT_OFF_CPU_MIN,
		OPT_OFF_CPU_RATE,
		OPT_UI,
	};
	static const struct option longopts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "otlp-endpoint", required_argument, NULL, OPT_ENDPOINT },
		{ "otlp-protocol", required_argument, NULL, OPT_PROTOCOL },
		{ "otlp-headers", required_argument, NULL, OPT_HEADERS },
		{ "otlp-ca-file", required_argument, NULL, OPT_CA },
		{ "queue-max-mb", required_argument, NULL, OPT_QUEUE },
		{ "output-dir", required_argument, NULL, OPT_OUTDIR },
		{ "output-max-mb", required_argument, NULL, OPT_OUTMAX },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS },
		{ "ui", required_argument, NULL, OPT_UI },
		{ "log-interval", required_argument, NULL, OPT_LOGINT },
		{ "include-cmdline", no_argument, NULL, OPT_CMDLINE },
		{ "include-env", no_argument, NULL, OPT_ENV },
		{ "no-symbolize", no_argument, NULL, OPT_NOSYM },
		{ "cache-dir", required_argument, NULL, OPT_CACHE },
		{ "unwind-entries", required_argument, NULL, OPT_ENTRIES },
		{ "symbolize-lines", no_argument, NULL, OPT_LINES },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "store-max-mb", required_argument, NULL, OPT_STOREMAX },
		{ "store-max-age", required_argument, NULL, OPT_STOREAGE },
		{ "off-cpu", no_argument, NULL, OPT_OFF_CPU },
		{ "off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN },
		{ "off-cpu-rate", required_argument, NULL, OPT_OFF_CPU_RATE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double hz;
	int c;

	memset(o, 0, sizeof(*o));
	o->freq_hz = 19;
	o->export.scope_version = STACKSCOPE_VERSION;
	o->interval_s = 5;
	o->log_interval_s = 60;
	o->export.output_dir = "/var/lib/stackscope";
	o->export.output_max_bytes = 256ULL << 20;
	o->export.queue_max_bytes = 32ULL << 20;
	o->export.store_max_bytes = 256ULL << 20;
	o->export.store_max_age_s = 7 * 86400;
	o->symbolize = true;
	o->cache_dir = "/var/cache/stackscope";
	o->unwind_entries = 1u << 21;
	o->off_cpu_min_ns = OFF_CPU_DEFAULT_MIN_NS;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":F:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (option_value__double(optarg, 1, 10000, &hz) || hz != floor(hz))
				fail("-F must be a frequency between 1 and 10000 Hz, not '%s'",
				     optarg);
			o->freq_hz = (unsigned int)hz;
			break;
		case OPT_INTERVAL:
			if (option_value__double(optarg, 0.1, 3600, &o->interval_s))
				fail("--interval must be between 0.1 and 3600 seconds, not '%s'",
				     optarg);
			break;
		case OPT_LOGINT:
			if (option_value__double(optarg, 1, 86400, &o->log_interval_s))
				fail("--log-interval must be between 1 and 86400 seconds, not '%s'",
				     optarg);
			break;
		case OPT_ENDPOINT:
			o->export.otlp_endpoint = optarg;
			break;
		case OPT_PROTOCOL:
			o->export.otlp_protocol = optarg;
			break;
		case OPT_HEADERS:
			o->export.otlp_headers = optarg;
			break;
		case OPT_CA:
			o->export.otlp_ca_file = optarg;
			break;
		case OPT_QUEUE:
			if (parse_mb(optarg, &o->export.queue_max_bytes))
				fail("--queue-max-mb must be a positive number of MiB, not '%s'",
				     optarg);
			break;
		case OPT_OUTDIR:
			o->export.output_dir = optarg;
			o->export.output_dir_set = true;
			break;
		case OPT_STORE:
			if (!*optarg)
				fail("--store needs a file name");
			o->export.store_path = optarg;
			break;
		case OPT_STOREMAX:
			if (parse_mb(optarg, &o->export.store_max_bytes))
				fail("--store-max-mb must be a positive number of MiB, not '%s'",
				     optarg);
			break;
		case OPT_STOREAGE:
			if (option_value__double(optarg, 0.001, 24 * 3650, &o->export.store_max_age_s))
				fail("--store-max-age must be between 0.001 and 87600 hours, not '%s'",
				     optarg);
			o->export.store_max_age_s *= 3600;
			break;
		case OPT_OUTMAX:
			if (parse_mb(optarg, &o->export.output_max_bytes))
				fail("--output-max-mb must be a positive number of MiB, not '%s'",
				     optarg);
			break;
		case OPT_METRICS:
			o->metrics_addr = optarg;
			break;
		case OPT_UI:
			o->ui_addr = optarg;
			break;
		case OPT_CMDLINE:
			o->export.include_cmdline = true;
			break;
		case OPT_ENV:
			o->export.include_env = true;
			break;
		case OPT_NOSYM:
			o->symbolize = false;
			break;
		case OPT_LINES:
			o->symbolize_lines = true;
			break;
		case OPT_OFF_CPU:
			o->off_cpu = true;
			break;
		case OPT_OFF_CPU_MIN:
		case OPT_OFF_CPU_RATE:
			if (off_cpu__parse_option(c == OPT_OFF_CPU_RATE, optarg, &o->off_cpu_min_ns,
						  &o->off_cpu_rate))
				fail("%s, not '%s'", off_cpu__option_usage(c == OPT_OFF_CPU_RATE),
				     optarg);
			break;
		case OPT_CACHE:
			o->cache_dir = optarg;
			break;
		case OPT_ENTRIES: {
			unsigned long v;

			if (option_value__ulong(optarg, 4096, 1UL << 28, &v))
				fail("--unwind-entries must be between 4096 and 268435456, not '%s'",
				     optarg);
			o->unwind_entries = v;
			break;
		}
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			o->help = true;
			return 0;
		default: /* ':' or '?' */
			return option_error_getopt("agent", c, argv[optind - 1]);
		}
	}
	if (optind < argc)
		fail("unexpected argument '%s'", argv[optind]);
	if (o->export.otlp_protocol && strcmp(o->export.otlp_protocol, "http/protobuf") &&
	    strcmp(o->export.otlp_protocol, "grpc"))
		fail("unsupported OTLP protocol '%s' (http/protobuf or grpc)", o->export.otlp_protocol);
	if (o->export.otlp_endpoint && strncmp(o->export.otlp_endpoint, "http://", 7) &&
	    strncmp(o->export.otlp_endpoint, "https://", 8))
		fail("the OTLP endpoint must be an http:// or https:// URL, not '%s'",
		     o->export.otlp_endpoint);
	return 0;
}
