/* The HTTP/1.1 server of base/http_server.h. Each connection is a slot of a fixed table that
 * goes HEAD (reading the request line and headers) -> BODY (reading Content-Length bytes) ->
 * WRITING -> DRAINING -> free, each phase under a deadline; the poll timeout is the nearest
 * deadline. The only state shared with other threads is the counters (s->lock).
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

enum conn_state { CONN_FREE, CONN_HEAD, CONN_BODY, CONN_WRITING, CONN_DRAINING };

struct conn {
	enum conn_state state;
	int fd;
	uint64_t deadline_ms;
	char *buf; /* the request: head_max + 1 bytes, then head + body + 1 */
	size_t got, head_len, body_len;
	char *out; /* the answer's head, then its body (out_body, unless static) */
	size_t out_len, out_off;
	const char *out_body;
	size_t out_body_len, out_body_off;
	char *out_body_own;
	size_t drained;
	bool budgeted; /* body_len counts against body_budget */
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
	struct conn *conns;
	struct pollfd *pfds;  /* 2 + conn_max */
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

/* An answer of the server itself (a short text body), counted as rejected. */
static void conn__reject(struct http_server *s, struct conn *c, int status)
{
	struct http_response r = { .status = status, .content_type = "text/plain" };

	r.body = malloc(64);
	if (r.body)
		r.body_len = (size_t)snprintf(r.body, 64, "%d %s\n", status, reason(status));
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

/* Value of Content-Length in the header lines [p, end): 0 none, 1 found (*len), -400/-501. */
static int parse_headers(char *p, char *end, size_t *len)
{
	bool have_len = false;

	*len = 0;
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		char *colon, *v, *vend;

		if (!eol)
			eol = end;
		vend = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (vend == p) /* the empty line */
			break;
		colon = memchr(p, ':', (size_t)(vend - p));
		if (!colon || colon == p)
			return -400;
		for (v = p; v < colon; v++)
			if (!isgraph((unsigned char)*v))
				return -400;
		v = colon + 1;
		while (v < vend && (*v == ' ' || *v == '\t'))
			v++;
		if ((size_t)(colon - p) == 17 && !strncasecmp(p, "Transfer-Encoding", 17))
			return -501;
		if ((size_t)(colon - p) == 14 && !strncasecmp(p, "Content-Length", 14)) {
			size_t n = 0;
			char *d = v;

			if (have_len || d == vend)
				return -400;
			for (; d < vend && *d != ' ' && *d != '\t'; d++) {
				if (*d < '0' || *d > '9' || n > SIZE_MAX / 10 - 10)
					return -400;
				n = n * 10 + (size_t)(*d - '0');
			}
			have_len = true;
			*len = n;
		}
		p = eol + 1;
	}
	return have_len;
}

/* The head is complete at c->buf[0..head_len): checks it, then dispatches, reads the body
 * first, or rejects.
 */
static void conn__head_done(struct http_server *s, struct conn *c)
{
	char *line_end = memchr(c->buf, '\n', c->head_len);
	char *method = c->buf, *target, *version, *p;
	size_t body_len = 0;
	int hl;

	if (line_end > c->buf && line_end[-1] == '\r')
		line_end[-1] = '\0';
	*line_end = '\0';
	target = strchr(method, ' ');
	if (!target) {
		conn__reject(s, c, 400);
		return;
	}
	*target++ = '\0';
	version = strchr(target, ' ');
	if (!version) {
		conn__reject(s, c, 400);
		return;
	}
	*version++ = '\0';
	if (strcmp(version, "HTTP/1.1") && strcmp(version, "HTTP/1.0")) {
		conn__reject(s, c, 400);
		return;
	}
	if (target[0] != '/') {
		conn__reject(s, c, 400);
		return;
	}
	for (p = target; *p; p++)
		if (!isgraph((unsigned char)*p)) {
			conn__reject(s, c, 400);
			return;
		}
	for (p = method; *p; p++)
		if (!isupper((unsigned char)*p)) {
			conn__reject(s, c, 400);
			return;
		}
	if (!(method_bit(method) & s->opts.methods)) {
		conn__reject(s, c, 405);
		return;
	}
	hl = parse_headers(line_end + 1, c->buf + c->head_len, &body_len);
	if (hl < 0) {
		conn__reject(s, c, -hl);
		return;
	}
	if (body_len) {
		size_t have = c->got - c->head_len;
		char *grown;

		if (body_len > s->opts.body_max) {
			conn__reject(s, c, 413);
			return;
		}
		if (s->body_in_use + body_len > s->opts.body_budget) {
			conn__reject(s, c, 503);
			return;
		}
		if (have > body_len)
			have = body_len; /* a pipelined second request: ignored */
		grown = realloc(c->buf, c->head_len + body_len + 1);
		if (!grown) {
			conn__reject(s, c, 503);
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
			conn__reject(s, c, memchr(c->buf, '\n', c->got) ? 431 : 414);
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

static void server__accept(struct http_server *s)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";
	unsigned i, slot;
	int fd;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				s->accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		for (slot = 0; slot < s->opts.conn_max; slot++)
			if (s->conns[slot].state == CONN_FREE)
				break;
		if (slot == s->opts.conn_max) {
			/* best effort: a new connection's socket buffer takes this at once */
			(void)send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			conn__discard_unread(fd);
			close(fd);
			count(s, &s->stats.refused);
			continue;
		}
		s->conns[slot] = (struct conn){
			.state = CONN_HEAD,
			.fd = fd,
			.deadline_ms = now_ms() + s->opts.request_timeout_ms,
			.buf = malloc(s->opts.head_max + 1),
		};
		if (!s->conns[slot].buf) {
			close(fd);
			s->conns[slot] = (struct conn){ .state = CONN_FREE, .fd = -1 };
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

	for (i = 0; i < s->opts.conn_max; i++) {
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
		for (i = 0; i < s->opts.conn_max; i++) {
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

struct http_server *http_server__start(const char *addr, const struct http_server_opts *opts,
				       http_handler_fn handler, void *ctx)
{
	struct http_server *s;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1, err;
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
	if (!s->opts.request_timeout_ms)
		s->opts.request_timeout_ms = REQUEST_TIMEOUT_MS_DEFAULT;
	if (!s->opts.response_timeout_ms)
		s->opts.response_timeout_ms = RESPONSE_TIMEOUT_MS_DEFAULT;
	if (s->opts.head_max < 256)
		s->opts.head_max = HEAD_MAX_DEFAULT;
	if (!s->opts.body_budget)
		s->opts.body_budget = s->opts.body_max * 2;
	s->conns = calloc(s->opts.conn_max, sizeof(*s->conns));
	s->pfds = calloc(s->opts.conn_max + 2, sizeof(*s->pfds));
	s->pconns = calloc(s->opts.conn_max, sizeof(*s->pconns));
	if (!s->conns || !s->pfds || !s->pconns) {
		errno = ENOMEM;
		goto fail;
	}
	for (i = 0; i < s->opts.conn_max; i++)
		s->conns[i].fd = -1;
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->fd, 64) ||
	    getsockname(s->fd, (struct sockaddr *)&sa, &sl) || pipe2(s->stop_pipe, O_CLOEXEC))
		goto fail;
	s->port = ntohs(sa.sin_port);
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
	for (i = 0; s->conns && i < s->opts.conn_max; i++)
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
