/* Options of `stackscope agent` (flags; the OTEL_* environment is read by otlp_config). */
#ifndef STACKSCOPE_AGENT_OPTIONS_H
#define STACKSCOPE_AGENT_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/option_table.h"
#include "pipeline/agent_export.h"

#define AGENT_MAX_HEADERS 32

struct agent_options {
	struct sampling_options common;  /* -F (default 19), --cache-dir, --off-cpu... */
	double interval_s;               /* one report per interval, default 5 */
	double log_interval_s;           /* counters in the log, default 60 */
	struct agent_export_opts export; /* where the profiles go (OTLP, store, pprof files) */
	const char *metrics_addr;        /* HOST:PORT or NULL */
	const char *ui_addr;             /* --ui HOST:PORT: the web UI over the store, or NULL */
	const char *otlp_listen; /* --otlp-listen HOST:PORT: an OTLP profiles receiver, or NULL */
	const char *otlp_grpc_listen; /* --otlp-grpc-listen HOST:PORT: the same over gRPC */
	const char *allow_hosts; /* --allow-host: more Host names for --ui and /metrics, or NULL */
	const char *trace_url;   /* --trace-url: --ui's trace links (serve/trace_list.h), or NULL */
	uint64_t unwind_entries; /* BPF unwind-entry pool (4 bytes each); 0: 2 Mi x --map-scale */
	bool symbolize_lines;    /* DWARF lines + inline frames on the host (more memory) */
	const char *config_path; /* --config FILE (cli/agent_config.h), or NULL */
	unsigned int prob_threshold; /* --probabilistic-threshold 1..100 (100: off) */
	double prob_interval_s;      /* --probabilistic-interval, default 60 */
	bool check_config;           /* --check-config: parse, check, say so, stop */
};

/* Parse argv (argv[0] is "agent") and the environment. 0, or -EINVAL after one clear line. */
int agent_options__parse(int argc, char **argv, struct agent_options *o);
void agent_options__usage(FILE *f);

#endif
