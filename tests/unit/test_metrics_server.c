/* Unit tests for the /metrics endpoint (cli/metrics_server.c, on base/http_server.c), over
 * real loopback sockets: answers by request (503 before the first publish, 200 with the
 * published text and its Prometheus content type, 404, 405 for POST and HEAD, 400, 414, 431); a client that trickles its request one byte at a time neither delays
 * other clients' scrapes nor stays past the request timeout; conn_max clients at once are served and one more is refused;
 * slow clients holding every slot do not keep a scrape out (it takes a spare slot, where a
 * slow one is closed after spare_timeout_ms);
 * a Host not allowed (DNS rebinding) or a foreign Origin gets 403, a name of opts.hosts does not;
 * a client that never reads its (large) answer is dropped at the answer timeout while
 * another client is served and publish() returns at once; with max_age_ms, a scrape of a
 * stale text waits for the owner's next publish (or fresh_wait_ms). Timeouts are shortened
 * through the options, so the whole file runs in about 3 s.
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

#include "cli/metrics_server.h"
#include "test.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A connected client socket; rcvbuf > 0 shrinks its receive buffer first. */
static int client__connect(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	REQUIRE(fd >= 0);
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static void client__send(int fd, const char *data, size_t len)
{
	REQUIRE(send(fd, data, len, MSG_NOSIGNAL) == (ssize_t)len);
}

/* Reads until the server closes, at most timeout_ms; returns the HTTP status (0: none, -1:
 * timed out) and the body length in *body_len (body copied into body, up to body_cap).
 */
static int client__answer(int fd, int timeout_ms, char *body, size_t body_cap, size_t *body_len)
{
	static char buf[1 << 16];
	uint64_t end = mono_ms() + (uint64_t)timeout_ms;
	size_t got = 0, total = 0, head_len = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int status = 0;
	char *eoh;

	if (body_len)
		*body_len = 0;
	for (;;) {
		int64_t left = (int64_t)(end - mono_ms());
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = '\0';
		if (!head_len && (eoh = strstr(buf, "\r\n\r\n"))) {
			head_len = (size_t)(eoh - buf) + 4;
			sscanf(buf, "HTTP/1.1 %d", &status);
		}
		if (head_len) { /* keep the head only; count the body */
			size_t n = got - head_len;

			if (body && total < body_cap)
				memcpy(body + total, buf + head_len,
				       n < body_cap - total ? n : body_cap - total);
			total += n;
			got = head_len;
		}
	}
	if (body_len)
		*body_len = total;
	return status;
}

/* The head of the answer to GET /metrics, up to cap - 1 bytes (NUL-terminated). */
static void client__metrics_head(uint16_t port, char *head, size_t cap)
{
	int fd = client__connect(port, 0);
	size_t got = 0;
	ssize_t r;
	char *eoh;

	client__send(fd, "GET /metrics HTTP/1.1\r\n\r\n", 25);
	head[0] = '\0';
	while (got < cap - 1 && (r = recv(fd, head + got, cap - 1 - got, 0)) > 0) {
		got += (size_t)r;
		head[got] = '\0';
	}
	eoh = strstr(head, "\r\n\r\n");
	if (eoh)
		eoh[2] = '\0';
	close(fd);
}

/* One whole request on a fresh connection; the status. */
static int client__request(uint16_t port, const char *req, char *body, size_t cap, size_t *body_len)
{
	int fd = client__connect(port, 0), status;

	client__send(fd, req, strlen(req));
	status = client__answer(fd, 2000, body, cap, body_len);
	close(fd);
	return status;
}

static struct metrics_server *start(const struct metrics_server_opts *o)
{
	struct metrics_server *m = metrics_server__start("127.0.0.1:0", o);

	REQUIRE(m);
	REQUIRE(metrics_server__port(m) != 0);
	return m;
}

TEST(answers)
{
	static const char text[] = "# TYPE x counter\nx 1\n";
	struct metrics_server_stats st;
	struct metrics_server *m = start(NULL);
	uint16_t port = metrics_server__port(m);
	char body[256], big[METRICS_REQUEST_MAX_SZ + 64];
	size_t len;

	/* nothing published yet: not ready */
	CHECK_EQ_INT(client__request(port, "GET /metrics HTTP/1.1\r\n\r\n", NULL, 0, NULL), 503);
	metrics_server__publish(m, text, strlen(text));
	CHECK_EQ_INT(client__request(port, "GET /metrics HTTP/1.1\r\nHost: localhost:9\r\n\r\n",
				     body, sizeof(body), &len),
		     200);
	CHECK_EQ_INT(len, strlen(text));
	CHECK(!memcmp(body, text, strlen(text)));
	client__metrics_head(port, body, sizeof(body));
	CHECK(strstr(body, "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
	CHECK(strstr(body, "\r\nContent-Length: 21\r\n"));
	CHECK_EQ_INT(client__request(port, "GET /metrics?name[]=x HTTP/1.0\n\n", NULL, 0, NULL),
		     200);
	CHECK_EQ_INT(client__request(port, "GET /metricsx HTTP/1.1\r\n\r\n", NULL, 0, NULL), 404);
	CHECK_EQ_INT(client__request(port, "GET / HTTP/1.1\r\n\r\n", NULL, 0, NULL), 404);
	/* answered from the request line alone: the body is never parsed */
	CHECK_EQ_INT(client__request(port,
				     "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n"
				     "\r\nabc",
				     NULL, 0, NULL),
		     405);
	CHECK_EQ_INT(client__request(port, "HEAD /metrics HTTP/1.1\r\n\r\n", NULL, 0, NULL), 405);
	CHECK_EQ_INT(client__request(port, "hello\r\n\r\n", NULL, 0, NULL), 400);
	CHECK_EQ_INT(client__request(port, "GET /metrics HTTP/2.0\r\n\r\n", NULL, 0, NULL), 400);
	/* a request line that never ends, and headers that never end */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /", 5);
	CHECK_EQ_INT(client__request(port, big, NULL, 0, NULL), 414);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	CHECK_EQ_INT(client__request(port, big, NULL, 0, NULL), 431);
	/* a page of another site, by DNS rebinding (its name for 127.0.0.1) or by its own */
	CHECK_EQ_INT(client__request(port,
				     "GET /metrics HTTP/1.1\r\nHost: rebind.example:9464\r\n\r\n",
				     NULL, 0, NULL),
		     403);
	CHECK_EQ_INT(client__request(port,
				     "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\n"
				     "Origin: http://evil.example\r\n\r\n",
				     NULL, 0, NULL),
		     403);
	metrics_server__stats(m, &st);
	CHECK_EQ_INT(st.served, 3);
	CHECK_EQ_INT(st.rejected, 10);
	CHECK_EQ_INT(st.forbidden, 2);
	CHECK_EQ_INT(st.refused, 0);
	CHECK_EQ_INT(st.timed_out, 0);
	metrics_server__stop(m);
}

struct trickle {
	uint16_t port;
	int interval_ms;
	int bytes_sent;
	bool closed_by_server;
	uint64_t closed_after_ms;
};

/* Sends "GET /metrics HTTP/1.1\r\n..." one byte every interval_ms until the server closes. */
static void *trickle__run(void *arg)
{
	static const char req[] =
		"GET /metrics HTTP/1.1\r\nHost: slow.example\r\nX-Slow: yes\r\n\r\n";
	struct trickle *t = arg;
	int fd = client__connect(t->port, 0);
	uint64_t t0 = mono_ms();
	size_t i;
	char ch;

	for (i = 0; i < sizeof(req) - 1; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1)
			break;
		t->bytes_sent++;
		/* the server closing shows as readable (EOF or a reset) */
		if (poll(&pfd, 1, t->interval_ms) > 0 && recv(fd, &ch, 1, 0) <= 0)
			break;
	}
	t->closed_by_server = i < sizeof(req) - 1;
	t->closed_after_ms = mono_ms() - t0;
	close(fd);
	return NULL;
}

TEST(trickling_client_does_not_delay_others)
{
	struct metrics_server_opts o = { .request_timeout_ms = 1000 };
	struct metrics_server_stats st;
	struct metrics_server *m = start(&o);
	struct trickle t = { .port = metrics_server__port(m), .interval_ms = 100 };
	uint64_t t0, worst = 0;
	pthread_t th;
	int i;

	metrics_server__publish(m, "x 1\n", 4);
	REQUIRE(pthread_create(&th, NULL, trickle__run, &t) == 0);
	usleep(150 * 1000);
	for (i = 0; i < 5; i++) {
		t0 = mono_ms();
		CHECK_EQ_INT(client__request(t.port, "GET /metrics HTTP/1.1\r\n\r\n", NULL, 0,
					     NULL),
			     200);
		if (mono_ms() - t0 > worst)
			worst = mono_ms() - t0;
		usleep(100 * 1000);
	}
	pthread_join(th, NULL);
	printf("  scrapes while a client trickles: worst %llu ms; the trickler closed after "
	       "%llu ms, %d bytes\n",
	       (unsigned long long)worst, (unsigned long long)t.closed_after_ms, t.bytes_sent);
	CHECK(worst < 500);
	/* the server closed it at its request timeout (1 s), long before it was done */
	CHECK(t.closed_by_server);
	CHECK(t.closed_after_ms >= 900 && t.closed_after_ms < 1600);
	metrics_server__stats(m, &st);
	CHECK_EQ_INT(st.timed_out, 1);
	CHECK_EQ_INT(st.served, 5);
	CHECK_EQ_INT(st.open, 0);
	metrics_server__stop(m);
}

TEST(concurrent_clients_and_refused)
{
	/* four connections, and two spare ones given as long as the first */
	struct metrics_server_opts o = { .conn_max = 4,
					 .request_timeout_ms = 60000,
					 .spare_timeout_ms = 60000 };
	struct metrics_server_stats st;
	struct metrics_server *m = start(&o);
	uint16_t port = metrics_server__port(m);
	uint64_t deadline;
	int fds[6], extra, i;

	metrics_server__publish(m, "y 2\n", 4);
	for (i = 0; i < 6; i++)
		fds[i] = client__connect(port, 0);
	/* all six accepted before the seventh comes */
	deadline = mono_ms() + 1000;
	do {
		usleep(5000);
		metrics_server__stats(m, &st);
	} while (st.open < 6 && mono_ms() < deadline);
	CHECK_EQ_INT(st.open, 6);
	extra = client__connect(port, 0);
	CHECK_EQ_INT(client__answer(extra, 1000, NULL, 0, NULL), 503);
	close(extra);
	/* the six, requesting at once, all get their answer */
	for (i = 0; i < 6; i++)
		client__send(fds[i], "GET /metrics HTTP/1.1\r\n\r\n", 25);
	for (i = 0; i < 6; i++) {
		CHECK_EQ_INT(client__answer(fds[i], 1000, NULL, 0, NULL), 200);
		close(fds[i]);
	}
	metrics_server__stats(m, &st);
	CHECK_EQ_INT(st.refused, 1);
	CHECK_EQ_INT(st.served, 6);
	metrics_server__stop(m);
}

/* Slow clients holding the four slots: a scrape takes a spare one and is served; a slow one
 * in a spare slot is closed after spare_timeout_ms; the hosts option admits names.
 */
TEST(slow_clients_do_not_keep_scrapes_out)
{
	struct metrics_server_opts o = { .conn_max = 4,
					 .request_timeout_ms = 60000,
					 .spare_timeout_ms = 300,
					 .hosts = "node1,Prom.Example" };
	struct metrics_server_stats st;
	struct metrics_server *m = start(&o);
	uint16_t port = metrics_server__port(m);
	int fds[4], spare, i;
	uint64_t t0;

	metrics_server__publish(m, "z 3\n", 4);
	for (i = 0; i < 4; i++) {
		fds[i] = client__connect(port, 0);
		client__send(fds[i], "GET /metr", 9);
	}
	usleep(100 * 1000);
	CHECK_EQ_INT(client__request(port,
				     "GET /metrics HTTP/1.1\r\nHost: prom.example:9464\r\n\r\n",
				     NULL, 0, NULL),
		     200);
	CHECK_EQ_INT(client__request(port, "GET /metrics HTTP/1.1\r\nHost: node1\r\n\r\n", NULL, 0,
				     NULL),
		     200);
	t0 = mono_ms();
	spare = client__connect(port, 0);
	client__send(spare, "GET /metr", 9);
	CHECK_EQ_INT(client__answer(spare, 2000, NULL, 0, NULL), 0); /* closed */
	CHECK(mono_ms() - t0 >= 250 && mono_ms() - t0 < 1500);
	close(spare);
	metrics_server__stats(m, &st);
	CHECK_EQ_INT(st.served, 2);
	CHECK_EQ_INT(st.timed_out, 1);
	CHECK_EQ_INT(st.refused, 0);
	CHECK_EQ_INT(st.open, 4);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	metrics_server__stop(m);
}

TEST(slow_reader_dropped_publish_never_waits)
{
	struct metrics_server_opts o = { .response_timeout_ms = 500 };
	const size_t big_sz = (size_t)8 << 20;
	struct metrics_server_stats st;
	struct metrics_server *m = start(&o);
	uint16_t port = metrics_server__port(m);
	char *text = malloc(big_sz);
	uint64_t t0, publish_ms;
	size_t len;
	int stuck, i;

	REQUIRE(text);
	memset(text, 'z', big_sz);
	metrics_server__publish(m, text, big_sz);
	/* a client with a tiny receive buffer that never reads */
	stuck = client__connect(port, 4096);
	client__send(stuck, "GET /metrics HTTP/1.1\r\n\r\n", 25);
	usleep(50 * 1000);
	/* publishing goes on while the server is stuck sending */
	t0 = mono_ms();
	for (i = 0; i < 100; i++)
		metrics_server__publish(m, "w 3\n", 4);
	publish_ms = mono_ms() - t0;
	CHECK(publish_ms < 200);
	/* another client reads its answer meanwhile */
	t0 = mono_ms();
	CHECK_EQ_INT(client__request(port, "GET /metrics HTTP/1.1\r\n\r\n", NULL, 0, &len), 200);
	CHECK_EQ_INT(len, 4);
	CHECK(mono_ms() - t0 < 1000);
	/* the stuck one is dropped at the answer timeout */
	usleep(700 * 1000);
	metrics_server__stats(m, &st);
	CHECK_EQ_INT(st.timed_out, 1);
	CHECK_EQ_INT(st.open, 0);
	close(stuck);
	metrics_server__stop(m);
	free(text);
}

struct scrape {
	uint16_t port;
	int status;
	char body[64];
	size_t len;
	uint64_t ms;
};

static void *scrape__run(void *arg)
{
	struct scrape *c = arg;
	uint64_t t0 = mono_ms();

	c->status = client__request(c->port, "GET /metrics HTTP/1.1\r\n\r\n", c->body,
				    sizeof(c->body) - 1, &c->len);
	c->ms = mono_ms() - t0;
	return NULL;
}

/* With max_age_ms: a scrape of an older text asks for a new one (wanted) and gets the next
 * publish; with no publish it gets the old text once fresh_wait_ms is over; a fresh text is
 * served at once, and nothing is wanted then, nor without the option.
 */
TEST(built_on_scrape)
{
	struct metrics_server_opts o = { .max_age_ms = 1000, .fresh_wait_ms = 3000 };
	struct metrics_server *m = start(&o), *plain = start(NULL);
	struct scrape c = { .port = metrics_server__port(m) };
	uint64_t deadline;
	pthread_t t;

	metrics_server__publish(m, "a 1\n", 4);
	scrape__run(&c);
	CHECK_EQ_INT(c.status, 200);
	CHECK(c.len == 4 && !memcmp(c.body, "a 1\n", 4));
	CHECK(c.ms < 1500); /* at once: not the 3 s wait (a loaded box takes 100 ms+) */
	CHECK(!metrics_server__wanted(m));
	usleep(1100 * 1000); /* the text is stale now */
	REQUIRE(!pthread_create(&t, NULL, scrape__run, &c));
	deadline = mono_ms() + 2000;
	while (!metrics_server__wanted(m) && mono_ms() < deadline)
		usleep(2000);
	CHECK(metrics_server__wanted(m));
	usleep(50 * 1000); /* the scrape waits meanwhile */
	metrics_server__publish(m, "a 2\n", 4);
	CHECK(!metrics_server__wanted(m));
	pthread_join(t, NULL);
	CHECK_EQ_INT(c.status, 200);
	CHECK(c.len == 4 && !memcmp(c.body, "a 2\n", 4));
	CHECK(c.ms >= 50 && c.ms < 2000);
	metrics_server__stop(m);
	/* nobody publishes: the stale text after the wait */
	o.fresh_wait_ms = 150;
	m = start(&o);
	c.port = metrics_server__port(m);
	metrics_server__publish(m, "b 1\n", 4);
	usleep(1100 * 1000);
	scrape__run(&c);
	CHECK_EQ_INT(c.status, 200);
	CHECK(c.len == 4 && !memcmp(c.body, "b 1\n", 4));
	CHECK(c.ms >= 140 && c.ms < 1500);
	metrics_server__stop(m);
	/* without the option the text is served as it is, however old */
	c.port = metrics_server__port(plain);
	metrics_server__publish(plain, "c 1\n", 4);
	usleep(150 * 1000);
	scrape__run(&c);
	CHECK(c.status == 200 && c.ms < 1500);
	CHECK(!metrics_server__wanted(plain));
	metrics_server__stop(plain);
}

TEST(bad_address)
{
	errno = 0;
	CHECK(metrics_server__start("127.0.0.1", NULL) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK(metrics_server__start("127.0.0.1:99999", NULL) == NULL);
	CHECK(metrics_server__start("localhost:9464", NULL) == NULL);
	CHECK(metrics_server__start("127.0.0.1:", NULL) == NULL);
	metrics_server__stop(NULL);
}

int main(void)
{
	RUN(answers);
	RUN(trickling_client_does_not_delay_others);
	RUN(concurrent_clients_and_refused);
	RUN(slow_clients_do_not_keep_scrapes_out);
	RUN(slow_reader_dropped_publish_never_waits);
	RUN(built_on_scrape);
	RUN(bad_address);
	return test_summary();
}
