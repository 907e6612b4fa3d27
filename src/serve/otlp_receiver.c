/* OTLP profiles receiver, over HTTP and gRPC. See otlp_receiver.h.
 *
 * Each transport's thread (the HTTP server's handler, the gRPC listener's call) brings a body
 * to intake(): inflating, decoding and the store write, one request at a time under the
 * receiver's lock, each bounded by the caps (inflated bytes, the decoder's tables, samples and
 * frames); what became of it (an outcome) is answered in the transport's own terms. The
 * counters are atomics so that another thread (the agent's log, serve's exit) reads them
 * while requests are served.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "base/log.h"
#include "export/otlp_read.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "serve/grpc_listener.h"
#include "serve/otlp_receiver.h"
#include "store/store_sink.h"

#define INFLATE_CHUNK ((size_t)64 << 10)

struct otlp_receiver {
	struct http_server *http;   /* NULL: no OTLP/HTTP */
	struct grpc_listener *grpc; /* NULL: no OTLP/gRPC */
	pthread_mutex_t lock;       /* one intake at a time: the sink, the rate's bucket */
	struct store_sink *sink;    /* used under the lock only (and at the stop) */
	size_t inflated_max;
	unsigned rate;
	double tokens; /* the rate's bucket: rate tokens at most, one a request */
	uint64_t tokens_ns;
	_Atomic uint64_t accepted, samples, profiles_rejected;
	_Atomic uint64_t refused[OTLP_REFUSED_CNT];
};

static const char *const refusal_names[OTLP_REFUSED_CNT] = {
	[OTLP_REFUSED_ROUTE] = "route",         [OTLP_REFUSED_MEDIA] = "media",
	[OTLP_REFUSED_TOO_LARGE] = "too_large", [OTLP_REFUSED_GZIP] = "gzip",
	[OTLP_REFUSED_MALFORMED] = "malformed", [OTLP_REFUSED_LIMIT] = "limit",
	[OTLP_REFUSED_RATE] = "rate",           [OTLP_REFUSED_NOMEM] = "nomem",
};

const char *otlp_refusal__name(enum otlp_refusal why)
{
	return why < OTLP_REFUSED_CNT ? refusal_names[why] : "?";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fills resp with status and a google.rpc.Status{code, message} body. */
static void answer_status(struct http_response *resp, int status, int rpc_code, const char *msg)
{
	struct pb_buf b;

	resp->status = status;
	pb_buf__init(&b, 4096);
	pb_buf__varint(&b, 1, (uint64_t)rpc_code);
	pb_buf__string(&b, 2, msg);
	if (!pb_buf__err(&b)) {
		resp->content_type = "application/x-protobuf";
		resp->body = (char *)b.data; /* the server frees it */
		resp->body_len = b.len;
		b.data = NULL;
	}
	pb_buf__free(&b);
}

/* What became of a request, whichever transport brought it: refused (why, with the HTTP
 * status and the gRPC code that say it, and a message), or stored (Profiles rejected as
 * partial success, and why).
 */
struct outcome {
	bool refused;
	enum otlp_refusal why;
	int http, rpc;
	char msg[192];
	uint64_t profiles_rejected;
	char rejected_why[128];
};

/* Counts and logs a refusal into o. */
static void refuse(struct otlp_receiver *r, struct outcome *o, enum otlp_refusal why, int http,
		   int rpc, const char *msg)
{
	uint64_t n = atomic_fetch_add(&r->refused[why], 1) + 1;

	if (!(n & (n - 1))) /* the 1st, 2nd, 4th...: a flood cannot fill the log */
		pr_warn("otlp receiver: refused a request (%s, %llu so far): %d %s\n",
			refusal_names[why], (unsigned long long)n, http, msg);
	o->refused = true;
	o->why = why;
	o->http = http;
	o->rpc = rpc;
	snprintf(o->msg, sizeof(o->msg), "%s", msg);
}

/* Answers an HTTP request's refusal. */
static void answer_refusal(struct http_response *resp, const struct outcome *o)
{
	answer_status(resp, o->http, o->rpc, o->msg);
	if (o->why == OTLP_REFUSED_RATE)
		resp->headers = "Retry-After: 1\r\n";
}

/* Takes a token of the rate's bucket; false when there is none. */
static bool rate__take(struct otlp_receiver *r)
{
	uint64_t now = mono_ns();

	r->tokens += (double)(now - r->tokens_ns) * r->rate / 1e9;
	if (r->tokens > r->rate)
		r->tokens = r->rate;
	r->tokens_ns = now;
	if (r->tokens < 1)
		return false;
	r->tokens -= 1;
	return true;
}

/* Inflates a gzip body into *out (malloc()ed, *out_len bytes) of at most max bytes.
 * 0, -EFBIG (past max: inflating stops there), -EBADMSG (corrupt, truncated), -ENOMEM.
 */
static int inflate_body(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len)
{
	size_t cap = len * 4 < INFLATE_CHUNK ? INFLATE_CHUNK : len * 4, n = 0;
	uint8_t *buf = NULL, *grown;
	z_stream zs;
	int ret, err = 0;

	memset(&zs, 0, sizeof(zs));
	if (cap > max + 1)
		cap = max + 1;
	if (len > UINT32_MAX || inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (n == cap) {
			if (cap > max) { /* one byte past max was made room for: too large */
				err = -EFBIG;
				break;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			grown = realloc(buf, cap);
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			buf = grown;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n);
		ret = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (ret == Z_STREAM_END) {
			if (!zs.avail_in)
				break;
			/* another member follows, or garbage */
			if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b ||
			    inflateReset(&zs) != Z_OK) {
				err = -EBADMSG;
				break;
			}
			continue;
		}
		if (ret == Z_OK)
			continue;
		if (ret == Z_BUF_ERROR && n == cap)
			continue; /* out of room: grown above */
		err = ret == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
		break;
	}
	if (!err && n > max)
		err = -EFBIG;
out:
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

/* The store's process lookup over the request's resources. */
static int request__process(void *ctx, uint32_t pid, struct store_process *out)
{
	const struct otlp_read_process *p = otlp_request__process(ctx, pid);

	if (!p)
		return -1;
	out->exe = p->exe;
	out->container = p->container;
	return 0;
}

/* The ExportProfilesServiceResponse of a stored request: empty, or partial_success{
 * rejected_profiles, error_message}. 0 and *out (malloc()ed, NULL when empty), or -ENOMEM.
 */
static int response__encode(const struct outcome *o, uint8_t **out, size_t *len)
{
	struct pb_buf b;
	size_t mark;

	*out = NULL;
	*len = 0;
	if (!o->profiles_rejected)
		return 0;
	pb_buf__init(&b, 4096);
	pb_buf__begin(&b, 1, &mark);
	pb_buf__varint(&b, 1, o->profiles_rejected);
	pb_buf__string(&b, 2, o->rejected_why);
	pb_buf__end(&b, mark);
	if (pb_buf__err(&b)) {
		pb_buf__free(&b);
		return -ENOMEM;
	}
	*out = b.data;
	*len = b.len;
	b.data = NULL;
	pb_buf__free(&b);
	return 0;
}

/* Takes one request's body (gzip: as sent, to be inflated) into the store, or refuses it. */
static void intake(struct otlp_receiver *r, const uint8_t *body, size_t len, bool gzip,
		   struct outcome *o)
{
	struct otlp_request *q = NULL;
	uint8_t *inflated = NULL;
	char why[128], msg[192];
	int err;

	memset(o, 0, sizeof(*o));
	pthread_mutex_lock(&r->lock);
	if (!rate__take(r)) {
		refuse(r, o, OTLP_REFUSED_RATE, 429, GRPC_UNAVAILABLE,
		       "too many requests: retry later");
		goto out;
	}
	if (gzip) {
		err = inflate_body(body, len, r->inflated_max, &inflated, &len);
		if (err == -EFBIG) {
			snprintf(msg, sizeof(msg), "the inflated request passes %zu MiB",
				 r->inflated_max >> 20);
			refuse(r, o, OTLP_REFUSED_TOO_LARGE, 413, GRPC_RESOURCE_EXHAUSTED, msg);
			goto out;
		}
		if (err) {
			refuse(r, o, err == -ENOMEM ? OTLP_REFUSED_NOMEM : OTLP_REFUSED_GZIP,
			       err == -ENOMEM ? 503 : 400,
			       err == -ENOMEM ? GRPC_UNAVAILABLE : GRPC_INVALID_ARGUMENT,
			       err == -ENOMEM ? "out of memory" : "corrupt gzip body");
			goto out;
		}
		body = inflated;
	} else if (len > r->inflated_max) {
		refuse(r, o, OTLP_REFUSED_TOO_LARGE, 413, GRPC_RESOURCE_EXHAUSTED,
		       "the request passes the size cap");
		goto out;
	}
	err = otlp_request__decode(body, len, NULL, &q, why, sizeof(why));
	if (err) {
		snprintf(msg, sizeof(msg), "not a profiles request stackscope reads: %s", why);
		if (err == -ENOMEM)
			refuse(r, o, OTLP_REFUSED_NOMEM, 503, GRPC_UNAVAILABLE, "out of memory");
		else
			refuse(r, o, err == -E2BIG ? OTLP_REFUSED_LIMIT : OTLP_REFUSED_MALFORMED,
			       400, GRPC_INVALID_ARGUMENT, msg);
		goto out;
	}
	if (profile__sample_cnt(q->profile))
		store_sink__write(r->sink, q->profile, request__process, q);
	atomic_fetch_add(&r->accepted, 1);
	atomic_fetch_add(&r->samples, q->samples);
	atomic_fetch_add(&r->profiles_rejected, q->profiles_rejected);
	o->profiles_rejected = q->profiles_rejected;
	snprintf(o->rejected_why, sizeof(o->rejected_why), "%s", q->rejected_why);
out:
	pthread_mutex_unlock(&r->lock);
	free(inflated);
	otlp_request__free(q);
}

/* Whether the media type (up to ';') of a Content-Type value is t. */
static bool media_is(const char *ct, const char *t)
{
	size_t n = strlen(t);

	return !strncasecmp(ct, t, n) && (!ct[n] || ct[n] == ';' || ct[n] == ' ');
}

static void handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct otlp_receiver *r = ctx;
	struct outcome o = { 0 };
	uint8_t *body;
	size_t len;

	if (strcmp(req->path, OTLP_RECEIVER_PATH)) {
		refuse(r, &o, OTLP_REFUSED_ROUTE, 404, GRPC_NOT_FOUND,
		       "not found: profiles are received at " OTLP_RECEIVER_PATH);
		answer_refusal(resp, &o);
		return;
	}
	if (strcmp(req->method, "POST")) {
		refuse(r, &o, OTLP_REFUSED_ROUTE, 405, GRPC_UNIMPLEMENTED, "POST a request");
		answer_refusal(resp, &o);
		resp->headers = "Allow: POST\r\n";
		return;
	}
	if (req->content_type[0] && !media_is(req->content_type, "application/x-protobuf") &&
	    !media_is(req->content_type, "application/protobuf")) {
		refuse(r, &o, OTLP_REFUSED_MEDIA, 415, GRPC_UNIMPLEMENTED,
		       "only application/x-protobuf is received (no JSON)");
		answer_refusal(resp, &o);
		return;
	}
	if (req->content_encoding[0] && strcasecmp(req->content_encoding, "gzip") &&
	    strcasecmp(req->content_encoding, "identity")) {
		refuse(r, &o, OTLP_REFUSED_MEDIA, 415, GRPC_UNIMPLEMENTED,
		       "only the gzip Content-Encoding is received");
		answer_refusal(resp, &o);
		return;
	}
	intake(r, req->body, req->body_len, !strcasecmp(req->content_encoding, "gzip"), &o);
	if (o.refused) {
		answer_refusal(resp, &o);
		return;
	}
	resp->status = 200;
	resp->content_type = "application/x-protobuf";
	if (!response__encode(&o, &body, &len) && body) {
		resp->body = (char *)body; /* the server frees it */
		resp->body_len = len;
	}
}

/* A gRPC Export call (the listener checked its path, media and framing). */
static void handle_call(void *ctx, const uint8_t *msg, size_t len, bool gzip,
			struct grpc_reply *reply)
{
	struct otlp_receiver *r = ctx;
	struct outcome o;

	intake(r, msg, len, gzip, &o);
	if (o.refused) {
		reply->status = o.rpc;
		snprintf(reply->message, sizeof(reply->message), "%s", o.msg);
		return;
	}
	reply->status = GRPC_OK;
	if (response__encode(&o, &reply->body, &reply->body_len)) {
		reply->status = GRPC_UNAVAILABLE;
		snprintf(reply->message, sizeof(reply->message), "out of memory");
	}
}

struct otlp_receiver *otlp_receiver__start(const struct otlp_receiver_opts *o)
{
	struct otlp_receiver *r = calloc(1, sizeof(*r));
	struct http_server_opts ho = {
		.methods = HTTP_METHOD_GET | HTTP_METHOD_POST,
		.body_max = o->body_max ?: OTLP_RECEIVER_BODY_MAX,
		.hosts = "*", /* agents name this machine as they know it */
	};
	struct grpc_listener_opts go = {
		.addr = o->grpc_addr,
		.path = OTLP_RECEIVER_GRPC_PATH,
		.message_max = o->body_max ?: OTLP_RECEIVER_BODY_MAX,
	};
	int err;

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->inflated_max = o->inflated_max ?: OTLP_RECEIVER_INFLATED_MAX;
	r->rate = o->rate ?: OTLP_RECEIVER_RATE;
	r->tokens = r->rate;
	r->tokens_ns = mono_ns();
	r->sink = store_sink__open(o->store_path, o->store_max_sz, o->store_max_age_ns);
	if (!r->sink)
		goto fail;
	if (o->addr && !(r->http = http_server__start(o->addr, &ho, handle, r)))
		goto fail;
	if (o->grpc_addr && !(r->grpc = grpc_listener__start(&go, handle_call, r)))
		goto fail;
	return r;
fail:
	err = errno;
	http_server__stop(r->http);
	store_sink__free(r->sink);
	pthread_mutex_destroy(&r->lock);
	free(r);
	errno = err;
	return NULL;
}

uint16_t otlp_receiver__port(const struct otlp_receiver *r)
{
	return r->http ? http_server__port(r->http) : 0;
}

uint16_t otlp_receiver__grpc_port(const struct otlp_receiver *r)
{
	return r->grpc ? grpc_listener__port(r->grpc) : 0;
}

void otlp_receiver__stats(struct otlp_receiver *r, struct otlp_receiver_stats *out)
{
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->accepted = atomic_load(&r->accepted);
	out->samples = atomic_load(&r->samples);
	out->profiles_rejected = atomic_load(&r->profiles_rejected);
	for (i = 0; i < OTLP_REFUSED_CNT; i++)
		out->refused[i] = atomic_load(&r->refused[i]);
	if (r->http)
		http_server__stats(r->http, &out->http);
	if (r->grpc)
		grpc_listener__stats(r->grpc, &out->grpc);
}

void otlp_receiver__log_stats(struct otlp_receiver *r)
{
	struct otlp_receiver_stats st;
	char refused[256];
	size_t n = 0;
	unsigned i;

	otlp_receiver__stats(r, &st);
	for (i = 0; i < OTLP_REFUSED_CNT && n < sizeof(refused); i++)
		n += (size_t)snprintf(refused + n, sizeof(refused) - n, "%s%s %llu", i ? ", " : "",
				      refusal_names[i], (unsigned long long)st.refused[i]);
	pr_info("otlp receiver: %llu requests stored (%llu samples), %llu profiles rejected; "
		"refused: %s; refused by the HTTP server: %llu, timed out %llu; gRPC: %llu calls, "
		"%llu refused by the listener, %llu connections refused, %llu timed out, %llu "
		"protocol errors\n",
		(unsigned long long)st.accepted, (unsigned long long)st.samples,
		(unsigned long long)st.profiles_rejected, refused,
		(unsigned long long)st.http.rejected, (unsigned long long)st.http.timed_out,
		(unsigned long long)st.grpc.calls, (unsigned long long)st.grpc.refused,
		(unsigned long long)st.grpc.conns_refused, (unsigned long long)st.grpc.timed_out,
		(unsigned long long)st.grpc.protocol_errors);
}

void otlp_receiver__stop(struct otlp_receiver *r)
{
	if (!r)
		return;
	http_server__stop(r->http);
	grpc_listener__stop(r->grpc);
	store_sink__free(r->sink);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
