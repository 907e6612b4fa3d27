/* Prometheus /metrics endpoint: one thread, one poll() loop, non-blocking connections. See
 * metrics_server.h for the limits and why it has a thread of its own.
 *
 * Every connection is a slot of a fixed table (conn_max) that goes READING -> WRITING ->
 * DRAINING -> closed, each phase under a deadline; the poll timeout is the nearest
 * deadline, so an idle server sleeps and an expired connection is closed on time. The
 * snapshot (text, len) and the counters are the only state shared with callers (m->lock);
 * the server copies the text into the connection's answer when a request is complete.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/metrics_server.h"

#define CONN_MAX_DEFAULT 16
#define REQUEST_TIMEOUT_MS_DEFAULT 3000
#define RESPONSE_TIMEOUT_MS_DEFAULT 5000
#define DRAIN_TIMEOUT_MS 1000
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_MS 100 /* out of file descriptors: do not spin on the listener */

enum conn_state { CONN_FREE, CONN_READING, CONN_WRITING, CONN_DRAINING };

struct conn {
	enum conn_state state;
	int fd;
	uint64_t deadline_ms;
	size_t got;
	char req[METRICS_REQUEST_MAX_SZ + 1];
	const char *resp; /* the answer: resp_own, or a static error answer */
	char *resp_own;
	size_t resp_len, resp_off;
	size_t drained;
};

struct metrics_server {
	int fd;
	uint16_t port;
	int stop_pipe[2];
	pthread_t thread;
	bool thread_started;
	struct metrics_server_opts opts;
	struct conn *conns;   /* opts.conn_max slots, server thread only */
	struct pollfd *pfds;  /* 2 + opts.conn_max */
	struct conn **pconns; /* the connection of pfds[2 + i] */
	uint64_t accept_paused_until_ms;
	pthread_mutex_t lock; /* text, len, stats */
	char *text;
	size_t len;
	struct metrics_server_stats stats;
};

/* every answer but 200 is empty and closes the connection */
#define EMPTY_AND_CLOSE "Content-Length: 0\r\nConnection: close\r\n\r\n"

static const struct {
	int status;
	const char *text;
} error_answers[] = {
	{ 400, "HTTP/1.1 400 Bad Request\r\n" EMPTY_AND_CLOSE },
	{ 404, "HTTP/1.1 404 Not Found\r\n" EMPTY_AND_CLOSE },
	{ 405, "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\n" EMPTY_AND_CLOSE },
	{ 414, "HTTP/1.1 414 URI Too Long\r\n" EMPTY_AND_CLOSE },
	{ 431, "HTTP/1.1 431 Request Header Fields Too Large\r\n" EMPTY_AND_CLOSE },
	{ 503, "HTTP/1.1 503 Service Unavailable\r\n" EMPTY_AND_CLOSE },
};

/* The empty answer for an error status (400 for one not in the table). */
static const char *error_answer(int status)
{
	size_t i;

	for (i = 0; i < sizeof(error_answers) / sizeof(error_answers[0]); i++)
		if (error_answers[i].status == status)
			return error_answers[i].text;
	return error_answers[0].text;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int parse_addr(const char *addr, struct sockaddr_in *sa)
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

/* The status the request in buf[0..len) gets, or 0 while more of it is needed. buf is
 * NUL-terminated; full: no room is left for more bytes.
 */
static int request__status(const char *buf, size_t len, bool full)
{
	const char *eol = memchr(buf, '\n', len), *sp1, *sp2, *path_end;
	size_t line_len, path_len, rest;

	if (!eol)
		return full ? 414 : 0;
	line_len = (size_t)(eol - buf);
	if (line_len && buf[line_len - 1] == '\r')
		line_len--;
	sp1 = memchr(buf, ' ', line_len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', line_len - (size_t)(sp1 + 1 - buf)) : NULL;
	if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1 ||
	    line_len - (size_t)(sp2 + 1 - buf) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7))
		return 400;
	if (sp1 - buf != 3 || memcmp(buf, "GET", 3))
		return 405;
	path_end = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
	path_len = (size_t)((path_end ? path_end : sp2) - (sp1 + 1));
	if (path_len != strlen("/metrics") || memcmp(sp1 + 1, "/metrics", path_len))
		return 404;
	/* the headers end with an empty line (CRLF, or a bare LF from lenient clients) */
	rest = len - (size_t)(eol - buf);
	if (memmem(eol, rest, "\n\r\n", 3) || memmem(eol, rest, "\n\n", 2))
		return 200;
	return full ? 431 : 0;
}

static void conn__close(struct conn *c)
{
	close(c->fd);
	free(c->resp_own);
	c->resp_own = NULL;
	c->resp = NULL;
	c->fd = -1;
	c->state = CONN_FREE;
}

/* Drops a connection that ran out of time or failed; counts it. */
static void server__drop(struct metrics_server *m, struct conn *c, bool timed_out)
{
	pthread_mutex_lock(&m->lock);
	m->stats.open--;
	if (timed_out)
		m->stats.timed_out++;
	pthread_mutex_unlock(&m->lock);
	conn__close(c);
	m->accept_paused_until_ms = 0; /* a descriptor is free again */
}

/* The answer is out: stop sending, then read what the client still sends (bounded) so
 * that closing does not reset the connection before it has read the answer.
 */
static void conn__finish(struct metrics_server *m, struct conn *c)
{
	uint64_t drain_end = now_ms() + DRAIN_TIMEOUT_MS;

	shutdown(c->fd, SHUT_WR);
	c->state = CONN_DRAINING;
	c->drained = 0;
	if (drain_end < c->deadline_ms)
		c->deadline_ms = drain_end;
}

static void conn__write(struct metrics_server *m, struct conn *c)
{
	while (c->resp_off < c->resp_len) {
		ssize_t w = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* poll says when there is room */
		if (w <= 0) {
			server__drop(m, c, false);
			return;
		}
		c->resp_off += (size_t)w;
	}
	conn__finish(m, c);
}

/* Builds the answer for status and starts sending it. */
static void conn__answer(struct metrics_server *m, struct conn *c, int status)
{
	char head[160];
	int n;

	c->resp_off = 0;
	c->state = CONN_WRITING;
	c->deadline_ms = now_ms() + m->opts.response_timeout_ms;
	pthread_mutex_lock(&m->lock);
	if (status == 200 && !m->text)
		status = 503; /* nothing published yet: not ready, rather than no metrics */
	if (status == 200) {
		n = snprintf(head, sizeof(head),
			     "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
			     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			     m->len);
		c->resp_own = malloc((size_t)n + m->len);
		if (c->resp_own) {
			memcpy(c->resp_own, head, (size_t)n);
			if (m->len)
				memcpy(c->resp_own + n, m->text, m->len);
			c->resp = c->resp_own;
			c->resp_len = (size_t)n + m->len;
			m->stats.served++;
		} else {
			c->resp = error_answer(503);
			c->resp_len = strlen(c->resp);
		}
	} else {
		c->resp = error_answer(status);
		c->resp_len = strlen(c->resp);
		if (status != 503)
			m->stats.rejected++;
	}
	pthread_mutex_unlock(&m->lock);
	conn__write(m, c);
}

static void conn__read(struct metrics_server *m, struct conn *c)
{
	size_t room = METRICS_REQUEST_MAX_SZ - c->got;
	ssize_t r = recv(c->fd, c->req + c->got, room, MSG_DONTWAIT);
	int status;

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) { /* gone before its request was complete */
		server__drop(m, c, false);
		return;
	}
	c->got += (size_t)r;
	c->req[c->got] = '\0';
	status = request__status(c->req, c->got, c->got == METRICS_REQUEST_MAX_SZ);
	if (status)
		conn__answer(m, c, status);
}

static void conn__drain(struct metrics_server *m, struct conn *c)
{
	char scratch[4096];
	ssize_t r = recv(c->fd, scratch, sizeof(scratch), MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r > 0)
		c->drained += (size_t)r;
	if (r <= 0 || c->drained > METRICS_DRAIN_MAX_SZ)
		server__drop(m, c, false);
}

static void server__accept(struct metrics_server *m)
{
	unsigned i, slot;
	int fd;

	for (i = 0; i < ACCEPT_BATCH; i++) {
		fd = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				m->accept_paused_until_ms = now_ms() + ACCEPT_PAUSE_MS;
			return;
		}
		for (slot = 0; slot < m->opts.conn_max; slot++)
			if (m->conns[slot].state == CONN_FREE)
				break;
		if (slot == m->opts.conn_max) {
			/* best effort: the socket buffer of a new connection takes this at once */
			(void)send(fd, error_answer(503), strlen(error_answer(503)),
				   MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			pthread_mutex_lock(&m->lock);
			m->stats.refused++;
			pthread_mutex_unlock(&m->lock);
			continue;
		}
		m->conns[slot] = (struct conn){
			.state = CONN_READING,
			.fd = fd,
			.deadline_ms = now_ms() + m->opts.request_timeout_ms,
		};
		pthread_mutex_lock(&m->lock);
		m->stats.open++;
		pthread_mutex_unlock(&m->lock);
	}
}

/* Closes the connections past their deadline; returns the poll timeout until the next one
 * (-1: none).
 */
static int server__expire(struct metrics_server *m)
{
	uint64_t now = now_ms(), next = UINT64_MAX;
	unsigned i;

	for (i = 0; i < m->opts.conn_max; i++) {
		struct conn *c = &m->conns[i];

		if (c->state == CONN_FREE)
			continue;
		if (c->deadline_ms <= now) {
			/* a client that got its whole answer and is slow to close is no fault */
			server__drop(m, c, c->state != CONN_DRAINING);
			continue;
		}
		if (c->deadline_ms < next)
			next = c->deadline_ms;
	}
	if (m->accept_paused_until_ms > now && m->accept_paused_until_ms < next)
		next = m->accept_paused_until_ms;
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

static void *server__run(void *arg)
{
	struct metrics_server *m = arg;
	nfds_t n, k;
	unsigned i;
	int timeout;

	for (;;) {
		timeout = server__expire(m);
		m->pfds[0] = (struct pollfd){ .fd = m->fd, .events = POLLIN };
		if (m->accept_paused_until_ms > now_ms())
			m->pfds[0].fd = -1; /* ignored by poll */
		m->pfds[1] = (struct pollfd){ .fd = m->stop_pipe[0], .events = POLLIN };
		n = 2;
		for (i = 0; i < m->opts.conn_max; i++) {
			struct conn *c = &m->conns[i];

			if (c->state == CONN_FREE)
				continue;
			m->pfds[n] = (struct pollfd){
				.fd = c->fd,
				.events = c->state == CONN_WRITING ? POLLOUT : POLLIN,
			};
			m->pconns[n - 2] = c;
			n++;
		}
		if (poll(m->pfds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (m->pfds[1].revents)
			break;
		for (k = 2; k < n; k++) {
			struct conn *c = m->pconns[k - 2];

			if (!m->pfds[k].revents)
				continue;
			if (c->state == CONN_READING)
				conn__read(m, c);
			else if (c->state == CONN_WRITING)
				conn__write(m, c);
			else if (c->state == CONN_DRAINING)
				conn__drain(m, c);
		}
		if (m->pfds[0].revents & POLLIN)
			server__accept(m);
	}
	return NULL;
}

struct metrics_server *metrics_server__start(const char *addr,
					     const struct metrics_server_opts *opts)
{
	struct metrics_server *m;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1, err;
	unsigned i;

	err = parse_addr(addr, &sa);
	if (err) {
		errno = -err;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->fd = m->stop_pipe[0] = m->stop_pipe[1] = -1;
	pthread_mutex_init(&m->lock, NULL);
	if (opts)
		m->opts = *opts;
	if (!m->opts.conn_max)
		m->opts.conn_max = CONN_MAX_DEFAULT;
	if (!m->opts.request_timeout_ms)
		m->opts.request_timeout_ms = REQUEST_TIMEOUT_MS_DEFAULT;
	if (!m->opts.response_timeout_ms)
		m->opts.response_timeout_ms = RESPONSE_TIMEOUT_MS_DEFAULT;
	m->conns = calloc(m->opts.conn_max, sizeof(*m->conns));
	m->pfds = calloc(m->opts.conn_max + 2, sizeof(*m->pfds));
	m->pconns = calloc(m->opts.conn_max, sizeof(*m->pconns));
	if (!m->conns || !m->pfds || !m->pconns) {
		errno = ENOMEM;
		goto fail;
	}
	for (i = 0; i < m->opts.conn_max; i++)
		m->conns[i].fd = -1;
	m->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (m->fd < 0 || setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(m->fd, 64) ||
	    getsockname(m->fd, (struct sockaddr *)&sa, &sl) || pipe2(m->stop_pipe, O_CLOEXEC))
		goto fail;
	m->port = ntohs(sa.sin_port);
	errno = pthread_create(&m->thread, NULL, server__run, m);
	if (errno)
		goto fail;
	m->thread_started = true;
	return m;
fail:
	err = errno;
	metrics_server__stop(m);
	errno = err;
	return NULL;
}

uint16_t metrics_server__port(const struct metrics_server *m)
{
	return m->port;
}

void metrics_server__publish(struct metrics_server *m, const char *text, size_t len)
{
	char *copy = malloc(len + 1), *old;

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&m->lock);
	old = m->text;
	m->text = copy;
	m->len = len;
	pthread_mutex_unlock(&m->lock);
	free(old);
}

void metrics_server__stats(struct metrics_server *m, struct metrics_server_stats *out)
{
	pthread_mutex_lock(&m->lock);
	*out = m->stats;
	pthread_mutex_unlock(&m->lock);
}

void metrics_server__stop(struct metrics_server *m)
{
	unsigned i;

	if (!m)
		return;
	if (m->thread_started && write(m->stop_pipe[1], "x", 1) == 1)
		pthread_join(m->thread, NULL);
	for (i = 0; m->conns && i < m->opts.conn_max; i++)
		if (m->conns[i].state != CONN_FREE)
			conn__close(&m->conns[i]);
	if (m->fd >= 0)
		close(m->fd);
	if (m->stop_pipe[0] >= 0) {
		close(m->stop_pipe[0]);
		close(m->stop_pipe[1]);
	}
	pthread_mutex_destroy(&m->lock);
	free(m->conns);
	free(m->pfds);
	free(m->pconns);
	free(m->text);
	free(m);
}
