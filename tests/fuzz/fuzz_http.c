/* libFuzzer target for the web UI's request handling: the input is what a client sends, a
 * request head and a body. The head goes through the HTTP server's parser
 * (http_head__parse()) and its Host and Origin checks, in a buffer of its exact size (ASan sees
 * any read past it); a request the parser accepts then reaches the API's handler
 * (serve_api__handle()) as the server would hand it over: its query string parsed strictly,
 * and for POST /api/diff the body read as two pprof files under serve/upload.h's limits. The
 * store does not exist, so the store routes stop at their 503 after the parameters are read.
 * Nothing may crash, hang, leak, or break the parser's promises (checked below).
 * Build and run: tests/fuzz/run_fuzz_http.sh (seeds: requests of the system test and uploads
 * written by this file built with -DFUZZ_HTTP_SEEDS).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/http_server.h"
#include "serve/serve_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct serve_api *api;

/* Where the head ends (after its empty line) in data[0..size), or size. */
static size_t head_len(const uint8_t *data, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size; i++) {
		if (data[i] != '\n')
			continue;
		if (data[i + 1] == '\n')
			return i + 2;
		if (i + 2 < size && data[i + 1] == '\r' && data[i + 2] == '\n')
			return i + 3;
	}
	return size;
}

static void check_head(const struct http_head *h, const char *buf, size_t len)
{
	const char *p;

	if (!h->method[0] || h->target[0] != '/')
		abort();
	for (p = h->method; *p; p++)
		if (*p < 'A' || *p > 'Z')
			abort();
	for (p = h->target; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			abort();
	if (h->host && (h->host < buf || h->host + h->host_len > buf + len))
		abort();
	if (h->origin && (h->origin < buf || h->origin + h->origin_len > buf + len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t hl = head_len(data, size);
	struct http_response r = { 0 };
	struct http_request req;
	struct http_head h;
	char *head = malloc(hl ? hl : 1), *q;
	int status;

	if (!api)
		api = serve_api__new("/nonexistent/stackscope-fuzz.db");
	if (!head || !api)
		abort();
	memcpy(head, data, hl);
	status = http_head__parse(head, hl, &h);
	if (status && status != 400 && status != 501)
		abort();
	if (status)
		goto out;
	check_head(&h, head, hl);
	if (h.host)
		(void)http_host__allowed(h.host, h.host_len, 0x0100007f, "node1,proxy.example");
	if (h.origin)
		(void)http_origin__same(h.origin, h.origin_len, h.host, h.host_len);
	if (strcmp(h.method, "GET") && strcmp(h.method, "HEAD") && strcmp(h.method, "POST"))
		goto out;
	req = (struct http_request){ .method = h.method,
				     .path = h.target,
				     .query = "",
				     .body = data + hl,
				     .body_len = size - hl };
	q = strchr(h.target, '?');
	if (q) {
		*q++ = '\0';
		req.query = q;
	}
	if (!strcmp(h.method, "POST") && h.content_length < req.body_len)
		req.body_len = h.content_length;
	serve_api__handle(api, &req, &r);
	if (r.status < 200 || r.status > 599 || (r.body && r.body_static))
		abort();
	free(r.body);
out:
	free(head);
	return 0;
}

#ifdef FUZZ_HTTP_SEEDS
#include "export/pprof.h"
#include "profile/profile.h"

/* Seeds: requests of every route into the folder argv[1], and a POST /api/diff of two small
 * profiles (raw, then gzipped).
 */
static void seed(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		exit(1);
}

int main(int argc, char **argv)
{
	static const char *const requests[] = {
		"GET / HTTP/1.1\r\nHost: localhost:7434\r\n\r\n",
		"GET /api/intervals?from=-1h&to=1700000000000000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET /api/flamegraph?pid=42&comm=a%20b&type=kernel&min=3 HTTP/1.1\r\n\r\n",
		"GET /api/top?limit=10&label=k%3Dv&exe=%2Fusr%2Fbin%2Fx HTTP/1.1\r\n\r\n",
		"GET /api/diff?a_from=1&a_to=2&b_from=3&thread=w+1 HTTP/1.1\r\n\r\n",
		"GET /api/difftop?a_pid=1&b_pid=2&container=c0ffee HTTP/1.0\n\n",
		"GET /api/source?function=hot_leaf&file=%2Fetc%2Fpasswd&pid=1 HTTP/1.1\r\n\r\n",
		"GET /api/source?function=c&from=-1h&fold=runtime HTTP/1.1\r\n\r\n",
		"GET /api/filters?from=-5m HTTP/1.1\r\nOrigin: http://localhost:7434\r\n"
		"Host: localhost:7434\r\n\r\n",
		"HEAD /api/pprof?tid=7 HTTP/1.1\r\nX-Any: caf\xc3\xa9\r\n\r\n",
		"POST /api/diff?a_len=3 HTTP/1.1\r\nContent-Length: 6\r\n\r\nabcdef",
	};
	struct profile_opts opts = { .period_ns = 10101010, .start_time_ns = 1 };
	struct profile_line lines[] = { { "inner", "a.c", 3, 0 }, { "outer", "a.c", 9, 0 } };
	struct profile_mapping exe = { "/usr/bin/app", "0123abcd", 0x1000, 0x3000, 0x1000 };
	struct profile *prof = profile__new(&opts);
	struct pb_buf b;
	char head[128], *req;
	uint32_t m, f[2];
	size_t i, hl;

	if (argc != 2 || !prof)
		return 2;
	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		snprintf(head, sizeof(head), "request%zu", i);
		seed(argv[1], head, requests[i], strlen(requests[i]));
	}
	m = profile__add_mapping(prof, &exe);
	f[0] = profile__add_frame(prof,
				  &(struct profile_frame){ FRAME_NATIVE, m, 0x1200, lines, 2 });
	f[1] = profile__add_frame(prof,
				  &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff0000, NULL, 0 });
	profile__add_sample(prof, &(struct profile_sample){ .frames = f,
							    .frame_cnt = 2,
							    .pid = 5,
							    .tid = 5,
							    .comm = "app",
							    .thread_comm = "t",
							    .count = 3 });
	pb_buf__init(&b, PPROF_MAX_SZ);
	if (pprof__encode(prof, &b))
		return 1;
	hl = (size_t)snprintf(head, sizeof(head),
			      "POST /api/diff?a_len=%zu HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
			      b.len, 2 * b.len);
	req = malloc(hl + 2 * b.len);
	if (!req)
		return 1;
	memcpy(req, head, hl);
	memcpy(req + hl, b.data, b.len);
	memcpy(req + hl + b.len, b.data, b.len);
	seed(argv[1], "upload", req, hl + 2 * b.len);
	free(req);
	pb_buf__free(&b);
	profile__free(prof);
	return 0;
}
#endif
