/* A gRPC server of one unary method over cleartext HTTP/2. See grpc_listener.h.
 *
 * libnghttp2 does the framing, HPACK, flow control (windows updated as data is taken) and the
 * protocol's checks; this file keeps the sockets, the calls' buffers and the gRPC layer.
 * Everything runs on the listener's thread; the counters are atomics for the owner's.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "base/http_server.h"
#include "base/log.h"
#include "serve/grpc_listener.h"

#define GRPC_PREFIX 5 /* compressed flag, 4-byte big-endian length */
#define HEADER_LIST_MAX (16 * 1024)
#define WINDOW (1 << 20) /* the stream and connection windows we offer */
#define READ_CHUNK (64 * 1024)

struct call {
	int32_t id;
	bool post, path_ok, media_ok, gzip, encoding_bad;
	bool answered;
	size_t head_bytes; /* the request's header fields, as HPACK counts them */
	int refusal;       /* a gRPC status the listener answers with (0: none) */
	const char *refusal_msg;
	uint8_t *buf; /* the request stream's data */
	size_t len, cap;
	uint8_t *out; /* the response message, prefix included */
	size_t out_len, out_off;
	char status[12], message[3 * 192 + 1];
	uint64_t start_ms;
	struct call *next; /* the connection's calls */
};

struct conn {
	int fd;
	nghttp2_session *h2;
	struct call *calls;
	uint64_t active_ms; /* the last read or write */
	bool want_close;
};

struct grpc_listener {
	int fd, stop_pipe[2];
	pthread_t thread;
	bool thread_started;
	uint16_t port;
	const char *path;
	size_t message_max, buffered, budget;
	unsigned conn_max;
	struct conn *conns; /* conn_max slots; fd -1: free */
	grpc_unary_fn fn;
	void *ctx;
	_Atomic uint64_t calls, refused, conns_refused, timed_out, protocol_errors;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void grpc_message__encode(const char *msg, char *out, size_t out_sz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	if (!out_sz)
		return;
	for (; *msg; msg++) {
		unsigned char ch = (unsigned char)*msg;

		if (ch >= 0x20 && ch <= 0x7e && ch != '%') {
			if (n + 1 >= out_sz)
				break;
			out[n++] = (char)ch;
		} else {
			if (n + 3 >= out_sz)
				break;
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
}

static struct call *call__find(struct conn *c, int32_t id)
{
	struct call *k;

	for (k = c->calls; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

static void call__drop_buf(struct grpc_listener *l, struct call *k)
{
	l->buffered -= k->cap;
	free(k->buf);
	k->buf = NULL;
	k->len = k->cap = 0;
}

static void call__free(struct grpc_listener *l, struct call *k)
{
	call__drop_buf(l, k);
	free(k->out);
	free(k);
}

/* ---- libnghttp2's callbacks (user_data: the listener; the connection is found by session) */

struct cb_ctx {
	struct grpc_listener *l;
	struct conn *c;
};

static ssize_t on_send(nghttp2_session *h2, const uint8_t *data, size_t len, int flags, void *ud)
{
	struct cb_ctx *x = ud;
	ssize_t n = send(x->c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)h2;
	(void)flags;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? NGHTTP2_ERR_WOULDBLOCK
							       : NGHTTP2_ERR_CALLBACK_FAILURE;
	x->c->active_ms = now_ms();
	return n;
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *ud)
{
	struct cb_ctx *x = ud;
	struct call *k;

	size_t open = 0;

	(void)h2;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/* past our SETTINGS' bound (a client that opens streams before it has them): reset */
	for (k = x->c->calls; k; k = k->next)
		open++;
	if (open >= GRPC_STREAMS_MAX) {
		atomic_fetch_add(&x->l->refused, 1);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
	k->id = f->hd.stream_id;
	k->start_ms = now_ms();
	k->next = x->c->calls;
	x->c->calls = k;
	return 0;
}

static bool value_is(const uint8_t *v, size_t len, const char *s)
{
	return len == strlen(s) && !memcmp(v, s, len);
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name,
		     size_t name_len, const uint8_t *value, size_t value_len, uint8_t flags,
		     void *ud)
{
	struct cb_ctx *x = ud;
	struct call *k = call__find(x->c, f->hd.stream_id);

	(void)h2;
	(void)flags;
	if (!k)
		return 0;
	k->head_bytes += name_len + value_len + 32;
	if (k->head_bytes > HEADER_LIST_MAX) { /* the stream is reset, the call freed */
		atomic_fetch_add(&x->l->refused, 1);
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0; /* trailers of a request: nothing in them matters */
	if (value_is(name, name_len, ":method"))
		k->post = value_is(value, value_len, "POST");
	else if (value_is(name, name_len, ":path"))
		k->path_ok = value_is(value, value_len, x->l->path);
	else if (value_is(name, name_len, "content-type"))
		/* application/grpc, application/grpc+proto, application/grpc; ... */
		k->media_ok = value_len >= 16 && !memcmp(value, "application/grpc", 16) &&
			      (value_len == 16 || value[16] == '+' || value[16] == ';');
	else if (value_is(name, name_len, "grpc-encoding")) {
		k->gzip = value_is(value, value_len, "gzip");
		k->encoding_bad = !k->gzip && !value_is(value, value_len, "identity");
	}
	return 0;
}

static int on_data(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *ud)
{
	struct cb_ctx *x = ud;
	struct grpc_listener *l = x->l;
	struct call *k = call__find(x->c, id);
	size_t want, cap;
	uint8_t *grown;

	(void)h2;
	(void)flags;
	if (!k || k->refusal)
		return 0; /* read and dropped (the window is given back all the same) */
	want = k->len + len;
	if (want > l->message_max + GRPC_PREFIX) {
		k->refusal = GRPC_RESOURCE_EXHAUSTED;
		k->refusal_msg = "the request message passes the receiver's size cap";
		call__drop_buf(l, k);
		return 0;
	}
	if (want > k->cap) {
		cap = k->cap ? k->cap : 64 * 1024;
		while (cap < want)
			cap *= 2;
		if (cap > l->message_max + GRPC_PREFIX)
			cap = l->message_max + GRPC_PREFIX;
		if (l->buffered - k->cap + cap > l->budget || !(grown = realloc(k->buf, cap))) {
			k->refusal = GRPC_UNAVAILABLE;
			k->refusal_msg = "the receiver is busy with other requests: retry later";
			call__drop_buf(l, k);
			return 0;
		}
		l->buffered += cap - k->cap;
		k->buf = grown;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, data, len);
	k->len = want;
	return 0;
}

/* The response message's bytes, then the trailers. */
static ssize_t read_reply(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len,
			  uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct call *k = src->ptr;
	size_t n = k->out_len - k->out_off;
	nghttp2_nv trailers[2] = {
		{ (uint8_t *)"grpc-status", (uint8_t *)k->status, 11, strlen(k->status),
		  NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"grpc-message", (uint8_t *)k->message, 12, strlen(k->message),
		  NGHTTP2_NV_FLAG_NONE },
	};

	(void)ud;
	if (n > len)
		n = len;
	memcpy(buf, k->out + k->out_off, n);
	k->out_off += n;
	if (k->out_off == k->out_len) {
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(h2, id, trailers, k->message[0] ? 2 : 1))
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

/* Submits k's answer: a failure trailers-only, a success with its message and trailers. */
static int call__answer(struct conn *c, struct call *k, int status, const char *msg, uint8_t *body,
			size_t body_len)
{
	nghttp2_nv head[4] = {
		{ (uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16,
		  NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"grpc-status", (uint8_t *)k->status, 11, 0, NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"grpc-message", (uint8_t *)k->message, 12, 0, NGHTTP2_NV_FLAG_NONE },
	};
	nghttp2_data_provider dp = { .source.ptr = k, .read_callback = read_reply };

	k->answered = true;
	snprintf(k->status, sizeof(k->status), "%d", status);
	grpc_message__encode(msg ? msg : "", k->message, sizeof(k->message));
	head[2].valuelen = strlen(k->status);
	head[3].valuelen = strlen(k->message);
	if (status != GRPC_OK) {
		free(body);
		return nghttp2_submit_response(c->h2, k->id, head, k->message[0] ? 4 : 3, NULL);
	}
	k->out = malloc(GRPC_PREFIX + body_len);
	if (!k->out) {
		free(body);
		snprintf(k->status, sizeof(k->status), "%d", GRPC_UNAVAILABLE);
		grpc_message__encode("out of memory", k->message, sizeof(k->message));
		head[2].valuelen = strlen(k->status);
		head[3].valuelen = strlen(k->message);
		return nghttp2_submit_response(c->h2, k->id, head, 4, NULL);
	}
	k->out[0] = 0;
	k->out[1] = (uint8_t)(body_len >> 24);
	k->out[2] = (uint8_t)(body_len >> 16);
	k->out[3] = (uint8_t)(body_len >> 8);
	k->out[4] = (uint8_t)body_len;
	if (body_len)
		memcpy(k->out + GRPC_PREFIX, body, body_len);
	free(body);
	k->out_len = GRPC_PREFIX + body_len;
	k->message[0] = '\0';
	return nghttp2_submit_response(c->h2, k->id, head, 2, &dp);
}

/* A request stream ended: check it, hand its message over, answer. */
static int call__serve(struct grpc_listener *l, struct conn *c, struct call *k)
{
	nghttp2_nv h415[1] = {
		{ (uint8_t *)":status", (uint8_t *)"415", 7, 3, NGHTTP2_NV_FLAG_NONE },
	};
	struct grpc_reply reply = { 0 };
	uint32_t mlen;
	bool compressed;

	if (!k->media_ok) { /* not gRPC: the HTTP status, as the gRPC HTTP/2 mapping says */
		k->answered = true;
		atomic_fetch_add(&l->refused, 1);
		return nghttp2_submit_response(c->h2, k->id, h415, 1, NULL);
	}
	if (!k->refusal && (!k->post || !k->path_ok)) {
		k->refusal = GRPC_UNIMPLEMENTED;
		k->refusal_msg = "this server serves only the OTLP profiles Export method";
	}
	if (!k->refusal && k->encoding_bad) {
		k->refusal = GRPC_UNIMPLEMENTED;
		k->refusal_msg = "only the gzip grpc-encoding is received";
	}
	if (!k->refusal) {
		compressed = k->len >= 1 && k->buf[0];
		mlen = k->len >= GRPC_PREFIX
			       ? (uint32_t)k->buf[1] << 24 | (uint32_t)k->buf[2] << 16 |
					 (uint32_t)k->buf[3] << 8 | k->buf[4]
			       : 0;
		if (k->len < GRPC_PREFIX || (k->buf[0] & ~1) || mlen != k->len - GRPC_PREFIX) {
			k->refusal = GRPC_INTERNAL;
			k->refusal_msg = "not one length-prefixed gRPC message";
		} else if (compressed && !k->gzip) {
			k->refusal = GRPC_UNIMPLEMENTED;
			k->refusal_msg = "a compressed message without grpc-encoding gzip";
		} else {
			l->fn(l->ctx, k->buf + GRPC_PREFIX, mlen, compressed, &reply);
			call__drop_buf(l, k);
			atomic_fetch_add(&l->calls, 1);
			return call__answer(c, k, reply.status, reply.message, reply.body,
					    reply.body_len);
		}
	}
	call__drop_buf(l, k);
	atomic_fetch_add(&l->refused, 1);
	return call__answer(c, k, k->refusal, k->refusal_msg, NULL, 0);
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *ud)
{
	struct cb_ctx *x = ud;
	struct call *k;

	(void)h2;
	if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	k = call__find(x->c, f->hd.stream_id);
	if (!k || k->answered)
		return 0;
	return call__serve(x->l, x->c, k) ? NGHTTP2_ERR_CALLBACK_FAILURE : 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t code, void *ud)
{
	struct cb_ctx *x = ud;
	struct call **p;

	(void)h2;
	(void)code;
	for (p = &x->c->calls; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			struct call *k = *p;

			*p = k->next;
			call__free(x->l, k);
			break;
		}
	return 0;
}

/* ---- connections ---- */

static nghttp2_session_callbacks *callbacks__new(void)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb))
		return NULL;
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	return cb;
}

static void conn__close(struct grpc_listener *l, struct conn *c)
{
	struct call *k, *next;

	for (k = c->calls; k; k = next) {
		next = k->next;
		call__free(l, k);
	}
	c->calls = NULL;
	nghttp2_session_del(c->h2);
	c->h2 = NULL;
	close(c->fd);
	c->fd = -1;
}

/* A new connection in slot c: the session (its user data set by each conn__pump()), our
 * SETTINGS and the larger window.
 */
static int conn__open(struct conn *c, int fd, nghttp2_session_callbacks *cb)
{
	nghttp2_settings_entry set[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GRPC_STREAMS_MAX },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEADER_LIST_MAX },
	};

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->active_ms = now_ms();
	if (nghttp2_session_server_new(&c->h2, cb, NULL) ||
	    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, set, sizeof(set) / sizeof(set[0])) ||
	    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, WINDOW)) {
		if (c->h2)
			nghttp2_session_del(c->h2);
		c->h2 = NULL;
		close(fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

/* Reads what the socket has and sends what the session has. false: close it. */
static bool conn__pump(struct grpc_listener *l, struct conn *c, short revents)
{
	struct cb_ctx x = { l, c };
	uint8_t buf[READ_CHUNK];
	ssize_t n, used;

	nghttp2_session_set_user_data(c->h2, &x);
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		for (;;) {
			n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return false; /* the peer closed, or an error */
			c->active_ms = now_ms();
			used = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
			if (used < 0) {
				atomic_fetch_add(&l->protocol_errors, 1);
				nghttp2_session_send(c->h2); /* the GOAWAY, if it goes */
				return false;
			}
			if (n < (ssize_t)sizeof(buf))
				break;
		}
	}
	if (nghttp2_session_send(c->h2))
		return false;
	return nghttp2_session_want_read(c->h2) || nghttp2_session_want_write(c->h2);
}

/* Whether c is past a deadline: a call open too long, or idle too long. */
static bool conn__expired(const struct conn *c, uint64_t now)
{
	const struct call *k;

	for (k = c->calls; k; k = k->next)
		if (!k->answered && now - k->start_ms > GRPC_CALL_TIMEOUT_MS)
			return true;
	return !c->calls && now - c->active_ms > GRPC_IDLE_TIMEOUT_MS;
}

static void *listener__run(void *arg)
{
	struct grpc_listener *l = arg;
	nghttp2_session_callbacks *cb = callbacks__new();
	struct pollfd *pfd = calloc(l->conn_max + 2, sizeof(*pfd));
	unsigned i, n;

	if (!cb || !pfd) {
		pr_err("otlp receiver (gRPC): out of memory: not serving\n");
		goto out;
	}
	for (;;) {
		uint64_t now = now_ms();

		pfd[0] = (struct pollfd){ .fd = l->stop_pipe[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
		for (i = 0; i < l->conn_max; i++) {
			struct conn *c = &l->conns[i];

			pfd[2 + i] = (struct pollfd){ .fd = c->fd };
			if (c->fd < 0)
				continue;
			if (conn__expired(c, now)) {
				atomic_fetch_add(&l->timed_out, 1);
				conn__close(l, c);
				pfd[2 + i].fd = -1;
				continue;
			}
			pfd[2 + i].events =
				(short)((nghttp2_session_want_read(c->h2) ? POLLIN : 0) |
					(nghttp2_session_want_write(c->h2) ? POLLOUT : 0));
		}
		if (poll(pfd, l->conn_max + 2, 1000) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents & POLLIN) {
			int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;

			if (fd >= 0) {
				for (n = 0; n < l->conn_max && l->conns[n].fd >= 0; n++)
					;
				if (n == l->conn_max) {
					atomic_fetch_add(&l->conns_refused, 1);
					close(fd);
				} else {
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					if (!conn__open(&l->conns[n], fd, cb) &&
					    !conn__pump(l, &l->conns[n], 0))
						conn__close(l, &l->conns[n]);
				}
			}
		}
		for (i = 0; i < l->conn_max; i++) {
			struct conn *c = &l->conns[i];

			if (c->fd < 0 || pfd[2 + i].fd != c->fd || !pfd[2 + i].revents)
				continue;
			if (!conn__pump(l, c, pfd[2 + i].revents))
				conn__close(l, c);
		}
	}
out:
	for (i = 0; i < l->conn_max; i++)
		if (l->conns[i].fd >= 0)
			conn__close(l, &l->conns[i]);
	if (cb)
		nghttp2_session_callbacks_del(cb);
	free(pfd);
	return NULL;
}

struct grpc_listener *grpc_listener__start(const struct grpc_listener_opts *o, grpc_unary_fn fn,
					   void *ctx)
{
	struct grpc_listener *l = calloc(1, sizeof(*l));
	struct sockaddr_in sa;
	unsigned i;
	int err;

	if (!l)
		return NULL;
	l->fd = l->stop_pipe[0] = l->stop_pipe[1] = -1;
	l->path = o->path;
	l->message_max = o->message_max;
	l->budget = 2 * (o->message_max + GRPC_PREFIX);
	l->conn_max = o->conn_max ? o->conn_max : 16;
	l->fn = fn;
	l->ctx = ctx;
	l->conns = calloc(l->conn_max, sizeof(*l->conns));
	if (!l->conns)
		goto fail;
	for (i = 0; i < l->conn_max; i++)
		l->conns[i].fd = -1;
	err = http_server__parse_addr(o->addr, &sa);
	if (err) {
		errno = -err;
		goto fail;
	}
	l->fd = http_server__listen(&sa, &l->port);
	if (l->fd < 0 || pipe2(l->stop_pipe, O_CLOEXEC))
		goto fail;
	errno = pthread_create(&l->thread, NULL, listener__run, l);
	if (errno)
		goto fail;
	l->thread_started = true;
	return l;
fail:
	err = errno;
	grpc_listener__stop(l);
	errno = err;
	return NULL;
}

uint16_t grpc_listener__port(const struct grpc_listener *l)
{
	return l->port;
}

void grpc_listener__stats(struct grpc_listener *l, struct grpc_listener_stats *out)
{
	out->calls = atomic_load(&l->calls);
	out->refused = atomic_load(&l->refused);
	out->conns_refused = atomic_load(&l->conns_refused);
	out->timed_out = atomic_load(&l->timed_out);
	out->protocol_errors = atomic_load(&l->protocol_errors);
}

void grpc_listener__stop(struct grpc_listener *l)
{
	if (!l)
		return;
	if (l->thread_started && write(l->stop_pipe[1], "x", 1) == 1)
		pthread_join(l->thread, NULL);
	if (l->fd >= 0)
		close(l->fd);
	if (l->stop_pipe[0] >= 0)
		close(l->stop_pipe[0]);
	if (l->stop_pipe[1] >= 0)
		close(l->stop_pipe[1]);
	free(l->conns);
	free(l);
}
