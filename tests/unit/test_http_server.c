/* Unit tests for base/http_server.c over real loopback sockets: requests reach the handler
 * whole (method, path, query, body split across writes); the server's own answers (400 for
 * malformed lines, headers and lengths, a NUL or lone CR in a header value, trailing bytes
 * after a Content-Length, a repeated Host; 403 for a Host not allowed (DNS rebinding) or a
 * foreign Origin; 405, 413, 414, 431, 501, 503 past the body budget); HEAD gets no body; a
 * method outside the owner's set gets 405 naming the set, its body unread; a client trickling
 * its request byte by byte neither delays another client nor outlives the request timeout;
 * silent clients holding every slot, spare ones too, make one more refused at once, and the
 * server serves again once they leave; 16 slow clients holding the conn_max slots do not
 * keep 30 requests from being served (in the spare slots, where a slow one is closed after
 * the spare timeout); a remote client is held to client_max. The parser and the Host and
 * Origin checks alone, on edge cases. Short timeouts: ~4 s.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
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
	struct http_server_opts o = { .body_max = 64, .body_budget = 100, .hosts = "h" };
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
	/* strict lengths and values (issue 39): trailing bytes, a NUL, a lone CR */
	CHECK_EQ_INT(REQ(port, "POST / HTTP/1.1\r\nContent-Length: 3 x\r\n\r\nabc", buf), 400);
	CHECK_EQ_INT(request(port, "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n", 28, buf, sizeof(buf)),
		     400);
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", buf), 400);
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n", buf), 400);
	CHECK_EQ_INT(request(port, "GET / HTTP/1.1\0\r\n\r\n", 19, buf, sizeof(buf)), 400);
	/* DNS rebinding and cross-site requests (issue 39) */
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nHost: rebind.example:8080\r\n\r\n", buf), 403);
	CHECK(strstr(body_of(buf), "Host not allowed"));
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nHost: 10.1.2.3\r\n\r\n", buf), 403);
	CHECK_EQ_INT(REQ(port,
			 "POST / HTTP/1.1\r\nHost: 127.0.0.1:1\r\nOrigin: http://evil.example"
			 "\r\nContent-Length: 1\r\n\r\nx",
			 buf),
		     403);
	CHECK_EQ_INT(REQ(port, "GET / HTTP/1.1\r\nHost: localhost\r\nOrigin: null\r\n\r\n", buf),
		     403);
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
	/* allowed: loopback names and addresses, the address connected to, the same origin */
	CHECK_EQ_INT(REQ(port, "GET /ok HTTP/1.1\r\nHost: LocalHost:1234\r\n\r\n", buf), 200);
	CHECK_EQ_INT(REQ(port, "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", buf), 200);
	CHECK_EQ_INT(REQ(port,
			 "POST /ok HTTP/1.1\r\nHost: 127.0.0.1:80\r\nContent-Length: 2\r\n"
			 "Origin: http://127.0.0.1:80\r\n\r\nok",
			 buf),
		     200);
	CHECK_EQ_INT(REQ(port, "GET /ok HTTP/1.1\r\nHost: H\r\nContent-Length:  0 \r\n\r\n", buf),
		     200);
	http_server__stats(s, &st);
	CHECK_EQ_INT(st.served, 8);
	CHECK_EQ_INT(st.rejected, 25);
	CHECK_EQ_INT(st.forbidden, 4);
	http_server__stop(s);
}

TEST(slow_and_silent_clients)
{
	/* 4 slots and 2 spare ones */
	struct http_server_opts o = { .conn_max = 4, .request_timeout_ms = 600 };
	int calls = 0, fds[6], i, slow;
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
	/* every slot, spare ones too, held by a silent client: one more is refused at once */
	for (i = 0; i < 6; i++)
		fds[i] = dial(http_server__port(s));
	usleep(100000);
	slow = dial(http_server__port(s));
	t0 = mono_ms();
	CHECK_EQ_INT(answer(slow, 2000, buf, sizeof(buf)), 503);
	CHECK(mono_ms() - t0 < 400);
	close(slow);
	for (i = 0; i < 6; i++)
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

/* Issue 39: 16 clients that send their request a byte at a time hold every slot for the
 * request timeout (10 s). 30 requests meanwhile are all served (in the spare slots), and a
 * 17th slow client, in a spare slot, is closed after the spare timeout (1 s) instead.
 */
TEST(slow_clients_do_not_starve_others)
{
	struct http_server_opts o = { .conn_max = 16 };
	int calls = 0, slow[16], i, served = 0, extra;
	struct http_server *s = http_server__start("127.0.0.1:0", &o, echo, &calls);
	struct http_server_stats st;
	uint16_t port;
	uint64_t t0;
	char buf[4096];

	REQUIRE(s);
	port = http_server__port(s);
	for (i = 0; i < 16; i++) {
		slow[i] = dial(port);
		REQUIRE(send(slow[i], "G", 1, MSG_NOSIGNAL) == 1);
	}
	usleep(200000);
	t0 = mono_ms();
	for (i = 0; i < 30; i++) {
		served += REQ(port, "GET /n HTTP/1.1\r\nHost: localhost\r\n\r\n", buf) == 200;
		usleep(20000);
	}
	printf("  30 requests among 16 slow clients: %d served in %llu ms\n", served,
	       (unsigned long long)(mono_ms() - t0));
	CHECK_EQ_INT(served, 30);
	extra = dial(port);
	REQUIRE(send(extra, "G", 1, MSG_NOSIGNAL) == 1);
	t0 = mono_ms();
	CHECK_EQ_INT(answer(extra, 5000, buf, sizeof(buf)), 0); /* closed */
	CHECK(mono_ms() - t0 >= 900 && mono_ms() - t0 < 4000);
	close(extra);
	http_server__stats(s, &st);
	CHECK_EQ_INT(st.refused, 0);
	CHECK_EQ_INT(st.timed_out, 1);
	CHECK_EQ_INT(st.open, 16); /* the 16 slow ones, still within their 10 s */
	for (i = 0; i < 16; i++)
		close(slow[i]);
	http_server__stop(s);
}

/* An IPv4 address of this machine outside 127.0.0.0/8 (network order), or 0. */
static uint32_t other_local_addr(void)
{
	struct ifaddrs *ifs, *i;
	uint32_t a = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (i = ifs; i && !a; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    (ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) >> 24) != 127)
			a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifs);
	return a;
}

/* A remote client (an address outside 127.0.0.0/8) gets client_max of the conn_max slots:
 * its next connections are spare ones, with the short timeout; and the Host naming the
 * address it connected to is accepted.
 */
TEST(remote_client_limit)
{
	struct http_server_opts o = {
		.conn_max = 4, .client_max = 2, .request_timeout_ms = 5000, .spare_timeout_ms = 300
	};
	uint32_t addr = other_local_addr();
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char listen_at[32], ip[16], req[128], buf[4096];
	int calls = 0, fds[3], i;
	struct http_server *s;
	uint64_t t0;

	if (!addr)
		SKIP("no IPv4 address outside 127.0.0.0/8");
	inet_ntop(AF_INET, &addr, ip, sizeof(ip));
	snprintf(listen_at, sizeof(listen_at), "%s:0", ip);
	s = http_server__start(listen_at, &o, echo, &calls);
	REQUIRE(s);
	sa.sin_port = htons(http_server__port(s));
	sa.sin_addr.s_addr = addr;
	for (i = 0; i < 3; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(fds[i] >= 0 && !connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)));
		REQUIRE(send(fds[i], "G", 1, MSG_NOSIGNAL) == 1);
		usleep(20000);
	}
	t0 = mono_ms();
	/* the third, past client_max, is a spare one: closed after 300 ms, the others stay */
	CHECK_EQ_INT(answer(fds[2], 3000, buf, sizeof(buf)), 0);
	CHECK(mono_ms() - t0 < 2000);
	CHECK_EQ_INT(answer(fds[0], 200, buf, sizeof(buf)), -1);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	i = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(i >= 0 && !connect(i, (struct sockaddr *)&sa, sizeof(sa)));
	snprintf(req, sizeof(req), "GET /r HTTP/1.1\r\nHost: %s:%u\r\n\r\n", ip,
		 http_server__port(s));
	REQUIRE(send(i, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
	CHECK_EQ_INT(answer(i, 2000, buf, sizeof(buf)), 200);
	close(i);
	http_server__stop(s);
}

/* The parser, the Host and the Origin checks alone. */
TEST(parser_and_checks)
{
	struct http_head h;
	char req[256];
	uint32_t local = htonl(0x0a000005); /* 10.0.0.5 */

#define PARSE(text) (snprintf(req, sizeof(req), "%s", text), http_head__parse(req, strlen(req), &h))
	CHECK_EQ_INT(PARSE("GET /x?y HTTP/1.1\r\nHost:  a:1 \r\nOrigin: http://a:1\r\n\r\n"), 0);
	CHECK_STR(h.method, "GET");
	CHECK_STR(h.target, "/x?y");
	CHECK(h.host_len == 3 && !memcmp(h.host, "a:1", 3));
	CHECK(h.origin_len == 10 && !memcmp(h.origin, "http://a:1", 10));
	CHECK_EQ_INT(PARSE("POST / HTTP/1.0\nContent-Length: 0012\n\n"), 0);
	CHECK_EQ_INT(h.content_length, 12);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\n"), 400); /* no empty line */
	CHECK_EQ_INT(PARSE("GET  / HTTP/1.1\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1 \r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GETTINGVERYLONGMETHOD / HTTP/1.1\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\n folded: x\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\nContent-Length:\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\nOrigin: a\r\norigin: a\r\n\r\n"), 400);
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\nX: caf\xc3\xa9\t!\r\n\r\n"), 0); /* obs-text, tab */
	CHECK_EQ_INT(PARSE("GET / HTTP/1.1\r\nX: \x7f\r\n\r\n"), 400);
	/* the OTLP receiver's: Content-Type and Content-Encoding, each at most once */
	CHECK_EQ_INT(PARSE("POST / HTTP/1.1\r\ncontent-encoding:  gzip \r\n"
			   "Content-Type: application/x-protobuf\r\n\r\n"),
		     0);
	CHECK(h.content_encoding_len == 4 && !memcmp(h.content_encoding, "gzip", 4));
	CHECK(h.content_type_len == 22 && !memcmp(h.content_type, "application/x-protobuf", 22));
	CHECK_EQ_INT(PARSE("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\n"
			   "Content-Encoding: gzip\r\n\r\n"),
		     400);
	CHECK_EQ_INT(PARSE("POST / HTTP/1.1\r\nContent-Type: a\r\nContent-Type: b\r\n\r\n"), 400);
#undef PARSE
#define HOST(text, hosts) http_host__allowed(text, strlen(text), local, hosts)
	CHECK(HOST("localhost", NULL) && HOST("LOCALHOST:80", NULL) && HOST("127.0.0.1", NULL));
	CHECK(HOST("127.255.0.9:65535", NULL) && HOST("10.0.0.5:8080", NULL));
	CHECK(!HOST("10.0.0.6", NULL) && !HOST("", NULL) && !HOST("localhost.", NULL));
	CHECK(!HOST("evil.example", NULL) && !HOST("localhost.evil.example", NULL));
	CHECK(!HOST("localhost:", NULL) && !HOST("localhost:123456", NULL) &&
	      !HOST("localhost:8x", NULL) && !HOST(":80", NULL));
	CHECK(!HOST("127.0.0.1.evil.example", NULL) && !HOST("[::1]:80", NULL));
	CHECK(HOST("Node1:80", "x,node1") && HOST("x", "x,node1") && !HOST("node", "x,node1"));
	CHECK(!HOST("x,node1", "x,node1") && !HOST("", ","));
	/* "*": any well-formed name (the OTLP receiver), still not a malformed port */
	CHECK(HOST("box.example:4318", "*") && HOST("10.9.9.9", "*"));
	CHECK(!HOST("box.example:43x", "*") && !HOST("", "*"));
	CHECK(http_host__allowed("127.0.0.1", 9, 0, NULL) &&
	      !http_host__allowed("0.0.0.0", 7, 0, NULL));
#undef HOST
	CHECK(http_origin__same("http://a:1", 10, "a:1", 3));
	CHECK(http_origin__same("HTTPS://A:1", 11, "a:1", 3));
	CHECK(!http_origin__same("http://a:2", 10, "a:1", 3));
	CHECK(!http_origin__same("http://a:1/", 11, "a:1", 3));
	CHECK(!http_origin__same("null", 4, "a:1", 3));
	CHECK(!http_origin__same("http://a:1", 10, NULL, 0));
	CHECK(!http_origin__same("ftp://a:1", 9, "a:1", 3));
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
	RUN(slow_clients_do_not_starve_others);
	RUN(remote_client_limit);
	RUN(parser_and_checks);
	RUN(method_set);
	RUN(bad_addresses);
	return test_summary();
}
