/* A small HTTP/1.1 server for local tools (the web UI of `stackscope serve`, `agent --ui`,
 * the agent's /metrics): one thread of its own, one poll() loop over non-blocking sockets, one
 * request per connection (every answer closes it).
 *
 * The owner supplies a handler, called on the server thread once a request is complete; it
 * fills in the answer and returns. While it runs no other connection is served, so a handler
 * must bound its own work; what no handler can cause is a wait on a client: reading the
 * request and writing the answer never block, and the owner's other threads (the agent's
 * sampling) never touch a socket.
 *
 * Defences against hostile clients (each a fixed limit, counted in http_server_stats):
 *  - conn_max connections get the whole request_timeout_ms for their request, at most
 *    client_max of them from one remote address (not counted for 127.0.0.0/8, where any local
 *    process picks its source address at will). Past that, spare_max more connections are
 *    taken, each given spare_timeout_ms for its whole request: slow clients can hold the
 *    first slots for a timeout, never keep the next clients from being served when those ask
 *    at once (a slow one in a spare slot is closed at its short deadline, and takes no slot
 *    from anyone). When every slot is taken, a connection that has its whole answer,
 *    or has taken none of it for a second, is closed for the new one (counted as evicted);
 *    else the new one gets 503 in one non-blocking write (counted as refused);
 *  - the request line and headers in at most head_max bytes (414 if the line does not end
 *    in them, 431 if the headers do not), the body (Content-Length only; Transfer-Encoding
 *    gets 501) in at most body_max bytes (413), and all connections' bodies together in at
 *    most body_budget bytes (503 for the one that would pass it);
 *  - the whole request within request_timeout_ms of the accept, the answer taken within
 *    response_timeout_ms, else the connection is closed;
 *  - strict parsing (http_head__parse()): a request line that is not "METHOD /target
 *    HTTP/1.x" with a target of printable ASCII, a header name that is not a token, a
 *    control byte (NUL, a lone CR...) in a header value, a Content-Length that is not only
 *    digits or is repeated, a repeated Host or Origin: 400. A method outside the owner's set
 *    (opts.methods: GET, HEAD and POST by default): 405 with an Allow header naming the set,
 *    before any body is read;
 *  - DNS rebinding and cross-site requests (http_host__allowed(), http_origin__same()): a Host
 *    that is not "localhost", a 127.x.y.z address, the address the connection came to (the
 *    listen address, or the interface's for 0.0.0.0) or one of opts.hosts gets 403; so does an
 *    Origin that is not the Host's own origin (any method: a page elsewhere cannot make the
 *    server work for it). A request without Host (HTTP/1.0, scripts) is accepted: every
 *    browser sends one.
 * The handler sees only well-formed, allowed requests.
 * After the answer, at most HTTP_DRAIN_MAX_SZ bytes the client still sends are read and
 * dropped before the close, so that the answer is not lost to a reset.
 */
#ifndef STACKSCOPE_HTTP_SERVER_H
#define STACKSCOPE_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_DRAIN_MAX_SZ (64 * 1024)

/* A complete request; every pointer is valid only during the handler call. */
struct http_request {
	const char *method; /* "GET", "HEAD" or "POST", one of opts.methods */
	const char *path;   /* the target up to '?', still percent-encoded, starts with '/' */
	const char *query;  /* after '?' (still encoded), or "" */
	const uint8_t *body;
	size_t body_len;
	const char *content_type;     /* the Content-Type value (at most 63 bytes kept), or "" */
	const char *content_encoding; /* the Content-Encoding value (at most 31 bytes), or "" */
};

/* The handler's answer. body: NULL, or malloc()ed bytes the server frees (body_static: bytes
 * that outlive the server, never freed). content_type NULL: no body expected. headers: more
 * header lines, each ending in "\r\n", copied before the handler returns (may be NULL).
 * A HEAD request gets the headers only.
 */
struct http_response {
	int status;
	const char *content_type;
	const char *headers;
	char *body;
	const void *body_static;
	size_t body_len;
};

typedef void (*http_handler_fn)(void *ctx, const struct http_request *req,
				struct http_response *resp);

/* The methods a server answers (http_server_opts.methods). */
enum http_method {
	HTTP_METHOD_GET = 1 << 0,
	HTTP_METHOD_HEAD = 1 << 1,
	HTTP_METHOD_POST = 1 << 2,
};

struct http_server_opts {
	unsigned methods;             /* enum http_method bits; 0: GET, HEAD and POST */
	unsigned conn_max;            /* 0: 16 */
	unsigned request_timeout_ms;  /* 0: 10000 */
	unsigned response_timeout_ms; /* 0: 30000 */
	size_t head_max;              /* 0: 8 KiB */
	size_t body_max;              /* 0: no body accepted (413) */
	size_t body_budget;           /* 0: body_max * 2 */
	unsigned client_max;          /* of the conn_max, for one remote address; 0: conn_max / 2 */
	unsigned spare_max;           /* connections past conn_max; 0: conn_max / 2 (at least 1) */
	unsigned spare_timeout_ms;    /* their request timeout; 0: 1000 (at most request_timeout) */
	const char *hosts; /* more Host names accepted, comma-separated (borrowed: outlives the
			    * server); NULL: none; "*": any Host (a receiver of other machines'
			    * data, which serves nothing a rebinding page could read)
			    */
};

struct http_server_stats {
	uint64_t served;    /* answers of the handler */
	uint64_t rejected;  /* 4xx/5xx from the server itself: malformed, too large, method */
	uint64_t refused;   /* closed at once: every slot, spare ones too, was taken */
	uint64_t timed_out; /* request or answer not done in time */
	uint64_t evicted;   /* closed to make room for another (an answer out or not taken) */
	uint64_t forbidden; /* 403: a Host or Origin not allowed (also counted as rejected) */
	size_t open;        /* connections open now */
};

struct http_server;

/* The request line and headers, as http_head__parse() found them. */
struct http_head {
	char *method, *target; /* NUL-terminated in the parsed buffer */
	const char *host;      /* the Host value without surrounding blanks, or NULL */
	size_t host_len;
	const char *origin; /* the Origin value, or NULL */
	size_t origin_len;
	const char *content_type, *content_encoding; /* values, or NULL */
	size_t content_type_len, content_encoding_len;
	size_t content_length; /* 0 without the header */
};

/* Parses a request head, buf[0..len) up to and including its empty line, in place (NULs end
 * the method and the target). 0, or the status of the refusal: 400 (malformed, see the top
 * comment) or 501 (Transfer-Encoding). Exposed for the tests and tests/fuzz/fuzz_http.c.
 */
int http_head__parse(char *buf, size_t len, struct http_head *h);

/* Whether the Host value host[0..len) ("name" or "name:port") names this server: "localhost",
 * an IPv4 address in 127.0.0.0/8 or equal to local_addr (network order; 0: none), or a name of
 * the comma-separated list hosts (NULL: none; "*": any name), compared without case. The port is not
 * compared (a tunnel or proxy may change it), but must be digits.
 */
bool http_host__allowed(const char *host, size_t len, uint32_t local_addr, const char *hosts);

/* Whether the Origin value origin[0..olen) is "http://" or "https://" followed by the Host
 * value host[0..hlen) (without case): the page that sent the request is this server's own.
 * false for "null" and without a Host.
 */
bool http_origin__same(const char *origin, size_t olen, const char *host, size_t hlen);

/* Parses "HOST:PORT" (IPv4; HOST empty: 127.0.0.1) into *sa (a struct sockaddr_in). 0 or
 * -EINVAL.
 */
struct sockaddr_in;
int http_server__parse_addr(const char *addr, struct sockaddr_in *sa);

/* A non-blocking listening TCP socket bound to *sa (SO_REUSEADDR, backlog 64), the port it
 * got in *port: its fd, or -1 with errno set. (The gRPC listener's too.)
 */
int http_server__listen(const struct sockaddr_in *sa, uint16_t *port);

/* Listens on addr (port 0: any free one, see http_server__port()) and starts the thread.
 * opts may be NULL. NULL with errno set (EINVAL: bad address, EADDRINUSE...).
 */
struct http_server *http_server__start(const char *addr, const struct http_server_opts *opts,
				       http_handler_fn handler, void *ctx);
uint16_t http_server__port(const struct http_server *s);
void http_server__stats(struct http_server *s, struct http_server_stats *out);
/* Stops the thread (after the handler call in progress, if any), closes every connection,
 * frees. Accepts NULL.
 */
void http_server__stop(struct http_server *s);

#endif
