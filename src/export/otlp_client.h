/* OTLP profiles transport: sends encoded ExportProfilesServiceRequests (otlp.h) to a
 * receiver over OTLP/HTTP or OTLP/gRPC (both through libcurl; gRPC is HTTP/2 with gRPC's
 * 5-byte message framing, h2c with prior knowledge for http:// endpoints), from a thread of
 * its own, so that exporting never blocks sampling.
 *
 * Protocol (opentelemetry-proto v1.11.0, profiles v1development):
 *  - HTTP: POST <endpoint>/v1development/profiles, Content-Type application/x-protobuf,
 *    body gzipped (Content-Encoding: gzip); 2xx = accepted (the body may carry a partial
 *    success, which is counted and never retried).
 *  - gRPC: POST /opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export,
 *    content-type application/grpc, te: trailers, grpc-encoding gzip (compressed-flag 1);
 *    the result is grpc-status from the trailers (or headers, for trailers-only answers).
 *
 * Retries (the OTLP specification): HTTP 429, 502, 503, 504 and connection failures
 * (refused, reset, timed out, closed without an answer) are retried; gRPC codes CANCELLED,
 * DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS are retried, and
 * RESOURCE_EXHAUSTED only when the status carries google.rpc.RetryInfo. Everything else
 * (400, 413, other 4xx/5xx, other gRPC codes, TLS errors) fails at once. The wait before a
 * retry is the server's Retry-After (seconds or HTTP-date) or RetryInfo delay when given
 * (RetryInfo: at least that, and at least the backoff), else exponential backoff from
 * initial_backoff_ms doubling up to max_backoff_ms, with jitter (x0.5 .. x1.5, capped). A
 * request is given up (failed) when the next attempt would start later than max_elapsed_ms
 * after its first one. max_backoff_ms is 5 s by default, and a new request submitted
 * during a backoff (not during a server-requested wait) ends it at once: a collector that
 * comes back is used within 5 s, or within the agent's interval if shorter, while a down
 * one sees from each agent one connection attempt per new request and at most one more
 * every 2.5..5 s.
 *
 * Answers are read up to 64 KiB of body (after curl inflated it) and 64 KiB of headers; past
 * either, the transfer is ended at once and, for a 2xx or gRPC answer or over-long headers, the
 * request fails (counted, not retried), while an error status with a long body is judged by
 * its status. An attempt as a whole lasts timeout_ms at most.
 *
 * Outages (retryable failures: the collector is down, unreachable or overloaded) are said
 * in the log at the first failed attempt (the error, the requests queued and lost so far),
 * then at most once a minute while they last, and their end once the requests that waited
 * through them are delivered ("collector reachable again after N s, M requests delivered
 * late"). A non-retryable answer ends an outage too (the collector answers) and is warned
 * once per change from success to failure.
 *
 * Invariants:
 *  - the queue is the only state shared with the export thread (one mutex, two condvars);
 *    otlp_client__submit() compresses in the caller's thread and only takes the mutex to
 *    append, so it never waits for the network.
 *  - the queue holds at most queue_max_cnt requests and queue_max_sz bytes (compressed);
 *    when a new request does not fit, the oldest queued ones are dropped and counted. The
 *    request being sent is not in the queue.
 *  - every request ends up counted exactly once: ok, failed or dropped.
 */
#ifndef STACKSCOPE_OTLP_CLIENT_H
#define STACKSCOPE_OTLP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/otlp.h"
#include "export/otlp_tls.h"
#include "export/protobuf.h"

enum otlp_protocol {
	OTLP_PROTOCOL_HTTP_PROTOBUF = 0, /* "http/protobuf", the default */
	OTLP_PROTOCOL_GRPC,              /* "grpc" */
};

#define OTLP_HTTP_PATH "/v1development/profiles"
#define OTLP_GRPC_PATH \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

struct otlp_header {
	char *name;
	char *value;
};

/* Where and how to export. Strings are owned (otlp_config__free()). */
struct otlp_config {
	enum otlp_protocol protocol;
	/* NULL: no endpoint configured (the caller falls back to files). */
	char *endpoint;
	/* true: endpoint is the full URL to POST to (OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT);
	 * false: a base URL the signal path is appended to (OTEL_EXPORTER_OTLP_ENDPOINT).
	 * gRPC always uses scheme://host:port of the endpoint plus OTLP_GRPC_PATH.
	 */
	bool endpoint_is_full;
	struct otlp_header *headers;
	size_t header_cnt;
	struct otlp_attr *resource_attrs; /* OTEL_RESOURCE_ATTRIBUTES; strings owned */
	size_t resource_attr_cnt;
	struct otlp_tls tls;         /* CA, client certificate, server name (otlp_tls.h) */
	bool gzip;                   /* default true */
	unsigned timeout_ms;         /* one export attempt, default 10000 */
	unsigned connect_timeout_ms; /* default 3000 */
	unsigned initial_backoff_ms; /* default 1000 */
	unsigned max_backoff_ms;     /* default 5000 */
	unsigned max_elapsed_ms;     /* default 120000 */
	size_t queue_max_cnt;        /* default 16 */
	size_t queue_max_sz;         /* default 32 MiB */
};

/* Defaults, no endpoint. */
void otlp_config__init(struct otlp_config *c);
void otlp_config__free(struct otlp_config *c);

/* otlp_config__init() and then the standard variables: OTEL_EXPORTER_OTLP_PROTOCOL,
 * OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT (full URL) or else OTEL_EXPORTER_OTLP_ENDPOINT
 * (base URL), OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_PROFILES_HEADERS
 * ("k=v,k2=v2", percent-decoded), the TLS variables (otlp_tls__from_env()),
 * OTEL_EXPORTER_OTLP_TIMEOUT (ms), OTEL_EXPORTER_OTLP_COMPRESSION (gzip|none),
 * OTEL_RESOURCE_ATTRIBUTES. Returns 0, -ENOMEM, or -EINVAL with a message naming the
 * variable and the problem in err (always NUL-terminated when err_sz > 0). On error c is
 * still valid for otlp_config__free().
 */
int otlp_config__from_env(struct otlp_config *c, char *err, size_t err_sz);

/* Sets the endpoint (e.g. from --otlp-endpoint). It must be http:// or https://, with a
 * host and an optional port. 0, -ENOMEM or -EINVAL (message in err).
 */
int otlp_config__set_endpoint(struct otlp_config *c, const char *url, bool is_full, char *err,
			      size_t err_sz);
/* Adds headers / resource attributes in the "k=v,k2=v2" format. 0, -ENOMEM or -EINVAL. */
int otlp_config__add_headers(struct otlp_config *c, const char *list, char *err, size_t err_sz);
/* Adds one header "Name=value" (--otlp-header: split at the first '=', not decoded; the value
 * may hold commas). 0, -ENOMEM or -EINVAL. Error messages name the header, never its value.
 */
int otlp_config__add_header(struct otlp_config *c, const char *kv, char *err, size_t err_sz);
int otlp_config__add_resource_attrs(struct otlp_config *c, const char *list, char *err,
				    size_t err_sz);

/* The URL requests go to; caller frees. NULL with errno EINVAL without endpoint, ENOMEM. */
char *otlp_config__url(const struct otlp_config *c);

/* Why requests were never delivered; each request lost is counted under one reason. */
enum otlp_lost_reason {
	OTLP_LOST_REJECTED = 0,      /* failed: a non-retryable answer or error */
	OTLP_LOST_RETRIES_EXHAUSTED, /* failed: still retryable after max_elapsed_ms */
	OTLP_LOST_QUEUE_FULL,        /* dropped: the oldest in a full queue */
	OTLP_LOST_TOO_LARGE,         /* dropped: over queue_max_sz on its own */
	OTLP_LOST_SHUTDOWN,          /* dropped: queued or in flight when the client was freed */
	OTLP_LOST_TLS,               /* failed: the TLS handshake refused (otlp_tls.h) */
	OTLP_LOST_REASON_CNT,
};

/* "rejected", "retries_exhausted", "queue_full", "too_large", "shutdown", "tls". */
const char *otlp_lost_reason__name(enum otlp_lost_reason r);

struct otlp_client_stats {
	uint64_t exports_ok;        /* accepted by the receiver (including partial successes) */
	uint64_t exports_failed;    /* given up: non-retryable answer or retries exhausted */
	uint64_t exports_retried;   /* retry attempts */
	uint64_t exports_dropped;   /* dropped from the full queue, or still queued at the end */
	uint64_t exports_partial;   /* accepted with a partial_success */
	uint64_t rejected_profiles; /* sum of partial_success.rejected_profiles */
	/* exports_failed + exports_dropped, by reason */
	uint64_t exports_lost[OTLP_LOST_REASON_CNT];
	uint64_t bytes_sent;        /* request bytes on the wire (compressed), every attempt */
	uint64_t bytes_delivered;   /* bytes of the attempts the receiver accepted */
	uint64_t outages;           /* outages begun (see above) */
	uint64_t delivered_late;    /* requests delivered after waiting through an outage */
	bool collector_unavailable; /* an outage is going on */
	size_t queue_cnt;           /* waiting now, without the one being sent */
	size_t queue_sz;
	int last_http_status; /* 0 = none yet */
	int last_grpc_status; /* -1 = none yet */
};

struct otlp_client;

/* Copies cfg (which needs an endpoint) and starts the export thread. NULL with errno set
 * (EINVAL: no endpoint; ENOMEM; or from curl/pthread initialisation).
 */
struct otlp_client *otlp_client__new(const struct otlp_config *cfg);

/* Queues one request: compresses and frames req's bytes in the calling thread, then
 * appends (dropping the oldest requests when the queue is full). Never waits for the
 * network. req is left untouched (the caller frees it). Returns 0, -ENOMEM, or -EMSGSIZE
 * when the compressed request alone is over queue_max_sz (counted as dropped).
 */
int otlp_client__submit(struct otlp_client *c, const struct pb_buf *req);

/* Waits until the queue is empty and nothing is in flight, at most timeout_ms.
 * 0 or -ETIMEDOUT.
 */
int otlp_client__flush(struct otlp_client *c, unsigned timeout_ms);

/* A consistent snapshot of the counters. */
void otlp_client__stats(struct otlp_client *c, struct otlp_client_stats *out);

/* Stops the thread (an attempt in progress is aborted, no more retries), counts what is
 * still queued as dropped, frees everything. Accepts NULL.
 */
void otlp_client__free(struct otlp_client *c);

#endif
