/* Unit tests for serve/grpc_listener.c over real loopback sockets, with libcurl's HTTP/2 as
 * the client (prior knowledge, as an OTLP exporter connects): a call's message reaches the
 * owner whole (split across DATA frames: 200 KB), its reply comes back as one length-prefixed
 * message with grpc-status 0 in the trailers; the owner's failure is a trailers-only answer
 * with its code and percent-encoded message; the listener's own refusals (another path, a
 * prefix lying about its length, a message over the cap, a compressed one without
 * grpc-encoding, a content-type that is not gRPC: HTTP 415, headers past 16 KiB: the stream
 * reset) never reach the owner; the counters. grpc-message's encoding alone.
 */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/grpc_listener.h"
#include "test.h"

#define PATH "/test.Service/Call"

static const char *extra_header; /* one more request header, or NULL */

struct seen {
	unsigned calls;
	size_t len;
	bool gzip;
	uint8_t first, last;
};

/* Echoes the message's length back (4 bytes, big-endian); a message starting with 'F' fails
 * with UNAVAILABLE and a message to encode.
 */
static void owner(void *ctx, const uint8_t *msg, size_t len, bool gzip, struct grpc_reply *r)
{
	struct seen *s = ctx;

	s->calls++;
	s->len = len;
	s->gzip = gzip;
	s->first = len ? msg[0] : 0;
	s->last = len ? msg[len - 1] : 0;
	if (len && msg[0] == 'F') {
		r->status = GRPC_UNAVAILABLE;
		snprintf(r->message, sizeof(r->message), "busy: 100%% full\nretry");
		return;
	}
	r->status = GRPC_OK;
	r->body = malloc(4);
	r->body[0] = (uint8_t)(len >> 24);
	r->body[1] = (uint8_t)(len >> 16);
	r->body[2] = (uint8_t)(len >> 8);
	r->body[3] = (uint8_t)len;
	r->body_len = 4;
}

struct answer {
	long http;
	char status[16], message[256];
	uint8_t body[64];
	size_t body_len;
};

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t len = size * n, take = len;

	if (take > sizeof(a->body) - a->body_len)
		take = sizeof(a->body) - a->body_len;
	memcpy(a->body + a->body_len, p, take);
	a->body_len += take;
	return len;
}

/* grpc-status and grpc-message, from the headers or the trailers */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	size_t len = size * n;
	char line[512];

	snprintf(line, sizeof(line), "%.*s", (int)(len < 511 ? len : 511), p);
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncmp(line, "grpc-status: ", 13))
		snprintf(a->status, sizeof(a->status), "%.15s", line + 13);
	else if (!strncmp(line, "grpc-message: ", 14))
		snprintf(a->message, sizeof(a->message), "%.255s", line + 14);
	return len;
}

/* One call on handle h (a connection kept between calls) of body; the answer in *a. */
static int call(CURL *h, uint16_t port, const char *path, const char *ctype, const char *enc,
		const void *body, size_t len, struct answer *a)
{
	char url[128], ct[96], ge[64];
	struct curl_slist *hdr = NULL;
	CURLcode rc;

	memset(a, 0, sizeof(*a));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
	snprintf(ct, sizeof(ct), "content-type: %s", ctype);
	hdr = curl_slist_append(hdr, ct);
	hdr = curl_slist_append(hdr, "te: trailers");
	if (enc) {
		snprintf(ge, sizeof(ge), "grpc-encoding: %s", enc);
		hdr = curl_slist_append(hdr, ge);
	}
	if (extra_header)
		hdr = curl_slist_append(hdr, extra_header);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	/* a connection per call: curl 7.88 fails a second POST on a kept HTTP/2 connection with
	 * "Error in the HTTP2 framing layer" against grpc-go's server (the Collector's) as
	 * against this one; the agent's exports, which keep theirs, are test_otlp_receiver.sh's
	 */
	curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->http);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK)
		printf("  curl: %s\n", curl_easy_strerror(rc));
	return rc == CURLE_OK ? 0 : -1;
}

/* A gRPC message: flag, length, then len bytes of fill (first byte first). */
static uint8_t *message(size_t len, uint8_t first, uint8_t fill, bool compressed, size_t *out)
{
	uint8_t *m = malloc(5 + len);

	m[0] = compressed;
	m[1] = (uint8_t)(len >> 24);
	m[2] = (uint8_t)(len >> 16);
	m[3] = (uint8_t)(len >> 8);
	m[4] = (uint8_t)len;
	memset(m + 5, fill, len);
	if (len)
		m[5] = first;
	*out = 5 + len;
	return m;
}

TEST(grpc_message_encoding)
{
	char out[64];

	grpc_message__encode("plain text: ok", out, sizeof(out));
	CHECK_STR(out, "plain text: ok");
	grpc_message__encode("50% \xc3\xa9\n", out, sizeof(out));
	CHECK_STR(out, "50%25 %C3%A9%0A");
	grpc_message__encode("\n\n\n", out, 7); /* two escapes fit in 6 bytes + NUL, not three */
	CHECK_STR(out, "%0A%0A");
}

TEST(calls_and_refusals)
{
	struct seen s = { 0 };
	struct grpc_listener_opts o = { .addr = "127.0.0.1:0",
					.path = PATH,
					.message_max = 256 * 1024 };
	struct grpc_listener *l = grpc_listener__start(&o, owner, &s);
	struct grpc_listener_stats st;
	struct answer a;
	CURL *h = curl_easy_init();
	uint8_t *m;
	size_t len;
	uint16_t port;
	int i;

	CHECK(l && h);
	if (!l || !h)
		return;
	port = grpc_listener__port(l);

	/* 200 KB: many DATA frames, one message; the reply and grpc-status 0; twice */
	m = message(200000, 'A', 'z', false, &len);
	for (i = 0; i < 2; i++) {
		CHECK_EQ_INT(call(h, port, PATH, "application/grpc", NULL, m, len, &a), 0);
		CHECK_EQ_INT(a.http, 200);
		CHECK_STR(a.status, "0");
		CHECK_EQ_U64(a.body_len, 9);
		CHECK(a.body[0] == 0 && a.body[4] == 4); /* uncompressed, 4 bytes */
		CHECK(a.body[5] == 0 && a.body[6] == 3 && a.body[7] == 0x0d && a.body[8] == 0x40);
	}
	CHECK_EQ_INT(s.calls, 2);
	CHECK_EQ_U64(s.len, 200000);
	CHECK(s.first == 'A' && s.last == 'z' && !s.gzip);
	free(m);

	/* the owner's failure: trailers-only, its code and message (percent-encoded) */
	m = message(10, 'F', 'x', false, &len);
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc+proto", NULL, m, len, &a), 0);
	CHECK_STR(a.status, "14");
	CHECK_STR(a.message, "busy: 100%25 full%0Aretry");
	CHECK_EQ_U64(a.body_len, 0);
	free(m);

	/* compressed with grpc-encoding gzip: handed over as such */
	m = message(3, 'B', 'y', true, &len);
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc", "gzip", m, len, &a), 0);
	CHECK_STR(a.status, "0");
	CHECK(s.gzip);
	CHECK_EQ_INT(s.calls, 4);

	/* the listener's refusals: none reaches the owner */
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc", NULL, m, len, &a), 0);
	CHECK_STR(a.status, "12"); /* compressed without grpc-encoding */
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc", "br", m, len, &a), 0);
	CHECK_STR(a.status, "12"); /* an encoding not received */
	free(m);
	m = message(3, 'C', 'y', false, &len);
	CHECK_EQ_INT(call(h, port, "/other.Service/Call", "application/grpc", NULL, m, len, &a), 0);
	CHECK_STR(a.status, "12");
	CHECK_EQ_INT(call(h, port, PATH, "application/json", NULL, m, len, &a), 0);
	CHECK_EQ_INT(a.http, 415);
	m[4] = 9; /* a length past the message */
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc", NULL, m, len, &a), 0);
	CHECK_STR(a.status, "13");
	free(m);
	m = message(300 * 1024, 'D', 'y', false, &len); /* over message_max */
	CHECK_EQ_INT(call(h, port, PATH, "application/grpc", NULL, m, len, &a), 0);
	CHECK_STR(a.status, "8");
	free(m);
	CHECK_EQ_INT(s.calls, 4);

	/* headers past 16 KiB: the stream reset, the owner not called */
	{
		static char big[20 * 1024 + 8];

		memcpy(big, "x-big: ", 7);
		memset(big + 7, 'a', sizeof(big) - 8);
		extra_header = big;
		m = message(3, 'E', 'y', false, &len);
		CHECK(call(h, port, PATH, "application/grpc", NULL, m, len, &a) != 0 ||
		      strcmp(a.status, "0"));
		free(m);
		extra_header = NULL;
	}
	CHECK_EQ_INT(s.calls, 4);

	grpc_listener__stats(l, &st);
	CHECK_EQ_U64(st.calls, 4);
	CHECK_EQ_U64(st.refused, 7);
	CHECK_EQ_U64(st.protocol_errors, 0);
	curl_easy_cleanup(h);
	grpc_listener__stop(l);
}

TEST(bad_address)
{
	struct grpc_listener_opts o = { .addr = "nowhere", .path = PATH, .message_max = 1024 };

	CHECK(!grpc_listener__start(&o, owner, NULL));
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	RUN(grpc_message_encoding);
	RUN(calls_and_refusals);
	RUN(bad_address);
	curl_global_cleanup();
	return test_summary();
}
