/* Where the agent's interval profiles go, its sinks: an OTLP receiver (encoded here with the
 * resource attributes of each process, sent by the OTLP client's own thread through a bounded
 * queue) or, without an endpoint, the embedded store (store/store_sink.h) or a rotating folder
 * of pprof files (export/pprof_dir.h, --output-dir); the store also beside either when --store
 * is given. agent_export__report() never blocks on the network.
 */
#ifndef STACKSCOPE_AGENT_EXPORT_H
#define STACKSCOPE_AGENT_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "export/otlp_client.h"

#define AGENT_EXPORT_MAX_HEADERS 32

struct profile;
struct session;

/* The agent's options that choose and shape the sinks (cli/agent_options.h fills them). */
struct agent_export_opts {
	const char *otlp_endpoint;  /* overrides OTEL_EXPORTER_OTLP_*ENDPOINT; neither: no OTLP */
	const char *otlp_protocol;  /* "http/protobuf" or "grpc"; NULL: environment or http */
	const char *otlp_headers;   /* "k=v,k2=v2", added to OTEL_EXPORTER_OTLP_*HEADERS */
	const char *otlp_ca_file;   /* --otlp-ca: over OTEL_EXPORTER_OTLP_*CERTIFICATE */
	const char *otlp_cert_file; /* --otlp-cert, --otlp-key: the client certificate */
	const char *otlp_key_file;
	const char *otlp_server_name; /* --otlp-server-name */
	bool otlp_insecure;           /* --otlp-insecure: plaintext to any http:// host */
	const char *otlp_header_list[AGENT_EXPORT_MAX_HEADERS]; /* --otlp-header K=V, each */
	size_t otlp_header_cnt;
	const char *output_dir;    /* default /var/lib/stackscope */
	uint64_t output_max_bytes; /* default 256 MiB */
	uint64_t queue_max_bytes;  /* OTLP export queue bound, default 32 MiB */
	bool output_dir_set;       /* --output-dir given: pprof files (no default store) */
	const char *store_path;    /* --store FILE; NULL: the default store when nothing else */
	uint64_t store_max_bytes;  /* default 256 MiB */
	double store_max_age_s;    /* default 7 days */
	bool include_cmdline;      /* process.command_line on OTLP resources */
	bool include_env;          /* process.environment_variable.<NAME> on OTLP resources */
	const char *scope_version; /* the instrumentation scope's version (stackscope's) */
	const char *host_root;     /* --host-root: the node's / for its Kubernetes files ("/") */
	const char *node_name;     /* --node-name: k8s.node.name; NULL: NODE_NAME's */
};

struct agent_export_stats {
	bool otlp;                /* false: a pprof folder (the OTLP-only fields stay 0) */
	uint64_t ok;              /* reports delivered (OTLP 2xx, or pprof file written) */
	uint64_t failed;          /* given up: non-retryable answer, encode or write error */
	uint64_t retried;         /* retry attempts */
	uint64_t dropped;         /* OTLP: dropped from a full queue (oldest first), too large or
			       * at exit; pprof: old files deleted */
	uint64_t bytes_sent;      /* OTLP: bytes on the wire, every attempt; pprof: written */
	uint64_t bytes_delivered; /* OTLP: bytes of requests accepted; pprof: written */
	uint64_t queue_bytes;     /* bytes waiting to be sent */
	/* OTLP only */
	uint64_t lost[OTLP_LOST_REASON_CNT]; /* failed + dropped by reason (encode errors:
					       * rejected) */
	uint64_t outages;                    /* collector outages begun */
	uint64_t delivered_late;             /* reports delivered after waiting through an outage */
	bool collector_unavailable;
	/* the embedded store, when it is written (alone: also ok/failed/dropped above) */
	bool store;
	uint64_t store_written;
	uint64_t store_failed; /* attempts that failed (a kept interval's too) */
	uint64_t store_kept;   /* intervals kept after a failed attempt (a co-writer's lock) */
	uint64_t store_written_late; /* kept intervals written since */
	uint64_t store_lost;         /* intervals never written */
	uint64_t store_pending;      /* intervals kept now, and their bytes */
	uint64_t store_pending_bytes;
	uint64_t store_dropped_size; /* intervals deleted to stay under --store-max-mb */
	uint64_t store_dropped_age;  /* intervals deleted for being older than --store-max-age */
	uint64_t store_recovered;    /* corrupt files moved aside, a fresh one started */
	uint64_t store_bytes;        /* live bytes of the file */
};

struct agent_export;

/* NULL with errno and a clear message logged (bad endpoint, unwritable folder...). o is
 * borrowed for the exporter's life.
 */
struct agent_export *agent_export__new(const struct agent_export_opts *o);

/* What agent_export__new() would refuse in o and the OTEL_EXPORTER_OTLP_* environment
 * (endpoint, headers, TLS files and policy, --host-root), checked without opening anything
 * for writing nor connecting: 0, or -EINVAL / -ENOMEM with the line in err.
 */
int agent_export__check(const struct agent_export_opts *o, char *err, size_t err_sz);
void agent_export__free(struct agent_export *ex);
/* The session whose process table gives resource attributes (borrowed). */
void agent_export__set_session(struct agent_export *ex, struct session *s);
const char *agent_export__describe(const struct agent_export *ex);
/* Export one interval's profile; takes ownership of p. */
void agent_export__report(struct agent_export *ex, struct profile *p);
/* Wait up to timeout_ms for queued reports to be sent (at shutdown). */
void agent_export__flush(struct agent_export *ex, int timeout_ms);
void agent_export__stats(const struct agent_export *ex, struct agent_export_stats *out);

#endif
