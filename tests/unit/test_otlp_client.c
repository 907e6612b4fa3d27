/* Unit tests for the OTLP transport and its configuration.
 *
 * A small HTTP/1.1 receiver written here runs on 127.0.0.1 (random port) in a thread and
 * answers from a script (status, headers, body per request); it gunzips and records every
 * request body so the tests can compare it with what was submitted. Covered: 503 with
 * Retry-After then 200 (one retry, waited), 400 (never retried), a partial success (never
 * retried), a receiver that is down (retries with backoff, the oldest requests dropped past
 * the queue bound, data flowing again when it comes up), retries exhausted, and the
 * OTEL_* environment parsing; an outage (the log, captured from stderr, warns at the first
 * failed attempt and only once while it lasts, then says when the receiver is back and how
 * many requests came late; requests resume within the backoff cap of it coming up, and at
 * once when a new request is submitted, unless the server asked for a wait), bytes
 * sent on every attempt vs bytes delivered, and requests lost by reason. For gRPC, an h2c receiver in Python (Debian python3-h2, an
 * HTTP/2 implementation independent of libcurl's nghttp2) answers UNAVAILABLE then OK, and
 * INVALID_ARGUMENT (errors trailers-only, OK with trailers after the message); it checks the
 * framing and gzip itself and reports what it got. Everything stays on loopback and well
 * under 5 s.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "export/otlp_client.h"
#include "export/protobuf.h"
#include "test.h"

#define MAX_REQUESTS 16
#define MAX_BODY (64 * 1024)

struct reply {
	int status;
	const char *headers; /* extra header lines, each ending in \r\n */
	const uint8_t *body;
	size_t body_len;
};

struct request {
	char path[128];
	char content_type[64];
	char content_encoding[32];
	char auth[128];
	uint8_t body[MAX_BODY]; /* gunzipped */
	size_t body_len;
	uint64_t at_ms;
};

struct receiver {
	int fd;
	uint16_t port;
	pthread_t thread;
	atomic_bool stop;
	const struct reply *script; /* replies in order; the last one repeats */
	size_t script_cnt;
	pthread_mutex_t lock;
	struct request reqs[MAX_REQUESTS];
	size_t req_cnt;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static size_t gunzip(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	z_stream zs = { 0 };
	size_t n = 0;

	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (inflate(&zs, Z_FINISH) == Z_STREAM_END)
		n = zs.total_out;
	inflateEnd(&zs);
	return n;
}

static void header_value(const char *head, const char *name, char *out, size_t cap)
{
	const char *p = strcasestr(head, name), *e;
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(name);
	while (*p == ' ')
		p++;
	e = strstr(p, "\r\n");
	n = e ? (size_t)(e - p) : strlen(p);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Serves one connection: one request, one reply, close. */
static void receiver__serve(struct receiver *rv, int fd)
{
	static char buf[MAX_BODY + 8192];
	size_t len = 0, head_len, want;
	char cl[32], hdr[1024];
	const struct reply *rep;
	struct request *rq;
	ssize_t n;
	char *end;

	for (;;) {
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			return;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		head_len = (size_t)(end - buf) + 4;
		header_value(buf, "\r\nContent-Length:", cl, sizeof(cl));
		want = head_len + strtoul(cl, NULL, 10);
		if (want > sizeof(buf) - 1)
			return;
		if (len >= want)
			break;
	}
	pthread_mutex_lock(&rv->lock);
	if (rv->req_cnt < MAX_REQUESTS) {
		rq = &rv->reqs[rv->req_cnt];
		memset(rq, 0, sizeof(*rq));
		sscanf(buf, "POST %127s ", rq->path);
		header_value(buf, "\r\nContent-Type:", rq->content_type, sizeof(rq->content_type));
		header_value(buf, "\r\nContent-Encoding:", rq->content_encoding,
			     sizeof(rq->content_encoding));
		header_value(buf, "\r\nAuthorization:", rq->auth, sizeof(rq->auth));
		rq->body_len = gunzip((uint8_t *)buf + head_len, want - head_len, rq->body,
				      sizeof(rq->body));
		rq->at_ms = mono_ms();
	}
	rep = &rv->script[rv->req_cnt < rv->script_cnt ? rv->req_cnt : rv->script_cnt - 1];
	rv->req_cnt++;
	pthread_mutex_unlock(&rv->lock);
	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %d X\r\nContent-Type: application/x-protobuf\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
		     rep->status, rep->body_len, rep->headers ? rep->headers : "");
	if (send(fd, hdr, (size_t)n, MSG_NOSIGNAL) == n && rep->body_len)
		send(fd, rep->body, rep->body_len, MSG_NOSIGNAL);
}

static void *receiver__thread(void *arg)
{
	struct receiver *rv = arg;
	struct pollfd pfd = { .fd = rv->fd, .events = POLLIN };
	int fd;

	while (!atomic_load(&rv->stop)) {
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		fd = accept(rv->fd, NULL, NULL);
		if (fd < 0)
			continue;
		receiver__serve(rv, fd);
		close(fd);
	}
	return NULL;
}

/* Starts a receiver on port (0 = any free one). */
static void receiver__start(struct receiver *rv, uint16_t port, const struct reply *script,
			    size_t script_cnt)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	socklen_t sl = sizeof(sa);
	int one = 1;

	memset(rv, 0, sizeof(*rv));
	pthread_mutex_init(&rv->lock, NULL);
	rv->script = script;
	rv->script_cnt = script_cnt;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(rv->fd >= 0);
	setsockopt(rv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	REQUIRE(bind(rv->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	REQUIRE(listen(rv->fd, 16) == 0);
	REQUIRE(getsockname(rv->fd, (struct sockaddr *)&sa, &sl) == 0);
	rv->port = ntohs(sa.sin_port);
	REQUIRE(pthread_create(&rv->thread, NULL, receiver__thread, rv) == 0);
}

static void receiver__stop(struct receiver *rv)
{
	atomic_store(&rv->stop, true);
	pthread_join(rv->thread, NULL);
	close(rv->fd);
	pthread_mutex_destroy(&rv->lock);
}

/* A loopback port nobody listens on (bound, then closed). */
static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(fd >= 0);
	REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	REQUIRE(getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* A fast-retry configuration for port. */
static void test_config(struct otlp_config *cfg, uint16_t port)
{
	char url[64], err[256];

	otlp_config__init(cfg);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	REQUIRE(otlp_config__set_endpoint(cfg, url, false, err, sizeof(err)) == 0);
	REQUIRE(otlp_config__add_headers(cfg, "Authorization=Bearer%20abc", err, sizeof(err)) == 0);
	cfg->initial_backoff_ms = 20;
	cfg->max_backoff_ms = 100;
	cfg->max_elapsed_ms = 3000;
	cfg->timeout_ms = 2000;
	cfg->connect_timeout_ms = 500;
}

/* A request body: any bytes do, the transport does not look inside. */
static void payload(struct pb_buf *b, int tag)
{
	int i;

	pb_buf__init(b, 1 << 16);
	for (i = 0; i < 100; i++)
		pb_buf__varint(b, 1, (uint64_t)tag * 1000 + (uint64_t)i);
	REQUIRE(pb_buf__err(b) == 0);
}

#define EXPORT_RUN_BODY_CAP 5

/* What a test of the client works with: its configuration, the client, the request bodies it
 * submits and the stats it last read.
 */
struct export_run {
	uint16_t port;
	struct otlp_config cfg;
	struct otlp_client *c;
	struct pb_buf b[EXPORT_RUN_BODY_CAP];
	size_t b_cnt;
	struct otlp_client_stats st;
};

/* x->cfg: test_config() for port; bodies b[0 .. b_cnt) (payload tags tag, tag + 1, ...); no
 * client yet: the test may change cfg first, then calls export_run__client().
 */
static void export_run__init(struct export_run *x, uint16_t port, size_t b_cnt, int tag)
{
	size_t i;

	memset(x, 0, sizeof(*x));
	REQUIRE(b_cnt <= EXPORT_RUN_BODY_CAP);
	x->port = port;
	test_config(&x->cfg, port);
	for (i = 0; i < b_cnt; i++)
		payload(&x->b[i], tag + (int)i);
	x->b_cnt = b_cnt;
}

/* The client of x->cfg; ends the test when it cannot be made. */
static void export_run__client(struct export_run *x)
{
	x->c = otlp_client__new(&x->cfg);
	REQUIRE(x->c);
}

/* Submits bodies b[first .. end), each accepted at once (submit never blocks). */
static void export_run__submit(struct export_run *x, size_t first, size_t end)
{
	size_t i;

	for (i = first; i < end; i++)
		CHECK_EQ_INT(otlp_client__submit(x->c, &x->b[i]), 0);
}

/* The client of x->cfg, which submits b[0]. */
static void export_run__start(struct export_run *x)
{
	export_run__client(x);
	export_run__submit(x, 0, 1);
}

/* The most common test: a client for port (gRPC when grpc) submits one body (payload tag) and
 * flushes within flush_ms, both with success; x->st is then its stats.
 */
static void export_run__once(struct export_run *x, uint16_t port, bool grpc, int tag, int flush_ms)
{
	export_run__init(x, port, 1, tag);
	if (grpc)
		x->cfg.protocol = OTLP_PROTOCOL_GRPC;
	export_run__start(x);
	CHECK_EQ_INT(otlp_client__flush(x->c, flush_ms), 0);
	otlp_client__stats(x->c, &x->st);
}

/* Frees the client (when there is one), the configuration and the bodies. */
static void export_run__free(struct export_run *x)
{
	size_t i;

	otlp_client__free(x->c);
	otlp_config__free(&x->cfg);
	for (i = 0; i < x->b_cnt; i++)
		pb_buf__free(&x->b[i]);
}

/* Reads x->st every poll_us until done(&x->st), for timeout_ms at most. */
static void export_run__poll(struct export_run *x, bool (*done)(const struct otlp_client_stats *),
			     unsigned poll_us, int timeout_ms)
{
	uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;

	do {
		usleep(poll_us);
		otlp_client__stats(x->c, &x->st);
	} while (!done(&x->st) && mono_ms() < deadline);
}

static bool retried_twice(const struct otlp_client_stats *st)
{
	return st->exports_retried >= 2;
}

static bool collector_unavailable(const struct otlp_client_stats *st)
{
	return st->collector_unavailable;
}

/* The exports st counts as delivered, retried and failed for good. */
static void check_exports(const struct otlp_client_stats *st, int ok, int retried, int failed)
{
	CHECK_EQ_INT(st->exports_ok, ok);
	CHECK_EQ_INT(st->exports_retried, retried);
	CHECK_EQ_INT(st->exports_failed, failed);
}

static bool same_body(const struct request *rq, const struct pb_buf *b)
{
	return rq->body_len == b->len && !memcmp(rq->body, b->data, b->len);
}

/* success, always */
static const struct reply always_ok[] = { { 200, NULL, NULL, 0 } };

/* 503 asking for a 1 s wait, then success */
static const struct reply retry_after_1_then_ok[] = {
	{ 503, "Retry-After: 1\r\n", NULL, 0 },
	{ 200, NULL, NULL, 0 },
};

TEST(retry_after_then_ok)
{
	static struct receiver rv;
	struct export_run x;

	receiver__start(&rv, 0, retry_after_1_then_ok, 2);
	export_run__once(&x, rv.port, false, 1, 4000);
	check_exports(&x.st, 1, 1, 0);
	CHECK_EQ_INT(x.st.exports_dropped, 0);
	CHECK_EQ_INT(x.st.last_http_status, 200);
	/* two attempts sent, one accepted */
	CHECK(x.st.bytes_delivered > 0);
	CHECK_EQ_U64(x.st.bytes_sent, 2 * x.st.bytes_delivered);
	CHECK_EQ_INT(x.st.outages, 1);
	CHECK_EQ_INT(x.st.delivered_late, 1);
	CHECK(!x.st.collector_unavailable);
	REQUIRE(rv.req_cnt == 2);
	/* Retry-After: 1 honoured (the backoff alone would be ~20 ms) */
	CHECK(rv.reqs[1].at_ms - rv.reqs[0].at_ms >= 900);
	CHECK_STR(rv.reqs[0].path, "/v1development/profiles");
	CHECK_STR(rv.reqs[0].content_type, "application/x-protobuf");
	CHECK_STR(rv.reqs[0].content_encoding, "gzip");
	CHECK_STR(rv.reqs[0].auth, "Bearer abc");
	CHECK(same_body(&rv.reqs[0], &x.b[0]));
	CHECK(same_body(&rv.reqs[1], &x.b[0]));
	export_run__free(&x);
	receiver__stop(&rv);
}

TEST(bad_request_not_retried)
{
	/* google.rpc.Status { code 3, message "bad" } */
	static const uint8_t status[] = { 0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd' };
	static const struct reply script[] = {
		{ 400, NULL, status, sizeof(status) },
		{ 200, NULL, NULL, 0 },
	};
	static struct receiver rv;
	struct export_run x;

	receiver__start(&rv, 0, script, 2);
	export_run__once(&x, rv.port, false, 2, 2000);
	usleep(100 * 1000); /* a (wrong) retry would come within the 20 ms backoff */
	otlp_client__stats(x.c, &x.st);
	check_exports(&x.st, 0, 0, 1);
	CHECK_EQ_INT(x.st.last_http_status, 400);
	CHECK_EQ_INT(x.st.exports_lost[OTLP_LOST_REJECTED], 1);
	CHECK_EQ_INT(x.st.bytes_delivered, 0);
	CHECK(x.st.bytes_sent > 0);
	CHECK_EQ_INT(x.st.outages, 0); /* the receiver answered: not an outage */
	CHECK_EQ_INT(rv.req_cnt, 1);
	export_run__free(&x);
	receiver__stop(&rv);
}

TEST(partial_success_not_retried)
{
	/* ExportProfilesServiceResponse { partial_success { rejected 3, "dup" } } */
	static const uint8_t resp[] = { 0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, 'd', 'u', 'p' };
	static const struct reply script[] = { { 200, NULL, resp, sizeof(resp) } };
	static struct receiver rv;
	struct export_run x;

	receiver__start(&rv, 0, script, 1);
	export_run__once(&x, rv.port, false, 3, 2000);
	CHECK_EQ_INT(x.st.exports_ok, 1);
	CHECK_EQ_INT(x.st.exports_partial, 1);
	CHECK_EQ_INT(x.st.rejected_profiles, 3);
	CHECK_EQ_INT(x.st.exports_retried, 0);
	CHECK_EQ_INT(rv.req_cnt, 1);
	export_run__free(&x);
	receiver__stop(&rv);
}

/* Receiver down: the first request is retried with backoff while newer ones queue; past the
 * bound (2) the oldest queued are dropped. When the receiver comes up on the same port,
 * the one in flight and the two newest arrive, in order.
 */
TEST(receiver_down_then_up)
{
	static struct receiver rv;
	struct export_run x;

	export_run__init(&x, free_port(), 5, 10);
	x.cfg.queue_max_cnt = 2;
	x.cfg.max_elapsed_ms = 10000;
	export_run__start(&x);
	/* wait until the first request is in flight and has been retried twice */
	export_run__poll(&x, retried_twice, 5000, 2000);
	CHECK(x.st.exports_retried >= 2);
	CHECK_EQ_INT(x.st.exports_ok + x.st.exports_failed, 0);
	export_run__submit(&x, 1, 5);
	otlp_client__stats(x.c, &x.st);
	CHECK_EQ_INT(x.st.exports_dropped, 2); /* b[1], b[2] */
	CHECK_EQ_INT(x.st.exports_lost[OTLP_LOST_QUEUE_FULL], 2);
	CHECK(x.st.collector_unavailable);
	CHECK_EQ_INT(x.st.queue_cnt, 2);
	CHECK(x.st.queue_sz > 0);
	CHECK_EQ_INT(otlp_client__flush(x.c, 50), -ETIMEDOUT);

	receiver__start(&rv, x.port, always_ok, 1);
	CHECK_EQ_INT(otlp_client__flush(x.c, 3000), 0);
	otlp_client__stats(x.c, &x.st);
	CHECK_EQ_INT(x.st.exports_ok, 3);
	CHECK_EQ_INT(x.st.exports_failed, 0);
	CHECK_EQ_INT(x.st.exports_dropped, 2);
	CHECK_EQ_INT(x.st.queue_cnt, 0);
	CHECK_EQ_INT(x.st.queue_sz, 0);
	REQUIRE(rv.req_cnt == 3);
	CHECK(same_body(&rv.reqs[0], &x.b[0]));
	CHECK(same_body(&rv.reqs[1], &x.b[3]));
	CHECK(same_body(&rv.reqs[2], &x.b[4]));
	export_run__free(&x);
	receiver__stop(&rv);
}

/* stderr into a file for the length of a test, to check what the log says and when. */
struct log_capture {
	char path[64];
	int fd, saved;
};

static void log_capture__start(struct log_capture *lc)
{
	snprintf(lc->path, sizeof(lc->path), "/tmp/test_otlp_log_XXXXXX");
	lc->fd = mkstemp(lc->path);
	REQUIRE(lc->fd >= 0);
	fflush(stderr);
	lc->saved = dup(2);
	REQUIRE(lc->saved >= 0);
	REQUIRE(dup2(lc->fd, 2) == 2);
}

/* What was logged so far (static buffer, NUL-terminated). */
static const char *log_capture__text(struct log_capture *lc)
{
	static char text[16384];
	ssize_t n;

	fflush(stderr);
	n = pread(lc->fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	return text;
}

/* Restores stderr and shows what was captured. */
static void log_capture__stop(struct log_capture *lc)
{
	const char *text = log_capture__text(lc);

	dup2(lc->saved, 2);
	close(lc->saved);
	close(lc->fd);
	unlink(lc->path);
	fputs(text, stderr);
}

static int count_of(const char *text, const char *what)
{
	int n = 0;

	for (; (text = strstr(text, what)); text += strlen(what))
		n++;
	return n;
}

/* Waits at most timeout_ms for what to be logged; how long it took, or -1. */
static long log_capture__wait(struct log_capture *lc, const char *what, int timeout_ms)
{
	uint64_t t0 = mono_ms();

	do {
		if (strstr(log_capture__text(lc), what))
			return (long)(mono_ms() - t0);
		usleep(2000);
	} while (mono_ms() - t0 < (uint64_t)timeout_ms);
	return -1;
}

/* The receiver down when the first request comes: warned at the first failed attempt and
 * not again while it lasts (many retries); when it comes up, requests flow within the
 * backoff cap, and the log says the outage is over with the requests delivered late.
 */
TEST(outage_warned_at_once_then_recovered)
{
	static struct receiver rv;
	struct log_capture lc;
	struct export_run x;
	uint64_t up_ms;
	long warn_ms;
	const char *text;

	/* the default cap: a collector that comes back is used within 5 s */
	otlp_config__init(&x.cfg);
	CHECK(x.cfg.max_backoff_ms <= 5000);
	otlp_config__free(&x.cfg);

	export_run__init(&x, free_port(), 2, 20);
	x.cfg.max_backoff_ms = 200;
	export_run__client(&x);
	log_capture__start(&lc);
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[0]), 0);
	warn_ms = log_capture__wait(&lc, "otlp: cannot deliver to", 2000);
	CHECK(warn_ms >= 0 && warn_ms < 500);
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[1]), 0);
	usleep(800 * 1000); /* retries every 10..200 ms meanwhile */
	otlp_client__stats(x.c, &x.st);
	CHECK(x.st.exports_retried >= 3);
	CHECK(x.st.collector_unavailable);
	CHECK_EQ_INT(x.st.outages, 1);
	CHECK_EQ_INT(x.st.bytes_sent, 0); /* connections refused: nothing went out */
	text = log_capture__text(&lc);
	CHECK_EQ_INT(count_of(text, "cannot deliver"), 1);
	CHECK_EQ_INT(count_of(text, "still unavailable"), 0); /* at most once a minute */
	CHECK(strstr(text, "Couldn't connect"));

	receiver__start(&rv, x.port, always_ok, 1);
	up_ms = mono_ms();
	CHECK_EQ_INT(otlp_client__flush(x.c, 3000), 0);
	REQUIRE(rv.req_cnt == 2);
	printf("  first request %llu ms after the receiver came up (backoff cap %u ms)\n",
	       (unsigned long long)(rv.reqs[0].at_ms - up_ms), x.cfg.max_backoff_ms);
	CHECK(rv.reqs[0].at_ms - up_ms <= x.cfg.max_backoff_ms + 300);
	CHECK(same_body(&rv.reqs[0], &x.b[0]));
	CHECK(same_body(&rv.reqs[1], &x.b[1]));
	/* flush() returns once the recovery line is out */
	text = log_capture__text(&lc);
	CHECK(strstr(text, "otlp: collector reachable again after"));
	CHECK(strstr(text, ", 2 requests delivered late, 0 lost during the outage"));
	otlp_client__stats(x.c, &x.st);
	CHECK(!x.st.collector_unavailable);
	CHECK_EQ_INT(x.st.delivered_late, 2);
	CHECK_EQ_INT(x.st.exports_ok, 2);
	CHECK(x.st.bytes_delivered > 0);
	CHECK_EQ_U64(x.st.bytes_sent, x.st.bytes_delivered);

	/* a request after the recovery is not late, and nothing more is logged */
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[0]), 0);
	CHECK_EQ_INT(otlp_client__flush(x.c, 2000), 0);
	otlp_client__stats(x.c, &x.st);
	CHECK_EQ_INT(x.st.delivered_late, 2);
	CHECK_EQ_INT(count_of(log_capture__text(&lc), "otlp:"), 2);
	log_capture__stop(&lc);
	export_run__free(&x);
	receiver__stop(&rv);
}

/* Waits until the receiver has seen n requests, at most timeout_ms; true if it has. */
static bool receiver__wait(struct receiver *rv, size_t n, int timeout_ms)
{
	uint64_t end = mono_ms() + (uint64_t)timeout_ms;
	size_t cnt;

	do {
		pthread_mutex_lock(&rv->lock);
		cnt = rv->req_cnt;
		pthread_mutex_unlock(&rv->lock);
		if (cnt >= n)
			return true;
		usleep(2000);
	} while (mono_ms() < end);
	return false;
}

/* A new request ends a backoff at once (a probe of a collector that may be back), but not
 * a wait the server asked for (Retry-After).
 */
TEST(new_request_probes_during_backoff)
{
	static struct receiver rv;
	struct export_run x;
	uint64_t t0;

	export_run__init(&x, free_port(), 2, 30);
	x.cfg.initial_backoff_ms = x.cfg.max_backoff_ms = 10000; /* waits of 5..10 s */
	x.cfg.max_elapsed_ms = 60000;
	export_run__start(&x);
	export_run__poll(&x, collector_unavailable, 2000, 2000);
	REQUIRE(x.st.collector_unavailable);
	receiver__start(&rv, x.port, always_ok, 1);
	usleep(200 * 1000);
	CHECK_EQ_INT(rv.req_cnt, 0); /* still in its backoff */
	t0 = mono_ms();
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[1]), 0);
	CHECK_EQ_INT(otlp_client__flush(x.c, 2000), 0);
	CHECK(mono_ms() - t0 < 1000);
	REQUIRE(rv.req_cnt == 2);
	CHECK(same_body(&rv.reqs[0], &x.b[0]));
	CHECK(same_body(&rv.reqs[1], &x.b[1]));
	otlp_client__free(x.c);
	receiver__stop(&rv);

	receiver__start(&rv, 0, retry_after_1_then_ok, 2);
	otlp_config__free(&x.cfg);
	test_config(&x.cfg, rv.port);
	export_run__start(&x);
	REQUIRE(receiver__wait(&rv, 1, 2000));
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[1]), 0);
	CHECK_EQ_INT(otlp_client__flush(x.c, 4000), 0);
	REQUIRE(rv.req_cnt == 3);
	CHECK(same_body(&rv.reqs[1], &x.b[0]));
	CHECK(rv.reqs[1].at_ms - rv.reqs[0].at_ms >= 900); /* Retry-After: 1 kept */
	export_run__free(&x);
	receiver__stop(&rv);
}

TEST(retries_exhausted_and_free_while_retrying)
{
	struct export_run x;
	uint64_t t0;

	export_run__init(&x, free_port(), 1, 4);
	x.cfg.max_elapsed_ms = 150;
	export_run__start(&x);
	CHECK_EQ_INT(otlp_client__flush(x.c, 2000), 0);
	otlp_client__stats(x.c, &x.st);
	CHECK_EQ_INT(x.st.exports_failed, 1);
	CHECK_EQ_INT(x.st.exports_lost[OTLP_LOST_RETRIES_EXHAUSTED], 1);
	CHECK(x.st.exports_retried >= 1);
	CHECK_EQ_INT(x.st.exports_ok, 0);
	otlp_client__free(x.c);

	/* free() stops a client that would retry for a long time, promptly */
	x.cfg.max_elapsed_ms = 60000;
	x.cfg.initial_backoff_ms = x.cfg.max_backoff_ms = 10000;
	export_run__start(&x);
	CHECK_EQ_INT(otlp_client__submit(x.c, &x.b[0]), 0);
	usleep(50 * 1000);
	t0 = mono_ms();
	otlp_client__free(x.c);
	x.c = NULL;
	CHECK(mono_ms() - t0 < 1000);
	export_run__free(&x);
}

TEST(queue_bound_by_bytes)
{
	struct export_run x;
	struct pb_buf big;
	uint8_t noise[4096];
	size_t i;

	export_run__init(&x, free_port(), 0, 0);
	x.cfg.gzip = false;
	x.cfg.queue_max_sz = 1000;
	export_run__client(&x);
	pb_buf__init(&big, 1 << 16);
	for (i = 0; i < sizeof(noise); i++)
		noise[i] = (uint8_t)(i * 7);
	pb_buf__bytes(&big, 1, noise, sizeof(noise));
	CHECK_EQ_INT(otlp_client__submit(x.c, &big), -EMSGSIZE);
	otlp_client__stats(x.c, &x.st);
	CHECK_EQ_INT(x.st.exports_dropped, 1);
	CHECK_EQ_INT(x.st.exports_lost[OTLP_LOST_TOO_LARGE], 1);
	CHECK_EQ_INT(x.st.queue_cnt, 0);
	export_run__free(&x);
	pb_buf__free(&big);
}

static void env_clear(void)
{
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS");
	unsetenv("OTEL_RESOURCE_ATTRIBUTES");
	unsetenv("OTEL_EXPORTER_OTLP_CERTIFICATE");
	unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	unsetenv("OTEL_EXPORTER_OTLP_COMPRESSION");
}

/* Checks that c's export URL is want. */
static void check_url(const struct otlp_config *c, const char *want)
{
	char *url = otlp_config__url(c);

	CHECK_STR(url, want);
	free(url);
}

TEST(config_from_env)
{
	struct otlp_config c;
	char err[256];

	env_clear();
	CHECK_EQ_INT(otlp_config__from_env(&c, err, sizeof(err)), 0);
	CHECK(c.endpoint == NULL); /* nothing configured: the caller writes files */
	CHECK_EQ_INT(c.protocol, OTLP_PROTOCOL_HTTP_PROTOBUF);
	otlp_config__free(&c);

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", " api-key = s%3Dcret%2C1 ,x-tenant=a%20b,, ", 1);
	setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=prof,deployment.environment=prod%20eu", 1);
	CHECK_EQ_INT(otlp_config__from_env(&c, err, sizeof(err)), 0);
	check_url(&c, "http://collector:4318/v1development/profiles");
	REQUIRE(c.header_cnt == 2);
	CHECK_STR(c.headers[0].name, "api-key");
	CHECK_STR(c.headers[0].value, "s=cret,1");
	CHECK_STR(c.headers[1].name, "x-tenant");
	CHECK_STR(c.headers[1].value, "a b");
	REQUIRE(c.resource_attr_cnt == 2);
	CHECK_STR(c.resource_attrs[1].key, "deployment.environment");
	CHECK_STR(c.resource_attrs[1].value, "prod eu");
	otlp_config__free(&c);

	/* the signal-specific endpoint is used as is and wins */
	setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://otlp.example:443/custom/path", 1);
	CHECK_EQ_INT(otlp_config__from_env(&c, err, sizeof(err)), 0);
	check_url(&c, "https://otlp.example:443/custom/path");
	otlp_config__free(&c);

	/* gRPC: scheme://host:port + the service method, whatever path was given */
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1]:4317/ignored", 1);
	CHECK_EQ_INT(otlp_config__from_env(&c, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.protocol, OTLP_PROTOCOL_GRPC);
	check_url(&c, "http://[::1]:4317" OTLP_GRPC_PATH);
	otlp_config__free(&c);
	env_clear();
}

/* With var = value and no other OTEL_* variable set, the configuration is refused (-EINVAL);
 * named: with an error that names var.
 */
static void check_refused(const char *var, const char *value, bool named)
{
	struct otlp_config c;
	char err[256];

	env_clear();
	setenv(var, value, 1);
	err[0] = '\0';
	CHECK_EQ_INT(otlp_config__from_env(&c, err, sizeof(err)), -EINVAL);
	if (named) {
		CHECK(strstr(err, var));
		if (!strstr(err, var))
			printf("  %s=%s: %s\n", var, value, err);
	}
	otlp_config__free(&c);
}

TEST(config_errors)
{
	static const char *bad_urls[] = {
		"collector:4318",    "ftp://x",          "http://",      "http://host:0",
		"http://host:70000", "http://host:12ab", "http://ho st", "http://user:pw@host",
		"http://[::1",
	};
	static const struct {
		const char *var, *value;
		bool named; /* the error names var */
	} refused[] = {
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", true },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "novalue", true },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=%zz", false },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=a%0D%0AInjected: 1",
		  false }, /* CRLF injection */
		{ "OTEL_EXPORTER_OTLP_HEADERS", "bad key=v", false },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "k=%4", false }, /* truncated escape */
		{ "OTEL_EXPORTER_OTLP_TIMEOUT", "10s", false },
		{ "OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", true },
	};
	struct otlp_config c;
	size_t i;

	for (i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++)
		check_refused("OTEL_EXPORTER_OTLP_ENDPOINT", bad_urls[i], true);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		check_refused(refused[i].var, refused[i].value, refused[i].named);
	env_clear();

	/* no endpoint: no client */
	otlp_config__init(&c);
	errno = 0;
	CHECK(otlp_client__new(&c) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	otlp_config__free(&c);
}

/* The h2c gRPC receiver: prints its port, then one line per request ("path content-type te
 * grpc-encoding compressed-flag crc32 length"), answering with the grpc-status codes given
 * as arguments, in order, and exits after the last.
 */
static const char grpc_receiver_py[] =
	"import socket, struct, sys, zlib, gzip\n"
	"import h2.config, h2.connection, h2.events\n"
	"codes = sys.argv[1:]\n"
	"srv = socket.socket()\n"
	"srv.bind(('127.0.0.1', 0))\n"
	"srv.listen(4)\n"
	"srv.settimeout(4)\n"
	"print(srv.getsockname()[1], flush=True)\n"
	"n = 0\n"
	"while n < len(codes):\n"
	"    sock, _ = srv.accept()\n"
	"    sock.settimeout(4)\n"
	"    cfg = h2.config.H2Configuration(client_side=False, header_encoding='utf-8')\n"
	"    conn = h2.connection.H2Connection(config=cfg)\n"
	"    conn.initiate_connection()\n"
	"    sock.sendall(conn.data_to_send())\n"
	"    heads, bodies = {}, {}\n"
	"    while True:  # until the client closes: closing first could reset the stream\n"
	"        try:\n"
	"            data = sock.recv(65536)\n"
	"        except OSError:  # the client may reset a connection it is done with\n"
	"            break\n"
	"        if not data:\n"
	"            break\n"
	"        for ev in conn.receive_data(data):\n"
	"            if isinstance(ev, h2.events.RequestReceived):\n"
	"                heads[ev.stream_id] = dict(ev.headers)\n"
	"            elif isinstance(ev, h2.events.DataReceived):\n"
	"                bodies[ev.stream_id] = bodies.get(ev.stream_id, b'') + ev.data\n"
	"                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)\n"
	"            elif isinstance(ev, h2.events.StreamEnded):\n"
	"                sid, h, b = ev.stream_id, heads[ev.stream_id], bodies.get(ev.stream_id, b'')\n"
	"                flag, ln = b[0], struct.unpack('>I', b[1:5])[0]\n"
	"                msg = b[5:5 + ln]\n"
	"                if flag:\n"
	"                    msg = gzip.decompress(msg)\n"
	"                print(h.get(':path'), h.get('content-type'), h.get('te'),\n"
	"                      h.get('grpc-encoding'), flag, zlib.crc32(msg), len(msg),\n"
	"                      len(b) == 5 + ln, flush=True)\n"
	"                code = codes[n]\n"
	"                n += 1\n"
	"                head = [(':status', '200'), ('content-type', 'application/grpc')]\n"
	"                status = [('grpc-status', code), ('grpc-message', 'test%20' + code)]\n"
	"                if code == '0':\n"
	"                    conn.send_headers(sid, head)\n"
	"                    conn.send_data(sid, b'\\0\\0\\0\\0\\0')\n"
	"                    conn.send_headers(sid, status, end_stream=True)\n"
	"                else:  # trailers-only, as gRPC servers answer errors\n"
	"                    conn.send_headers(sid, head + status, end_stream=True)\n"
	"        try:\n"
	"            sock.sendall(conn.data_to_send())\n"
	"        except OSError:\n"
	"            break\n"
	"    sock.close()\n";

struct grpc_receiver {
	FILE *out;
	char script[64];
	uint16_t port;
};

static void grpc_receiver__start(struct grpc_receiver *g, const char *codes)
{
	char cmd[256], line[64];
	FILE *f;

	snprintf(g->script, sizeof(g->script), "/tmp/test_otlp_grpc_XXXXXX");
	{
		int fd = mkstemp(g->script);

		REQUIRE(fd >= 0);
		f = fdopen(fd, "w");
		REQUIRE(f);
		fputs(grpc_receiver_py, f);
		fclose(f);
	}
	/* Debian's interpreter, where python3-h2 lives (not a python3 earlier in PATH) */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s", g->script, codes);
	g->out = popen(cmd, "r");
	REQUIRE(g->out);
	REQUIRE(fgets(line, sizeof(line), g->out));
	g->port = (uint16_t)strtoul(line, NULL, 10);
	REQUIRE(g->port);
}

/* Next request line the receiver printed, or "" when it is gone. */
static const char *grpc_receiver__line(struct grpc_receiver *g)
{
	static char line[512];

	if (!fgets(line, sizeof(line), g->out))
		line[0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return line;
}

static void grpc_receiver__stop(struct grpc_receiver *g)
{
	pclose(g->out);
	unlink(g->script);
}

TEST(grpc_unavailable_then_ok)
{
	struct grpc_receiver g;
	struct export_run x;
	char want[512];

	grpc_receiver__start(&g, "14 0");
	export_run__once(&x, g.port, true, 5, 4000);
	check_exports(&x.st, 1, 1, 0);
	CHECK_EQ_INT(x.st.last_grpc_status, 0);
	snprintf(want, sizeof(want), "%s application/grpc trailers gzip 1 %lu %zu True",
		 OTLP_GRPC_PATH, crc32(0, x.b[0].data, (uInt)x.b[0].len), x.b[0].len);
	CHECK_STR(grpc_receiver__line(&g), want);
	CHECK_STR(grpc_receiver__line(&g), want);
	export_run__free(&x);
	grpc_receiver__stop(&g);
}

TEST(grpc_invalid_argument_not_retried)
{
	struct grpc_receiver g;
	struct export_run x;

	grpc_receiver__start(&g, "3");
	export_run__once(&x, g.port, true, 6, 4000);
	check_exports(&x.st, 0, 0, 1);
	CHECK_EQ_INT(x.st.last_grpc_status, 3);
	CHECK(grpc_receiver__line(&g)[0]);
	export_run__free(&x);
	grpc_receiver__stop(&g);
}

/* A collector that never ends its answer: after the request, a 200 and then a body sent
 * until the client goes away (raw, or gzip of endless zeros that curl inflates 1000-fold),
 * or header lines without end. Counts what it managed to send.
 */
enum endless_kind { ENDLESS_BODY, ENDLESS_GZIP, ENDLESS_HEADERS };

struct endless {
	int fd;
	uint16_t port;
	pthread_t thread;
	atomic_bool stop;
	enum endless_kind kind;
	atomic_ullong sent;
	atomic_int conns;
};

/* Reads one request (head and Content-Length body) from fd; false if it does not come. */
static bool endless__read_request(int fd)
{
	static char buf[MAX_BODY + 8192];
	size_t len = 0;
	char cl[32], *end;
	ssize_t n;

	for (;;) {
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		header_value(buf, "\r\nContent-Length:", cl, sizeof(cl));
		if (len >= (size_t)(end - buf) + 4 + strtoul(cl, NULL, 10))
			return true;
	}
}

static bool endless__send(struct endless *e, int fd, const void *p, size_t len)
{
	ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

	if (n > 0)
		atomic_fetch_add(&e->sent, (unsigned long long)n);
	return n == (ssize_t)len;
}

static void endless__serve(struct endless *e, int fd)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n";
	static uint8_t zeros[1 << 20], out[1 << 16];
	char line[128];
	z_stream zs = { 0 };
	int i;

	if (!endless__read_request(fd) || !endless__send(e, fd, head, sizeof(head) - 1))
		return;
	if (e->kind == ENDLESS_HEADERS) {
		for (i = 0; !atomic_load(&e->stop); i++) {
			int n = snprintf(line, sizeof(line), "X-Filler-%d: %060d\r\n", i, i);

			if (!endless__send(e, fd, line, (size_t)n))
				return;
		}
		return;
	}
	if (e->kind == ENDLESS_BODY) {
		memset(out, 'x', sizeof(out));
		if (!endless__send(e, fd, "Connection: close\r\n\r\n", 21))
			return;
		while (!atomic_load(&e->stop) && endless__send(e, fd, out, sizeof(out)))
			;
		return;
	}
	if (!endless__send(e, fd, "Content-Encoding: gzip\r\nConnection: close\r\n\r\n", 45) ||
	    deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return;
	while (!atomic_load(&e->stop)) {
		zs.next_in = zeros;
		zs.avail_in = sizeof(zeros);
		do {
			zs.next_out = out;
			zs.avail_out = sizeof(out);
			deflate(&zs, Z_SYNC_FLUSH);
			if (!endless__send(e, fd, out, sizeof(out) - zs.avail_out))
				goto out;
		} while (zs.avail_out == 0);
	}
out:
	deflateEnd(&zs);
}

static void *endless__thread(void *arg)
{
	struct endless *e = arg;
	struct pollfd pfd = { .fd = e->fd, .events = POLLIN };
	int fd;

	while (!atomic_load(&e->stop)) {
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		fd = accept(e->fd, NULL, NULL);
		if (fd < 0)
			continue;
		atomic_fetch_add(&e->conns, 1);
		endless__serve(e, fd);
		close(fd);
	}
	return NULL;
}

static void endless__start(struct endless *e, enum endless_kind kind)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	memset(e, 0, sizeof(*e));
	e->kind = kind;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	e->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(e->fd >= 0);
	REQUIRE(bind(e->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	REQUIRE(listen(e->fd, 16) == 0);
	REQUIRE(getsockname(e->fd, (struct sockaddr *)&sa, &sl) == 0);
	e->port = ntohs(sa.sin_port);
	REQUIRE(pthread_create(&e->thread, NULL, endless__thread, e) == 0);
}

static void endless__stop(struct endless *e)
{
	atomic_store(&e->stop, true);
	pthread_join(e->thread, NULL);
	close(e->fd);
}

/* An answer without end is one failed export, not retried, ended as soon as it is over the
 * client's cap: it used to be read until the attempt's timeout (33 GB in 20 s from a local
 * collector, 58 % of a core), then retried as a timeout.
 */
TEST(endless_response_is_a_failed_export)
{
	static const enum endless_kind kinds[] = { ENDLESS_BODY, ENDLESS_GZIP, ENDLESS_HEADERS };
	static struct endless e;
	struct export_run x;
	size_t k;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		printf("  %s\n", kinds[k] == ENDLESS_BODY   ? "body"
				 : kinds[k] == ENDLESS_GZIP ? "gzip body"
							    : "headers");
		endless__start(&e, kinds[k]);
		export_run__init(&x, e.port, 1, 20 + (int)k);
		x.cfg.timeout_ms = 10000; /* the default: the cap, not the timeout, ends it */
		export_run__start(&x);
		CHECK_EQ_INT(otlp_client__flush(x.c, 3000), 0);
		otlp_client__stats(x.c, &x.st);
		check_exports(&x.st, 0, 0, 1);
		CHECK_EQ_INT(x.st.exports_lost[OTLP_LOST_REJECTED], 1);
		CHECK_EQ_INT(atomic_load(&e.conns), 1);
		/* what the socket buffers take, not what 10 s of loopback carry */
		CHECK(atomic_load(&e.sent) < 64u << 20);
		export_run__free(&x);
		endless__stop(&e);
	}
}

int main(void)
{
	RUN(config_from_env);
	RUN(config_errors);
	RUN(retry_after_then_ok);
	RUN(bad_request_not_retried);
	RUN(partial_success_not_retried);
	RUN(receiver_down_then_up);
	RUN(outage_warned_at_once_then_recovered);
	RUN(new_request_probes_during_backoff);
	RUN(retries_exhausted_and_free_while_retrying);
	RUN(queue_bound_by_bytes);
	RUN(endless_response_is_a_failed_export);
	RUN(grpc_unavailable_then_ok);
	RUN(grpc_invalid_argument_not_retried);
	return test_summary();
}
