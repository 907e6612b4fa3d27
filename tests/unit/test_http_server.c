/* Unit tests for base/http_server.c over real loopback sockets: requests reach the handler
 * whole (method, path, query, body split across writes); the server's own answers (400 for
 * malformed lines, headers and lengths, 405, 413, 414, 431, 501, 503 past the body budget);
 * HEAD gets no body; a method outside the owner's set gets 405 naming the set, its body
 * unread; a client trickling its request byte by byte neither delays another
 * client nor outlives the request timeout; conn_max silent clients hold every slot, one more
 * is refused at once, and the server serves again once they leave. Short timeouts: ~2 s.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/http_server.h"
#include "test.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Echoes the request: "METHOD PATH ?QUERY BODYLEN:BODY". */
static void echo(void *ctx, const struct http_request *req, struct http_response *r)
{
	char *b = malloc(256 + req->body_len);

	(*(int *)ctx)++;
	if (!b)
		return;
	r->body_len = (size_t)snprintf(b, 256, "%s %s ?%s %zu:", req->method, req->path, req->query,
				       req->body_len);
	memcpy(b + r->body_len, req->body, req->body_len);
	r->body_len += req->body_len;
	r->body = b;
	r->status = 200;
	r->content_type = "text/plain";
	r->headers = "X-Test: yes\r\n";
}

static int dial(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	REQUIRE(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

/* Reads the whole answer (until close, at most timeout_ms) into buf; its status, -1 on a
 * timeout.
 */
static int answer(int fd, int timeout_ms, char *buf, size_t cap)
{
	uint64_t end = mono_ms() + (uint64_t)timeout_ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	int status = 0;

	buf[0] = '\0';
	for (;;) {
		int64_t left = (int64_t)(end - mono_ms());
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		r = recv(fd, buf + got, cap - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = '\0';
		if (got == cap - 1)
			break;
	}
	sscanf(buf, "HTTP/1.1 %d", &status);
	return status;
}

static int request(uint16_t port, const char *req, size_t len, char *buf, size_t cap)
{
	int fd = dial(port), status;

	REQUIRE(send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len);
	status = answer(fd, 2000, buf, cap);
	close(fd);
	return status;
}

#define REQ(port, s, buf) request(port, s, strlen(s), buf, sizeof(buf))

static const char *body_of(const char *buf)
{
	const char *b = strstr(buf, "\r\n\r\n");

	return b ? b + 4 : "";
}

TEST(requests_and_answers)
{
	struct http_server_opts o = { .body_max = 64, .body_budget = 100 };
	int calls = 0;
	struct http_server *s = http_server__start("127.0.0.1:0", &o, echo, &calls);
	struct http_server_stats st;
	char buf[70000], big[9000];
	uint16_t port;
	int fd;

	REQUIRE(s);
	port = http_server__port(s);
	CHECK_EQ_INT(REQ(port, "GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: h\r\n\r\n", buf), 200);
	CHECK_STR(body_of(buf), "GET /a/b ?x=1&y=%20 0:");
	CHECK(strstr(buf, "\r\nX-Test: yes\r\n") && strstr(buf, "Connection: close\r\n"));
	CHECK_EQ_INT(REQ(port, "HEAD / HTTP/1.0\n\n", buf), 200);
	CHECK_STR(body_of(buf), "");
	CHECK(strstr(buf, "Content-Length: 11\r\n")); /* the size of "HEAD / ? 0:", not sent */
	/* a body sent in two parts, after the head */
	fd = dial(port);
	REQUIRE(send(fd, "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", 41, MSG_NOSIGNAL) ==
		41);
	usleep(50000);
	REQUIRE(send(fd, "cde", 3, MSG_NOSIGNAL) == 3);
	CHECK_EQ_INT(answer(fd, 2000, buf, sizeof(buf)), 200);
	CHECK_STR(body_of(buf), "POST /p ? 5:abcde");
	close(fd);
	/* head and body in one write (the buffer grows under method and target: ASan checks) */
	CHECK_EQ_INT(REQ(port, "POST /q?x HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz", buf), 200);
	CHECK_STR(body_of(buf), "POST /q ?x 3:xyz");
	/* the server's own refusals: the handler never sees them */
	calls = 0;
	CHECK_EQ_INT(REQ(port, "hello\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET /x HTTP/2.0\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET x HTTP/1.1\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET /\x7f HTTP/1.1\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "get / HTTP/1.1\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nno colon\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-length: 1\r\n\r\nx",
			 buf),
		     400);
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
			 buf),
		     400);
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", buf), 501);
	CHECK_EQ_INT(REQ(port, "DELETE / HTTP/1.1\r\n\r\n", buf), 405);
	CHECK(strstr(buf, "Allow: GET, HEAD, POST\r\n"));
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", buf), 413);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /", 5);
	CHECK_EQ_INT(REQ(port, big, buf), 414);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	CHECK_EQ_INT(REQ(port, big, buf), 431);
	/* two bodies of 60 bytes being read at once pass the budget of 100: the second waits out */
	fd = dial(port);
	REQUIRE(send(fd, "POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\n", 40, MSG_NOSIGNAL) == 40);
	usleep(50000);
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\n", buf), 503);
	close(fd);
	CHECK_EQ_INT(calls, 0);
	http_server__stats(s, &st);
	CHECK_EQ_INT(st.served, 4);
	CHECK_EQ_INT(st.rejected, 15);
	http_server__stop(s);
}

TEST(slow_and_silent_clients)
{
	struct http_server_opts o = { .conn_max = 4, .request_timeout_ms = 600 };
	int calls = 0, fds[4], i, slow;
	struct http_server *s = http_server__start("127.0.0.1:0", &o, echo, &calls);
	struct http_server_stats st;
	uint64_t t0;
	char buf[4096];

	REQUIRE(s);
	/* one byte of a request, then nothing: others are served at once meanwhile */
	slow = dial(http_server__port(s));
	REQUIRE(send(slow, "G", 1, MSG_NOSIGNAL) == 1);
	t0 = mono_ms();
	CHECK_EQ_INT(REQ(http_server__port(s), "GET /fast HTTP/1.1\r\n\r\n", buf), 200);
	CHECK(mono_ms() - t0 < 400);
	/* and the slow one is closed at its deadline */
	CHECK(answer(slow, 2000, buf, sizeof(buf)) == 0 && mono_ms() - t0 < 1500);
	close(slow);
	/* every slot held by a silent client: one more is refused at once with 503 */
	for (i = 0; i < 4; i++)
		fds[i] = dial(http_server__port(s));
	usleep(100000);
	slow = dial(http_server__port(s));
	t0 = mono_ms();
	CHECK_EQ_INT(answer(slow, 2000, buf, sizeof(buf)), 503);
	CHECK(mono_ms() - t0 < 400);
	close(slow);
	for (i = 0; i < 4; i++)
		close(fds[i]);
	usleep(100000);
	CHECK_EQ_INT(REQ(http_server__port(s), "GET /again HTTP/1.1\r\n\r\n", buf), 200);
	usleep(100000); /* the server sees the close */
	http_server__stats(s, &st);
	CHECK_EQ_INT(st.refused, 1);
	CHECK(st.timed_out >= 1);
	CHECK_EQ_INT(st.open, 0);
	http_server__stop(s);
}

TEST(method_set)
{
	struct http_server_opts o = { .methods = HTTP_METHOD_GET | HTTP_METHOD_HEAD,
				      .body_max = 64 };
	int calls = 0;
	struct http_server *s = http_server__start("127.0.0.1:0", &o, echo, &calls);
	char buf[4096];
	uint16_t port;

	REQUIRE(s);
	port = http_server__port(s);
	CHECK_EQ_INT(REQ(port, "GET /g HTTP/1.1\r\n\r\n", buf), 200);
	CHECK_EQ_INT(REQ(port, "HEAD /h HTTP/1.1\r\n\r\n", buf), 200);
	/* refused from its head: a body larger than body_max does not make it 413 */
	CHECK_EQ_INT(REQ(port, "POST /p HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc", buf), 405);
	CHECK(strstr(buf, "\r\nAllow: GET, HEAD\r\n"));
	CHECK_EQ_INT(calls, 2);
	http_server__stop(s);
}

TEST(bad_addresses)
{
	int calls = 0;

	CHECK(!http_server__start("localhost", NULL, echo, &calls));
	CHECK(!http_server__start("127.0.0.1:99999", NULL, echo, &calls));
	CHECK(!http_server__start("no.such.host:80", NULL, echo, &calls));
	http_server__stop(NULL);
}

int main(void)
{
	RUN(requests_and_answers);
	RUN(slow_and_silent_clients);
	RUN(method_set);
	RUN(bad_addresses);
	return test_summary();
}
