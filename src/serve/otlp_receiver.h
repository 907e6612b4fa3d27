/* The OTLP profiles receiver of `stackscope serve --otlp-listen/--otlp-grpc-listen` and the
 * agent's same options: OTLP/HTTP (POST /v1development/profiles, a protobuf
 * ExportProfilesServiceRequest, optionally Content-Encoding: gzip) on its own HTTP server thread
 * (base/http_server.h), and OTLP/gRPC (ProfilesService/Export over cleartext HTTP/2, gzip as
 * grpc-encoding) on a listener thread of its own (serve/grpc_listener.h); each request decoded
 * (export/otlp_read.h) and written into the store as one interval (store/store_sink.h: a busy
 * or full store keeps it and retries, within its bounds and quota), one at a time.
 *
 * Answers, as the OTLP specification says: 200 with an empty ExportProfilesServiceResponse on
 * success, or with partial_success (rejected_profiles, error_message) when some Profiles were of
 * a sample type the store does not keep; 400 for a body that is not a request (malformed, an
 * index out of range, a cap of otlp_read.h passed), 413 for a body or an inflated body over
 * the cap (a gzip bomb stops at the cap), 415 for JSON or an encoding other than gzip, 404 and
 * 405 for another path or method, 429 past the rate (Retry-After: 1); failures carry a
 * google.rpc.Status body (code, message). Over gRPC the same outcomes are the codes in that
 * body: INVALID_ARGUMENT, RESOURCE_EXHAUSTED (too large: not to be retried), UNAVAILABLE (the
 * rate, memory: retryable), UNIMPLEMENTED (another method, encoding).
 *
 * Every refusal is counted by reason (otlp_receiver_stats) and logged, the first of a reason
 * and then at each power of two of its count, so that a flood cannot fill the log.
 */
#ifndef STACKSCOPE_OTLP_RECEIVER_H
#define STACKSCOPE_OTLP_RECEIVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/http_server.h"
#include "serve/grpc_listener.h"

#define OTLP_RECEIVER_PATH "/v1development/profiles"
#define OTLP_RECEIVER_GRPC_PATH \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
#define OTLP_RECEIVER_BODY_MAX ((size_t)16 << 20)     /* bytes as sent */
#define OTLP_RECEIVER_INFLATED_MAX ((size_t)16 << 20) /* bytes after gzip */
#define OTLP_RECEIVER_RATE 20                         /* requests a second (and burst) */

struct otlp_receiver_opts {
	const char *addr;       /* OTLP/HTTP's HOST:PORT (port 0: any free one), or NULL */
	const char *grpc_addr;  /* OTLP/gRPC's HOST:PORT, or NULL (one of the two at least) */
	const char *store_path; /* written through a store_sink of its own */
	uint64_t store_max_sz;  /* the store's quota (0: unbounded) */
	uint64_t store_max_age_ns;
	size_t body_max;     /* 0: OTLP_RECEIVER_BODY_MAX */
	size_t inflated_max; /* 0: OTLP_RECEIVER_INFLATED_MAX */
	unsigned rate;       /* requests a second; 0: OTLP_RECEIVER_RATE */
};

enum otlp_refusal {
	OTLP_REFUSED_ROUTE,     /* 404/405: another path or method */
	OTLP_REFUSED_MEDIA,     /* 415: JSON, an unknown encoding */
	OTLP_REFUSED_TOO_LARGE, /* 413: inflated past the cap */
	OTLP_REFUSED_GZIP,      /* 400: a corrupt gzip stream */
	OTLP_REFUSED_MALFORMED, /* 400: not a request the decoder reads */
	OTLP_REFUSED_LIMIT,     /* 400: a cap of the decoder passed (tables, samples, frames) */
	OTLP_REFUSED_RATE,      /* 429 */
	OTLP_REFUSED_NOMEM,     /* 503 */
	OTLP_REFUSED_CNT,
};

struct otlp_receiver_stats {
	uint64_t accepted;          /* requests written (or kept) into the store */
	uint64_t samples;           /* their samples */
	uint64_t profiles_rejected; /* Profiles answered as partial success */
	uint64_t refused[OTLP_REFUSED_CNT];
	struct http_server_stats http;   /* the server's own refusals: a body over body_max
					* (413), a malformed head, a slow client */
	struct grpc_listener_stats grpc; /* the gRPC listener's calls and its own refusals */
};

struct otlp_receiver;

/* Opens the store and starts serving. NULL with errno set (EINVAL: a bad address; the
 * store's open failure, logged by the sink).
 */
struct otlp_receiver *otlp_receiver__start(const struct otlp_receiver_opts *o);
/* The ports served (0: that transport is not). */
uint16_t otlp_receiver__port(const struct otlp_receiver *r);
uint16_t otlp_receiver__grpc_port(const struct otlp_receiver *r);
/* May be called from any thread. */
void otlp_receiver__stats(struct otlp_receiver *r, struct otlp_receiver_stats *out);
/* One log line of the counters above. */
void otlp_receiver__log_stats(struct otlp_receiver *r);
/* Stops the server, writes what the store sink still keeps, frees. Accepts NULL. */
void otlp_receiver__stop(struct otlp_receiver *r);

const char *otlp_refusal__name(enum otlp_refusal why);

#endif
