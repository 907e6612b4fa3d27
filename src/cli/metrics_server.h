/* A tiny Prometheus text endpoint: GET /metrics on a loopback (or given) address, served
 * from a snapshot the owner replaces with metrics_server__publish().
 *
 * Why a thread of its own: the agent's loop blocks in the session's ring-buffer poll, which
 * the session owns; serving from that loop would tie the server's latency to the 100 ms
 * tick and put socket code into the sampling path. The server is a base/http_server.c (its
 * own thread, one poll() loop over non-blocking sockets, so one client never waits for
 * another), and the agent's only contact with it is publish(), which swaps a pointer under
 * a mutex that the server holds just long enough to copy the text: no client, however slow,
 * can stall sampling.
 *
 * Limits (each a defence against a client of a root process on every machine; the HTTP
 * server's, with these values):
 *  - conn_max connections at once with the whole request timeout (conn_max / 2 from one
 *    remote address), conn_max / 2 more with spare_timeout_ms for their request, so that
 *    slow clients holding the first slots do not keep a scrape out; one more takes the slot
 *    of one whose answer is out or not taken for a second (counted as evicted), else it is
 *    answered 503 with a single non-blocking write and closed (counted as refused);
 *  - the Host must be localhost, a 127.x.y.z address, the address scraped, or one of
 *    opts.hosts, and an Origin the Host's own: else 403 (DNS rebinding, cross-site pages);
 *  - the request (line and headers) must arrive complete, in at most
 *    METRICS_REQUEST_MAX_SZ bytes, within request_timeout_ms of the accept: else closed
 *    (timed out) or answered 414/431 (too large);
 *  - the answer must be taken within response_timeout_ms, else closed (timed out);
 *  - GET /metrics (a query is ignored) gets 200 (503 until the first publish); another
 *    path 404; another method 405 (Allow: GET); a malformed request 400, a body 413. A
 *    body is never read: at most HTTP_DRAIN_MAX_SZ bytes of what the client sends are
 *    read and discarded before the close (so that the answer is not lost to a reset). One
 *    request per connection.
 */
#ifndef STACKSCOPE_METRICS_SERVER_H
#define STACKSCOPE_METRICS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_REQUEST_MAX_SZ 4096

struct metrics_server_opts {
	unsigned conn_max;            /* 0: 16 */
	unsigned request_timeout_ms;  /* 0: 3000 */
	unsigned response_timeout_ms; /* 0: 5000 */
	/* Text built on demand (0: off, every scrape gets the last text at once): a scrape of a
	 * text older than max_age_ms says so (metrics_server__wanted()) and waits up to
	 * fresh_wait_ms for the owner's next publish, then is answered with whatever text
	 * there is. The wait holds the server thread (no other connection is served meanwhile):
	 * at most one such wait per max_age_ms, as the text it waits for is fresh for that long.
	 */
	unsigned max_age_ms;
	unsigned fresh_wait_ms;
	unsigned spare_timeout_ms; /* request timeout past conn_max; 0: 1000 */
	const char *hosts;         /* more Host names, comma-separated (borrowed); NULL: none */
};

struct metrics_server_stats {
	uint64_t served;    /* 200 answers */
	uint64_t rejected;  /* 4xx answers: bad request, other path or method, too large */
	uint64_t refused;   /* closed at once: conn_max connections were open */
	uint64_t timed_out; /* request or answer not done in time */
	uint64_t evicted;   /* closed to make room for another (its answer out or not taken) */
	uint64_t forbidden; /* 403: a Host or Origin not allowed (counted in rejected too) */
	size_t open;        /* connections open now */
};

struct metrics_server;

/* addr: "HOST:PORT" (IPv4, e.g. 127.0.0.1:9464; port 0 = any free one, see
 * metrics_server__port()). opts may be NULL (defaults). NULL with errno (EINVAL for a bad
 * address, EADDRINUSE...).
 */
struct metrics_server *metrics_server__start(const char *addr,
					     const struct metrics_server_opts *opts);
/* The port listened on. */
uint16_t metrics_server__port(const struct metrics_server *m);
/* Replace the text served (copied); a scrape waiting for a fresh text gets this one. Never
 * waits for a client.
 */
void metrics_server__publish(struct metrics_server *m, const char *text, size_t len);
/* Whether a scrape waits for a fresh text (opts.fresh_wait_ms): the owner should build and
 * publish one now. Cheap (no lock): meant to be asked at every turn of the owner's loop.
 */
bool metrics_server__wanted(struct metrics_server *m);
/* A consistent snapshot of the counters. */
void metrics_server__stats(struct metrics_server *m, struct metrics_server_stats *out);
/* Stops the thread, closes every connection, frees. Accepts NULL. */
void metrics_server__stop(struct metrics_server *m);

#endif
