/* The HTTP/1.1 server of base/http_server.h. Each connection is a slot of a fixed table that
 * goes HEAD (reading the request line and headers) -> BODY (reading Content-Length bytes) ->
 * WRITING -> DRAINING -> free, each phase under a deadline; the poll timeout is the nearest
 * deadline. The table has conn_max slots for connections with the whole request timeout
 * ("patient") and spare_max for the others, with a short one (server__slot()). The only
 * state shared with other threads is the counters (s->lock).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/http_server.h"

#define CONN_MAX_DEFAULT 16
#define REQUEST_TIMEOUT_MS_DEFAULT 10000
#define RESPONSE_TIMEOUT_MS_DEFAULT 30000
#define HEAD_MAX_DEFAULT 8192
#define DRAIN_TIMEOUT_MS 1000
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_MS 100 /* out of file descriptors: do not spin on the listener */
#define HEADERS_MAX_SZ 1024 /* the handler's extra header lines */
#define SPARE_TIMEOUT_MS_DEFAULT 1000
#define WRITE_STALL_MS 1000 /* an answer not taken for this long: its slot may be taken */
#define METHOD_MAX_LEN 16
#define HOST_NAME_MAX_LEN 253

enum conn_state { CONN_FREE, CONN_HEAD, CONN_BODY, CONN_WRITING, CONN_DRAINING };

struct conn {
	enum conn_state state;
	int fd;
	uint32_t peer, local; /* IPv4 addresses (network order) of the client and of ours */
	bool patient;         /* one of the conn_max: the whole request timeout */
	uint64_t accepted_ms, progress_ms; /* the accept; the last byte of the answer taken */
	uint64_t deadline_ms;
	char *buf; /* the request: head_max + 1 bytes, then head + body + 1 */
	size_t got, head_len, body_len;
	char *out; /* the answer's head, then its body (out_body, unless static) */
	size_t out_len, out_off;
	const char *out_body;
	size_t out_body_len, out_body_off;
	char *out_body_own;
	size_t drained;
	bool budgeted;                               /* body_len counts against body_budget */
	char content_type[64], content_encoding[32]; /* from the head, for the handler */
};

struct http_server {
	int fd;
	uint16_t port;
	int stop_pipe[2];
	pthread_t thread;
	bool thread_started;
	struct http_server_opts opts;
	http_handler_fn handler;
	void *ctx;
	struct conn *conns; /* slot_cnt: conn_max + spare_max */
	unsigned slot_cnt;
	struct pollfd *pfds;  /* 2 + slot_cnt */
	struct conn **pconns; /* the connection of pfds[2 + i] */
	uint64_t accept_paused_until_ms;
	size_t body_in_use;   /* bytes of bodies being read or held */
	char allow[48];       /* "Allow: ...\r\n": opts.methods, for 405 answers */
	pthread_mutex_t lock; /* stats */
	struct http_server_stats stats;
};

static const struct {
	enum http_method bit;
	const char *name;
} methods[] = {
	{ HTTP_METHOD_GET, "GET" },
	{ HTTP_METHOD_HEAD, "HEAD" },
	{ HTTP_METHOD_POST, "POST" },
};

/* The enum http_method bit of a method name; 0 for one this server never answers. */
static unsigned method_bit(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(name, methods[i].name))
			return methods[i].bit;
	return 0;
}

/* "Allow: GET, HEAD\r\n" for the method set; buf holds all three names. */
static void allow_header(unsigned set, char *buf, size_t cap)
{
	size_t i, n = (size_t)snprintf(buf, cap, "Allow:");

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (set & methods[i].bit)
			n += (size_t)snprintf(buf + n, cap - n, "%s %s", n > 6 ? "," : "",
					      methods[i].name);
	snprintf(buf + n, cap - n, "\r\n");
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 422:
		return "Unprocessable Content";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	default:
		return "Unknown";
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int http_server__parse_addr(const char *addr, struct sockaddr_in *sa)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	char *end;
	long port;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static void count(struct http_server *s, uint64_t *counter)
{
	pthread_mutex_lock(&s->lock);
	(*counter)++;
	pthread_mutex_unlock(&s->lock);
}

static void conn__release_body(struct http_server *s, struct conn *c)
{
	if (c->budgeted)
		s->body_in_use -= c->body_len;
	c->budgeted = false;
}

static void conn__close(struct http_server *s, struct conn *c)
{
	conn__release_body(s, c);
	close(c->fd);
	free(c->buf);
	free(c->out);
	free(c->out_body_own);
	*c = (struct conn){ .state = CONN_FREE, .fd = -1 };
}

/* Drops a connection that ran out of time or failed. */
static void server__drop(struct http_server *s, struct conn *c, bool timed_out)
{
	pthread_mutex_lock(&s->lock);
	s->stats.open--;
	if (timed_out)
		s->stats.timed_out++;
	pthread_mutex_unlock(&s->lock);
	conn__close(s, c);
	s->accept_paused_until_ms = 0; /* a descriptor is free again */
}

/* The answer is out: stop sending, then read (bounded) what the client still sends. */
static void conn__finish(struct conn *c)
{
	uint64_t drain_end = now_ms() + DRAIN_TIMEOUT_MS;

	shutdown(c->fd, SHUT_WR);
	c->state = CONN_DRAINING;
	c->drained = 0;
	if (drain_end < c->deadline_ms)
		c->deadline_ms = drain_end;
}

/* Sends from buf[*off..len); false when the socket is full or the connection is gone. */
static bool send_some(struct http_server *s, struct conn *c, const char *buf, size_t len,
		      size_t *off)
{
	while (*off < len) {
		ssize_t w = send(c->fd, buf + *off, len - *off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false; /* poll says when there is room */
		if (w <= 0) {
			server__drop(s, c, false);
			return false;
		}
		*off += (size_t)w;
		c->progress_ms = now_ms();
	}
	return true;
}

static void conn__write(struct http_server *s, struct conn *c)
{
	if (!send_some(s, c, c->out, c->out_len, &c->out_off))
		return;
	if (!send_some(s, c, c->out_body, c->out_body_len, &c->out_body_off))
		return;
	conn__finish(c);
}

/* Starts sending an answer: head built here, body borrowed (body_static) or owned. */
static void conn__respond(struct http_server *s, struct conn *c, const struct http_response *r,
			  bool head_only)
{
	const char *headers = r->headers ?: "";
	size_t head_cap = 256 + strnlen(headers, HEADERS_MAX_SZ);
	int n;

	conn__release_body(s, c);
	free(c->buf); /* the request is done with */
	c->buf = NULL;
	c->out = malloc(head_cap);
	c->out_body_own = r->body;
	c->out_body = r->body ? r->body : r->body_static;
	c->out_body_len = c->out_body ? r->body_len : 0;
	if (!c->out) {
		server__drop(s, c, false);
		return;
	}
	if (strlen(headers) >= HEADERS_MAX_SZ)
		headers = "";
	n = snprintf(c->out, head_cap,
		     "HTTP/1.1 %d %s\r\n%s%s%sContent-Length: %zu\r\n"
		     "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
		     "Connection: close\r\n%s\r\n",
		     r->status, reason(r->status), r->content_type ? "Content-Type: " : "",
		     r->content_type ?: "", r->content_type ? "\r\n" : "", c->out_body_len,
		     headers);
	c->out_len = n > 0 && (size_t)n < head_cap ? (size_t)n : 0;
	if (head_only)
		c->out_body_len = 0;
	c->out_off = c->out_body_off = 0;
	c->state = CONN_WRITING;
	c->deadline_ms = now_ms() + s->opts.response_timeout_ms;
	conn__write(s, c);
}

/* An answer of the server itself (a short text body, why: more words or NULL), counted as
 * rejected.
 */
static void conn__reject(struct http_server *s, struct conn *c, int status, const char *why)
{
	struct http_response r = { .status = status, .content_type = "text/plain" };

	r.body = malloc(128);
	if (r.body)
		r.body_len = (size_t)snprintf(r.body, 128, "%d %s%s%s\n", status, reason(status),
					      why ? ": " : "", why ?: "");
	if (status == 405)
		r.headers = s->allow;
	count(s, &s->stats.rejected);
	conn__respond(s, c, &r, false);
}

/* Calls the handler for the complete request in c->buf (head NUL-terminated in place). */
static void conn__dispatch(struct http_server *s, struct conn *c, char *method, char *target)
{
	struct http_response r = { 0 };
	struct http_request req = {
		.method = method,
		.path = target,
		.body = (const uint8_t *)c->buf + c->head_len,
		.body_len = c->body_len,
		.content_type = c->content_type,
		.content_encoding = c->content_encoding,
	};
	char *q = strchr(target, '?');
	char headers[HEADERS_MAX_SZ];

	if (q)
		*q++ = '\0';
	req.query = q ?: "";
	s->handler(s->ctx, &req, &r);
	if (r.headers) { /* copied: the handler's may be on its stack no more */
		snprintf(headers, sizeof(headers), "%s", r.headers);
		r.headers = headers;
	}
	if (!r.status)
		r.status = 500;
	count(s, &s->stats.served);
	conn__respond(s, c, &r, !strcmp(method, "HEAD"));
}

/* RFC 9110 token characters (a header name, a method). */
static bool is_tchar(char ch)
{
	return isalnum((unsigned char)ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* The line starting at p ends at *eol ('\n', or NULL when there is none before end); the
 * returned pointer is where its content ends (before a "\r\n" or "\n").
 */
static char *line_end(char *p, char *end, char **eol)
{
	*eol = memchr(p, '\n', (size_t)(end - p));
	if (!*eol)
		return NULL;
	return *eol > p && (*eol)[-1] == '\r' ? *eol - 1 : *eol;
}

/* The header line [p, vend), name checked: a value [*v, *vend) stripped of blanks, only
 * visible bytes, blanks and obs-text in it. false: malformed.
 */
static bool header_value(char *colon, char *vend, char **v, char **v_end)
{
	char *q;

	for (q = colon + 1; q < vend && (*q == ' ' || *q == '\t'); q++)
		;
	*v = q;
	while (vend > q && (vend[-1] == ' ' || vend[-1] == '\t'))
		vend--;
	*v_end = vend;
	for (; q < vend; q++) {
		unsigned char ch = (unsigned char)*q;

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
			return false;
	}
	return true;
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && !strncasecmp(name, want, len);
}

int http_head__parse(char *buf, size_t len, struct http_head *h)
{
	char *end = buf + len, *eol, *le, *p, *colon, *v, *vend;
	bool have_len = false;
	size_t n;

	memset(h, 0, sizeof(*h));
	le = line_end(buf, end, &eol);
	if (!le)
		return 400;
	for (p = buf; p < le && *p >= 'A' && *p <= 'Z'; p++)
		;
	if (p == buf || p - buf > METHOD_MAX_LEN || p == le || *p != ' ')
		return 400;
	*p++ = '\0';
	h->method = buf;
	h->target = p;
	if (p == le || *p != '/')
		return 400;
	while (p < le && (unsigned char)*p > ' ' && (unsigned char)*p < 0x7f)
		p++;
	if (p == le || *p != ' ')
		return 400;
	*p++ = '\0';
	if (le - p != 8 || (memcmp(p, "HTTP/1.1", 8) && memcmp(p, "HTTP/1.0", 8)))
		return 400;
	for (p = eol + 1;; p = eol + 1) {
		le = line_end(p, end, &eol);
		if (!le)
			return 400; /* no empty line: not a whole head */
		if (le == p)
			return 0;
		for (colon = p; colon < le && is_tchar(*colon); colon++)
			;
		if (colon == p || colon == le || *colon != ':' ||
		    !header_value(colon, le, &v, &vend))
			return 400;
		n = (size_t)(colon - p);
		if (name_is(p, n, "Transfer-Encoding"))
			return 501;
		if (name_is(p, n, "Content-Length")) {
			if (have_len || v == vend)
				return 400;
			for (; v < vend; v++) {
				if (*v < '0' || *v > '9' || h->content_length > (SIZE_MAX - 9) / 10)
					return 400;
				h->content_length = h->content_length * 10 + (size_t)(*v - '0');
			}
			have_len = true;
		} else if (name_is(p, n, "Host")) {
			if (h->host)
				return 400;
			h->host = v;
			h->host_len = (size_t)(vend - v);
		} else if (name_is(p, n, "Origin")) {
			if (h->origin)
				return 400;
			h->origin = v;
			h->origin_len = (size_t)(vend - v);
		} else if (name_is(p, n, "Content-Type")) {
			if (h->content_type)
				return 400;
			h->content_type = v;
			h->content_type_len = (size_t)(vend - v);
		} else if (name_is(p, n, "Content-Encoding")) {
			if (h->content_encoding)
				return 400;
			h->content_encoding = v;
			h->content_encoding_len = (size_t)(vend - v);
		}
	}
}

/* Whether name[0..len) is one of the comma-separated list (no case). */
static bool in_list(const char *list, const char *name, size_t len)
{
	const char *item, *comma;
	size_t n;

	for (item = list; item && *item; item = comma ? comma + 1 : NULL) {
		comma = strchr(item, ',');
		n = comma ? (size_t)(comma - item) : strlen(item);
		if (n == len && !strncasecmp(item, name, len))
			return true;
	}
	return false;
}

bool http_host__allowed(const char *host, size_t len, uint32_t local_addr, const char *hosts)
{
	const char *colon = len ? memrchr(host, ':', len) : NULL;
	size_t name_len = colon ? (size_t)(colon - host) : len, i;
	char ip[16];
	struct in_addr a;

	if (colon) { /* a port: 1 to 5 digits */
		size_t port_len = len - name_len - 1;

		if (!port_len || port_len > 5)
			return false;
		for (i = 1; i <= port_len; i++)
			if (colon[i] < '0' || colon[i] > '9')
				return false;
	}
	if (!name_len || name_len > HOST_NAME_MAX_LEN)
		return false;
	if (name_is(host, name_len, "localhost") || (hosts && !strcmp(hosts, "*")))
		return true;
	if (name_len < sizeof(ip)) {
		memcpy(ip, host, name_len);
		ip[name_len] = '\0';
		if (inet_pton(AF_INET, ip, &a) == 1)
			return (ntohl(a.s_addr) >> 24) == 127 ||
			       (local_addr && a.s_addr == local_addr);
	}
	return in_list(hosts, host, name_len);
}

bool http_origin__same(const char *origin, size_t olen, const char *host, size_t hlen)
{
	size_t skip;

	if (!host || !hlen)
		return false;
	if (olen > 7 && !strncasecmp(origin, "http://", 7))
		skip = 7;
	else if (olen > 8 && !strncasecmp(origin, "https://", 8))
		skip = 8;
	else
		return false;
	return olen - skip == hlen && !strncasecmp(origin + skip, host, hlen);
}

/* The head is complete at c->buf[0..head_len): checks it, then dispatches, reads the body
 * first, or rejects.
 */
static void conn__head_done(struct http_server *s, struct conn *c)
{
	struct http_head h;
	char *method, *target;
	size_t body_len;
	int status = http_head__parse(c->buf, c->head_len, &h);

	if (status) {
		conn__reject(s, c, status, NULL);
		return;
	}
	method = h.method;
	target = h.target;
	body_len = h.content_length;
	/* copied now: the buffer the head is in may move when the body is read */
	snprintf(c->content_type, sizeof(c->content_type), "%.*s", (int)h.content_type_len,
		 h.content_type ?: "");
	snprintf(c->content_encoding, sizeof(c->content_encoding), "%.*s",
		 (int)h.content_encoding_len, h.content_encoding ?: "");
	if (!(method_bit(method) & s->opts.methods)) {
		conn__reject(s, c, 405, NULL);
		return;
	}
	if (h.host && !http_host__allowed(h.host, h.host_len, c->local, s->opts.hosts)) {
		count(s, &s->stats.forbidden);
		conn__reject(s, c, 403, "Host not allowed");
		return;
	}
	if (h.origin && !http_origin__same(h.origin, h.origin_len, h.host, h.host_len)) {
		count(s, &s->stats.forbidden);
		conn__reject(s, c, 403, "cross-origin request");
		return;
	}
	if (body_len) {
		size_t have = c->got - c->head_len;
		char *grown;

		if (body_len > s->opts.body_max) {
			conn__reject(s, c, 413, NULL);
			return;
		}
		if (s->body_in_use + body_len > s->opts.body_budget) {
			conn__reject(s, c, 503, NULL);
			return;
		}
		if (have > body_len)
			have = body_len; /* a pipelined second request: ignored */
		grown = realloc(c->buf, c->head_len + body_len + 1);
		if (!grown) {
			conn__reject(s, c, 503, NULL);
			return;
		}
		c->buf = grown; /* method and target moved with it: "METHOD\0target" */
		method = c->buf;
		target = c->buf + strlen(c->buf) + 1;
		c->body_len = body_len;
		c->got = c->head_len + have;
		s->body_in_use += body_len;
		c->budgeted = true;
		if (have < body_len) {
			c->state = CONN_BODY;
			/* method and target stay in buf: remember where they are */
			return;
		}
	}
	c->buf[c->head_len + c->body_len] = '\0';
	conn__dispatch(s, c, method, target);
}

/* Where the head ends (just past its empty line) in buf[0..len), or 0. */
static size_t head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static void conn__read(struct http_server *s, struct conn *c)
{
	size_t cap = c->state == CONN_HEAD ? s->opts.head_max : c->head_len + c->body_len;
	ssize_t r = recv(c->fd, c->buf + c->got, cap - c->got, MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) { /* gone before its request was complete */
		server__drop(s, c, false);
		return;
	}
	c->got += (size_t)r;
	c->buf[c->got] = '\0';
	if (c->state == CONN_HEAD) {
		size_t scan_from = c->got - (size_t)r >= 3 ? c->got - (size_t)r - 3 : 0;
		size_t end = head_end(c->buf + scan_from, c->got - scan_from);

		if (end) {
			c->head_len = scan_from + end;
			conn__head_done(s, c);
		} else if (c->got == cap) {
			conn__reject(s, c, memchr(c->buf, '\n', c->got) ? 431 : 414, NULL);
		}
		return;
	}
	if (c->got == cap) { /* the body is complete: method and target are at the start */
		char *method = c->buf, *target = method + strlen(method) + 1;

		c->buf[c->got] = '\0';
		conn__dispatch(s, c, method, target);
	}
}

static void conn__drain(struct http_server *s, struct conn *c)
{
	char scratch[4096];
	ssize_t r = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r > 0)
		c->drained += (size_t)r;
	if (r <= 0 || c->drained > HTTP_DRAIN_MAX_SZ)
		server__drop(s, c, false);
}

/* Reads (without waiting, bounded) what a client already sent to a socket about to be closed:
 * closing over unread bytes resets the connection, and the reset may destroy the answer.
 */
static void conn__discard_unread(int fd)
{
	char scratch[4096];

	shutdown(fd, SHUT_WR);
	(void)recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
}

/* Whether c may be closed to make room for a new connection: it has its whole answer, or it
 * has taken none of it for WRITE_STALL_MS.
 */
static bool conn__evictable(const struct conn *c, uint64_t now)
{
	return c->state == CONN_DRAINING ||
	       (c->state == CONN_WRITING && now - c->progress_ms >= WRITE_STALL_MS);
}

/* Whether peer (network order) is the machine itself: 127.0.0.0/8, where any process picks
 * its source address at will, so that counting by address limits no one.
 */
static bool peer_is_local(uint32_t peer)
{
	return (ntohl(peer) >> 24) == 127;
}

/* A free slot for a connection from peer, and in *patient whether it is one of the conn_max
 * (its client under client_max of them) or a spare one. When there is none, the oldest
 * evictable connection whose place the new one may take is closed for it. NULL: no room.
 */
static struct conn *server__slot(struct http_server *s, uint32_t peer, bool *patient)
{
	struct conn *free_slot = NULL, *victim = NULL;
	unsigned i, patients = 0, spares = 0, own = 0;
	bool local = peer_is_local(peer);
	uint64_t now = now_ms();

	for (i = 0; i < s->slot_cnt; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE) {
			free_slot = free_slot ?: c;
		} else if (c->patient) {
			patients++;
			own += c->peer == peer;
		} else {
			spares++;
		}
	}
	*patient = patients < s->opts.conn_max && (local || own < s->opts.client_max);
	if (free_slot && (*patient || spares < s->opts.spare_max))
		return free_slot;
	for (i = 0; i < s->slot_cnt; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE || !conn__evictable(c, now))
			continue;
		/* a spare's place, or a patient one's that the new one may have */
		if (c->patient && !local && own - (c->peer == peer) >= s->opts.client_max)
			continue;
		if (!victim || c->accepted_ms < victim->accepted_ms)
			victim = c;
	}
	if (!victim)
		return NULL;
	if (victim->patient)
		*patient = true; /* its place among the conn_max is the new one's */
	count(s, &s->stats.evicted);
	server__drop(s, victim, false);
	return victim;
}

static void server__accept(struct http_server *s)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";
	struct sockaddr_in peer, local;
	socklen_t len;
	struct conn *c;
	bool patient;
	unsigned i;
	int fd;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof(peer);
		fd = accept4(s->fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				s->accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		if (len != sizeof(peer))
			peer.sin_addr.s_addr = 0;
		len = sizeof(local);
		if (getsockname(fd, (struct sockaddr *)&local, &len) || len != sizeof(local))
			local.sin_addr.s_addr = 0;
		c = server__slot(s, peer.sin_addr.s_addr, &patient);
		if (!c) {
			/* best effort: a new connection's socket buffer takes this at once */
			(void)send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			conn__discard_unread(fd);
			close(fd);
			count(s, &s->stats.refused);
			continue;
		}
		*c = (struct conn){
			.state = CONN_HEAD,
			.fd = fd,
			.peer = peer.sin_addr.s_addr,
			.local = local.sin_addr.s_addr,
			.patient = patient,
			.accepted_ms = now_ms(),
			.buf = malloc(s->opts.head_max + 1),
		};
		c->progress_ms = c->accepted_ms;
		c->deadline_ms = c->accepted_ms +
				 (patient ? s->opts.request_timeout_ms : s->opts.spare_timeout_ms);
		if (!c->buf) {
			close(fd);
			*c = (struct conn){ .state = CONN_FREE, .fd = -1 };
			count(s, &s->stats.refused);
			continue;
		}
		pthread_mutex_lock(&s->lock);
		s->stats.open++;
		pthread_mutex_unlock(&s->lock);
	}
}

/* Closes the connections past their deadline; the poll timeout until the next one (-1:
 * none).
 */
static int server__expire(struct http_server *s)
{
	uint64_t now = now_ms(), next = UINT64_MAX;
	unsigned i;

	for (i = 0; i < s->slot_cnt; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE)
			continue;
		if (c->deadline_ms <= now) {
			/* a client that got its whole answer and is slow to close is no fault */
			server__drop(s, c, c->state != CONN_DRAINING);
			continue;
		}
		if (c->deadline_ms < next)
			next = c->deadline_ms;
	}
	if (s->accept_paused_until_ms > now && s->accept_paused_until_ms < next)
		next = s->accept_paused_until_ms;
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

static void *server__run(void *arg)
{
	struct http_server *s = arg;
	nfds_t n, k;
	unsigned i;
	int timeout;

	for (;;) {
		timeout = server__expire(s);
		s->pfds[0] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
		if (s->accept_paused_until_ms > now_ms())
			s->pfds[0].fd = -1; /* ignored by poll */
		s->pfds[1] = (struct pollfd){ .fd = s->stop_pipe[0], .events = POLLIN };
		n = 2;
		for (i = 0; i < s->slot_cnt; i++) {
			struct conn *c = &s->conns[i];

			if (c->state == CONN_FREE)
				continue;
			s->pfds[n] = (struct pollfd){
				.fd = c->fd,
				.events = c->state == CONN_WRITING ? POLLOUT : POLLIN,
			};
			s->pconns[n - 2] = c;
			n++;
		}
		if (poll(s->pfds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (s->pfds[1].revents)
			break;
		for (k = 2; k < n; k++) {
			struct conn *c = s->pconns[k - 2];

			if (!s->pfds[k].revents)
				continue;
			if (c->state == CONN_HEAD || c->state == CONN_BODY)
				conn__read(s, c);
			else if (c->state == CONN_WRITING)
				conn__write(s, c);
			else if (c->state == CONN_DRAINING)
				conn__drain(s, c);
		}
		if (s->pfds[0].revents & POLLIN)
			server__accept(s);
	}
	return NULL;
}

int http_server__listen(const struct sockaddr_in *sa, uint16_t *port)
{
	struct sockaddr_in bound = *sa;
	socklen_t sl = sizeof(bound);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, err;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&bound, &sl)) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	*port = ntohs(bound.sin_port);
	return fd;
}

struct http_server *http_server__start(const char *addr, const struct http_server_opts *opts,
				       http_handler_fn handler, void *ctx)
{
	struct http_server *s;
	struct sockaddr_in sa;
	int err;
	unsigned i;

	err = http_server__parse_addr(addr, &sa);
	if (err) {
		errno = -err;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	s->handler = handler;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	if (opts)
		s->opts = *opts;
	if (!s->opts.methods)
		s->opts.methods = HTTP_METHOD_GET | HTTP_METHOD_HEAD | HTTP_METHOD_POST;
	allow_header(s->opts.methods, s->allow, sizeof(s->allow));
	if (!s->opts.conn_max)
		s->opts.conn_max = CONN_MAX_DEFAULT;
	if (!s->opts.client_max)
		s->opts.client_max = (s->opts.conn_max + 1) / 2;
	if (!s->opts.spare_max)
		s->opts.spare_max = (s->opts.conn_max + 1) / 2;
	if (!s->opts.spare_timeout_ms)
		s->opts.spare_timeout_ms = SPARE_TIMEOUT_MS_DEFAULT;
	if (!s->opts.request_timeout_ms)
		s->opts.request_timeout_ms = REQUEST_TIMEOUT_MS_DEFAULT;
	if (!s->opts.response_timeout_ms)
		s->opts.response_timeout_ms = RESPONSE_TIMEOUT_MS_DEFAULT;
	if (s->opts.spare_timeout_ms > s->opts.request_timeout_ms)
		s->opts.spare_timeout_ms = s->opts.request_timeout_ms;
	if (s->opts.head_max < 256)
		s->opts.head_max = HEAD_MAX_DEFAULT;
	if (!s->opts.body_budget)
		s->opts.body_budget = s->opts.body_max * 2;
	s->slot_cnt = s->opts.conn_max + s->opts.spare_max;
	s->conns = calloc(s->slot_cnt, sizeof(*s->conns));
	s->pfds = calloc(s->slot_cnt + 2, sizeof(*s->pfds));
	s->pconns = calloc(s->slot_cnt, sizeof(*s->pconns));
	if (!s->conns || !s->pfds || !s->pconns) {
		errno = ENOMEM;
		goto fail;
	}
	for (i = 0; i < s->slot_cnt; i++)
		s->conns[i].fd = -1;
	s->fd = http_server__listen(&sa, &s->port);
	if (s->fd < 0 || pipe2(s->stop_pipe, O_CLOEXEC))
		goto fail;
	errno = pthread_create(&s->thread, NULL, server__run, s);
	if (errno)
		goto fail;
	s->thread_started = true;
	return s;
fail:
	err = errno;
	http_server__stop(s);
	errno = err;
	return NULL;
}

uint16_t http_server__port(const struct http_server *s)
{
	return s->port;
}

void http_server__stats(struct http_server *s, struct http_server_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->stats;
	pthread_mutex_unlock(&s->lock);
}

void http_server__stop(struct http_server *s)
{
	unsigned i;

	if (!s)
		return;
	if (s->thread_started && write(s->stop_pipe[1], "x", 1) == 1)
		pthread_join(s->thread, NULL);
	for (i = 0; s->conns && i < s->slot_cnt; i++)
		if (s->conns[i].state != CONN_FREE)
			conn__close(s, &s->conns[i]);
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->conns);
	free(s->pfds);
	free(s->pconns);
	free(s);
}
