/* A gRPC server of one unary method over cleartext HTTP/2 (h2c with prior knowledge, as OTLP
 * exporters connect to port 4317), for the OTLP receiver (serve/otlp_receiver.h): one thread of
 * its own, one poll() loop over non-blocking sockets, HTTP/2 framing and HPACK by libnghttp2.
 *
 * A call is served once its request stream has ended: its one length-prefixed message
 * (compressed flag, 4-byte big-endian length; gzip when the call's grpc-encoding says so) is
 * handed to the owner's function on the listener's thread, whose reply becomes the response
 * message and the grpc-status/grpc-message trailers (a failure: a trailers-only response).
 * The gRPC HTTP/2 mapping: another path is UNIMPLEMENTED, a content-type that is not
 * application/grpc[+proto] gets HTTP 415, a message whose prefix lies about its length
 * INTERNAL, a compressed message without grpc-encoding gzip UNIMPLEMENTED.
 *
 * Bounds, each counted (grpc_listener_stats): conn_max connections (one more is closed at
 * once), GRPC_STREAMS_MAX calls at once per connection (SETTINGS_MAX_CONCURRENT_STREAMS; a
 * stream past it, opened before the client had our SETTINGS, is reset),
 * a request message of at most message_max bytes as sent (past it RESOURCE_EXHAUSTED, the rest
 * of the stream read and dropped), all streams' buffered bytes together within 2 x message_max
 * (past it UNAVAILABLE, retryable), a request's header fields within 16 KiB (past it the
 * stream is reset), a call not complete within
 * GRPC_CALL_TIMEOUT_MS of its start and a connection idle for GRPC_IDLE_TIMEOUT_MS closed. A
 * protocol error (not HTTP/2, a bad frame, an HPACK bomb) closes the connection with GOAWAY,
 * as libnghttp2 decides.
 */
#ifndef STACKSCOPE_GRPC_LISTENER_H
#define STACKSCOPE_GRPC_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_STREAMS_MAX 4
#define GRPC_CALL_TIMEOUT_MS 30000
#define GRPC_IDLE_TIMEOUT_MS 300000

/* gRPC status codes used here and by the owners */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_NOT_FOUND = 5,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
};

/* The owner's answer to one call: status (enum grpc_code), a message for a failure, and on
 * success the response message (body: malloc()ed, the listener frees it; NULL: empty).
 */
struct grpc_reply {
	int status;
	char message[192];
	uint8_t *body;
	size_t body_len;
};

/* Called on the listener's thread with a call's request message (inflated when gzip: the
 * owner inflates, within its own cap).
 */
typedef void (*grpc_unary_fn)(void *ctx, const uint8_t *msg, size_t len, bool gzip,
			      struct grpc_reply *reply);

struct grpc_listener_opts {
	const char *addr;   /* HOST:PORT (port 0: any free one) */
	const char *path;   /* the method served, "/package.Service/Method" (borrowed) */
	size_t message_max; /* request message bytes as sent */
	unsigned conn_max;  /* 0: 16 */
};

struct grpc_listener_stats {
	uint64_t calls;           /* calls answered by the owner's function */
	uint64_t refused;         /* calls answered by the listener: path, media, framing, caps */
	uint64_t conns_refused;   /* connections closed at once: every slot taken */
	uint64_t timed_out;       /* connections closed: a call not done in time, or idle */
	uint64_t protocol_errors; /* connections closed for a protocol error */
};

struct grpc_listener;

/* Starts serving. NULL with errno set (EINVAL: a bad address). */
struct grpc_listener *grpc_listener__start(const struct grpc_listener_opts *o, grpc_unary_fn fn,
					   void *ctx);
uint16_t grpc_listener__port(const struct grpc_listener *l);
/* May be called from any thread. */
void grpc_listener__stats(struct grpc_listener *l, struct grpc_listener_stats *out);
/* Stops the thread, closes every connection, frees. Accepts NULL. */
void grpc_listener__stop(struct grpc_listener *l);

/* grpc-message's percent-encoding of msg into out (out_sz bytes, NUL-terminated, cut at a
 * whole escape). Exposed for the tests.
 */
void grpc_message__encode(const char *msg, char *out, size_t out_sz);

#endif
