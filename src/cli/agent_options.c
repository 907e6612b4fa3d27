/* `stackscope agent` options (flags). The OTEL_EXPORTER_OTLP_* environment is read by the OTLP
 * configuration (export/otlp_client.c); these flags override it.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <string.h>

#include "cli/agent_config.h"
#include "cli/agent_options.h"
#include "cli/commands.h"
#include "cli/option_value.h"
#include "serve/trace_list.h"

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
		"      --config FILE          settings from FILE, one \"key = value\" a line (a key is\n"
		"                             a flag's long name: freq = 99; a flag without a value\n"
		"                             alone: off-cpu); flags override it; read at start and\n"
		"                             on SIGHUP (selection, probabilistic, OTLP endpoint,\n"
		"                             headers and TLS files, intervals, -v change live; the\n"
		"                             rest is logged as needing a restart and kept)\n"
		"      --check-config         check the options (file, flags), say so and exit: 0\n"
		"                             when they are good, 2 after the line naming an error\n"
		"  -F, --freq HZ              samples per second per CPU (default 19)\n"
		"      --interval SECS        report interval (default 5)\n"
		"      --otlp-endpoint URL    OTLP receiver (env OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,\n"
		"                             OTEL_EXPORTER_OTLP_ENDPOINT)\n"
		"      --otlp-protocol P      http/protobuf (default) or grpc (env OTEL_EXPORTER_OTLP_PROTOCOL)\n"
		"      --otlp-headers K=V,..  extra headers (env OTEL_EXPORTER_OTLP_HEADERS)\n"
		"      --otlp-header K=V      one more header, the value as is (repeatable); headers\n"
		"                             are never logged nor shown in /metrics\n"
		"      --otlp-ca FILE         CA bundle for https (default: system CAs; env\n"
		"                             OTEL_EXPORTER_OTLP_[PROFILES_]CERTIFICATE)\n"
		"      --otlp-cert FILE       client certificate, PEM (env ..._CLIENT_CERTIFICATE)\n"
		"      --otlp-key FILE        its key, PEM (env ..._CLIENT_KEY); all three re-read\n"
		"                             when they change (rotation without a restart)\n"
		"      --otlp-server-name N   the name the collector's certificate must carry\n"
		"                             (default: the endpoint's host)\n"
		"      --otlp-insecure        allow plaintext http:// to a host other than loopback\n"
		"                             (env OTEL_EXPORTER_OTLP_INSECURE); https:// is always\n"
		"                             TLS 1.2+ with the certificate verified\n"
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
		"      --otlp-listen H:P      also receive OTLP profiles from other agents (HTTP,\n"
		"                             POST /v1development/profiles) into the store\n"
		"                             (as `serve --otlp-listen`; counters in the log)\n"
		"      --otlp-grpc-listen H:P the same over OTLP/gRPC (cleartext HTTP/2)\n"
		"      --trace-url URL        --ui links trace ids there: an http(s) URL with\n"
		"                             {trace_id} (and {span_id}) in it\n"
		"      --allow-host NAME[,NAME]  --ui and /metrics also answer requests whose Host\n"
		"                             is NAME (else only localhost, 127.x.y.z and the\n"
		"                             address connected to: 403 for the rest)\n"
		"      --map-scale N          BPF maps N times what the machine and its processes\n"
		"                             at start suggest (1-64; for hosts that grow busy)\n"
		"      --log-interval SECS    counters in the log (default 60)\n"
		"      --cache-dir DIR        unwind-table cache (default /var/cache/stackscope, \"\" = off)\n"
		"      --unwind-entries N     unwind-table pool in BPF, 4 bytes each, made as tables\n"
		"                             need it (at most 4194304 times --map-scale by default,\n"
		"                             less below 4 GiB of memory);\n"
		"                             when full, the least recently sampled tables make room;\n"
		"                             files still beyond it use frame pointers (counted)\n"
		"      --host-root DIR        the node's / (default /; in a DaemonSet the host's / mounted\n"
		"                             read-only): Kubernetes pod, namespace and container\n"
		"                             names from DIR/var/log/pods and the runtime's files\n"
		"      --node-name NAME       k8s.node.name on every resource (default: env NODE_NAME)\n"
		"      --include-cmdline      send process command lines (may hold secrets)\n"
		"      --include-env          send process environments (may hold secrets)\n"
		"      --no-symbolize         send addresses and build ids only\n"
		"      --symbolize-lines      also source lines and inline frames from debug info found\n"
		"                             on the host or via DEBUGINFOD_URLS (costs memory)\n"
		"      --off-cpu              also where threads wait: an off-CPU profile (off_cpu/\n"
		"                             nanoseconds) next to the CPU one, in the same request\n"
		"      --off-cpu-min USECS    skip shorter stays off CPU (default 1000, counted)\n"
		"      --off-cpu-rate N       at most N off-CPU stack walks per second (default 2000)\n" SELECTION_USAGE
		"      --probabilistic-threshold N  profile each --probabilistic-interval with\n"
		"                             probability N %% (1-100; default 100: always), drawn\n"
		"                             once per interval for the whole host; an export\n"
		"                             interval wholly off sends no profile\n"
		"      --probabilistic-interval SECS  (default 60)\n"
		"      --faults               also where memory grows: page faults, brk() and anonymous\n"
		"                             mmap() (faults, fault_bytes, mapped_bytes profiles)\n"
		"      --fault-period N       page faults per sample (default 64)\n"
		"      --alloc                also allocations: uprobes on every mapped libc's malloc\n"
		"                             family, sampled by bytes (alloc_objects, alloc_space; and\n"
		"                             inuse_objects, inuse_space: what is live at the interval's\n"
		"                             end, carried over intervals)\n"
		"      --alloc-rate BYTES     mean bytes between allocation samples (default 524288)\n"
		"      --obi-map PATH         OBI's pinned span map traces_ctx_v1, followed while it is\n"
		"                             pinned (default /sys/fs/bpf/otel/traces_ctx_v1; \"\" = off)\n"
		"  -v, --verbose              debug logging\n"
		"  -h, --help                 this help\n"
		"\n"
		"SIGHUP: re-read --config FILE, apply it, end the interval at once (exported).\n"
		"SIGUSR1: the counters into the log.\n");
}

#define fail(...) return option_error("agent", __VA_ARGS__)
#define AGENT(f) offsetof(struct agent_options, f)
#define EXPORT(f) offsetof(struct agent_options, export.f)

static OPTION_SETTER(set_output_dir)
{
	struct agent_export_opts *e = field;

	(void)spec, (void)command;
	e->output_dir = arg;
	e->output_dir_set = true;
	return 0;
}

static OPTION_SETTER(add_header)
{
	struct agent_export_opts *e = field;

	(void)spec;
	if (e->otlp_header_cnt >= AGENT_EXPORT_MAX_HEADERS)
		return option_error(command, "at most %d --otlp-header", AGENT_EXPORT_MAX_HEADERS);
	e->otlp_header_list[e->otlp_header_cnt++] = arg;
	return 0;
}

static OPTION_SETTER(set_store)
{
	if (!*arg)
		return option_error(command, "%s", spec->error);
	return option_set_string(spec, arg, field, command);
}

static OPTION_SETTER(set_trace_url)
{
	char why[128];

	if (trace_url__check(arg, why, sizeof(why)))
		return option_error(command, "--trace-url '%s': %s", arg, why);
	return option_set_string(spec, arg, field, command);
}

/* agent's own options; -F, --off-cpu, --cache-dir... are shared (option_table.c). */
static const struct option_spec agent_option_specs[] = {
	{ "config", 0, true, option_set_string, AGENT(config_path) },
	{ "probabilistic-threshold", 0, true, option_set_uint, AGENT(prob_threshold), 1, 100,
	  "--probabilistic-threshold must be a percentage between 1 and 100, not '%s'" },
	{ "probabilistic-interval", 0, true, option_set_double, AGENT(prob_interval_s), 0.5, 3600,
	  "--probabilistic-interval must be between 0.5 and 3600 seconds, not '%s'" },
	{ "interval", 0, true, option_set_double, AGENT(interval_s), 0.1, 3600,
	  "--interval must be between 0.1 and 3600 seconds, not '%s'" },
	{ "otlp-endpoint", 0, true, option_set_string, EXPORT(otlp_endpoint) },
	{ "otlp-protocol", 0, true, option_set_string, EXPORT(otlp_protocol) },
	{ "otlp-headers", 0, true, option_set_string, EXPORT(otlp_headers) },
	{ "otlp-ca-file", 0, true, option_set_string, EXPORT(otlp_ca_file) },
	{ "otlp-ca", 0, true, option_set_string, EXPORT(otlp_ca_file) },
	{ "otlp-cert", 0, true, option_set_string, EXPORT(otlp_cert_file) },
	{ "otlp-key", 0, true, option_set_string, EXPORT(otlp_key_file) },
	{ "otlp-server-name", 0, true, option_set_string, EXPORT(otlp_server_name) },
	{ "otlp-insecure", 0, false, option_set_true, EXPORT(otlp_insecure) },
	{ "otlp-header", 0, true, add_header, AGENT(export) },
	{ "queue-max-mb", 0, true, option_set_mib, EXPORT(queue_max_bytes), 1, 1024 * 1024,
	  "--queue-max-mb must be a positive number of MiB, not '%s'" },
	{ "output-dir", 0, true, set_output_dir, AGENT(export) },
	{ "output-max-mb", 0, true, option_set_mib, EXPORT(output_max_bytes), 1, 1024 * 1024,
	  "--output-max-mb must be a positive number of MiB, not '%s'" },
	{ "metrics-addr", 0, true, option_set_string, AGENT(metrics_addr) },
	{ "ui", 0, true, option_set_string, AGENT(ui_addr) },
	{ "otlp-listen", 0, true, option_set_string, AGENT(otlp_listen) },
	{ "otlp-grpc-listen", 0, true, option_set_string, AGENT(otlp_grpc_listen) },
	{ "allow-host", 0, true, option_set_string, AGENT(allow_hosts) },
	{ "trace-url", 0, true, set_trace_url, AGENT(trace_url) },
	{ "log-interval", 0, true, option_set_double, AGENT(log_interval_s), 1, 86400,
	  "--log-interval must be between 1 and 86400 seconds, not '%s'" },
	{ "check-config", 0, false, option_set_true, AGENT(check_config) },
	{ "host-root", 0, true, option_set_string, EXPORT(host_root) },
	{ "node-name", 0, true, option_set_string, EXPORT(node_name) },
	{ "include-cmdline", 0, false, option_set_true, EXPORT(include_cmdline) },
	{ "include-env", 0, false, option_set_true, EXPORT(include_env) },
	{ "unwind-entries", 0, true, option_set_u64, AGENT(unwind_entries), 4096, 1UL << 28,
	  "--unwind-entries must be between 4096 and 268435456, not '%s'" },
	{ "symbolize-lines", 0, false, option_set_true, AGENT(symbolize_lines) },
	{ "store", 0, true, set_store, EXPORT(store_path), 0, 0, "--store needs a file name" },
	{ "store-max-mb", 0, true, option_set_mib, EXPORT(store_max_bytes), 1, 1024 * 1024,
	  "--store-max-mb must be a positive number of MiB, not '%s'" },
	{ "store-max-age", 0, true, option_set_hours, EXPORT(store_max_age_s), 0.001, 24 * 3650,
	  "--store-max-age must be between 0.001 and 87600 hours, not '%s'" },
	{ 0 },
};

int agent_options__parse(int argc, char **argv, struct agent_options *o)
{
	const struct agent_export_opts *e = &o->export;
	int err;

	memset(o, 0, sizeof(*o));
	sampling_options__init(&o->common, 19);
	o->interval_s = 5;
	o->log_interval_s = 60;
	o->export.scope_version = STACKSCOPE_VERSION;
	o->export.output_dir = "/var/lib/stackscope";
	o->export.output_max_bytes = 256ULL << 20;
	o->export.queue_max_bytes = 32ULL << 20;
	o->export.store_max_bytes = 256ULL << 20;
	o->export.store_max_age_s = 7 * 86400;
	o->prob_threshold = 100;
	o->prob_interval_s = 60;
	/* the file first, then the command line over it */
	o->config_path = agent_config__path(argc, argv);
	if (o->config_path) {
		const struct agent_config_entry *entries;
		size_t cnt, i;

		err = agent_config__load(o->config_path, &entries, &cnt);
		if (err)
			return err;
		for (i = 0; i < cnt; i++) {
			char where[320], *one[3] = { argv[0], entries[i].arg, NULL };

			snprintf(where, sizeof(where), "agent: %s:%u", o->config_path,
				 entries[i].line);
			err = option_table__parse(where, OPTION_AGENT, &o->common,
						  agent_option_specs, o, false, 2, one);
			if (err < 0)
				return err;
		}
		o->common.help = false;
	}
	err = option_table__parse("agent", OPTION_AGENT, &o->common, agent_option_specs, o, false,
				  argc, argv);
	if (err)
		return err < 0 ? err : 0;
	if (optind < argc)
		fail("unexpected argument '%s'", argv[optind]);
	if (e->otlp_protocol && strcmp(e->otlp_protocol, "http/protobuf") &&
	    strcmp(e->otlp_protocol, "grpc"))
		fail("unsupported OTLP protocol '%s' (http/protobuf or grpc)", e->otlp_protocol);
	if (e->otlp_endpoint && strncmp(e->otlp_endpoint, "http://", 7) &&
	    strncmp(e->otlp_endpoint, "https://", 8))
		fail("the OTLP endpoint must be an http:// or https:// URL, not '%s'",
		     e->otlp_endpoint);
	return 0;
}
