/* Options of `stackscope agent` (flags; the OTEL_* environment is read by otlp_config). */
#ifndef STACKSCOPE_AGENT_OPTIONS_H
#define STACKSCOPE_AGENT_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define AGENT_MAX_HEADERS 32

struct agent_options {
	unsigned int freq_hz;      /* default 19 */
	double interval_s;         /* one report per interval, default 5 */
	double log_interval_s;     /* counters in the log, default 60 */
	const char *otlp_endpoint; /* overrides OTEL_EXPORTER_OTLP_*ENDPOINT; neither: pprof files */
	const char *otlp_protocol; /* "http/protobuf" or "grpc"; NULL: environment or http */
	const char *otlp_headers;  /* "k=v,k2=v2", added to OTEL_EXPORTER_OTLP_*HEADERS */
	const char *otlp_ca_file;
	const char *output_dir;    /* default /var/lib/stackscope */
	uint64_t output_max_bytes; /* default 256 MiB */
	uint64_t queue_max_bytes;  /* OTLP export queue bound, default 32 MiB */
	bool output_dir_set;       /* --output-dir given: pprof files (no default store) */
	const char *store_path;    /* --store FILE; NULL: the default store when nothing else */
	uint64_t store_max_bytes;  /* default 256 MiB */
	double store_max_age_s;    /* default 7 days */
	const char *metrics_addr;  /* HOST:PORT or NULL */
	const char *ui_addr;       /* --ui HOST:PORT: the web UI over the store, or NULL */
	const char *cache_dir;     /* unwind-table cache; "" disables */
	uint64_t unwind_entries;   /* BPF unwind-entry pool (4 bytes each), default 2 Mi */
	bool include_cmdline;
	bool include_env;
	bool symbolize;
	bool symbolize_lines;      /* DWARF lines + inline frames on the host (more memory) */
	bool off_cpu;              /* --off-cpu: off-CPU profiles next to the CPU ones */
	uint64_t off_cpu_min_ns;   /* --off-cpu-min (microseconds on the command line) */
	unsigned int off_cpu_rate; /* --off-cpu-rate: stack walks per second (0: default) */
	bool verbose;
	bool help;
};

/* Parse argv (argv[0] is "agent") and the environment. 0, or -EINVAL after one clear line. */
int agent_options__parse(int argc, char **argv, struct agent_options *o);
void agent_options__usage(FILE *f);

#endif
