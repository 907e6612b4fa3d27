/* OTLP transport over libcurl (see otlp_client.h for the protocol, the retry policy and the
 * queue bounds).
 *
 * One export thread owns the curl handle (connections are kept alive between requests) and
 * pops requests from the queue; the queue, the counters and the stop flag are the only
 * state shared with callers, all under c->lock. The thread sleeps between retries on a
 * condvar so that otlp_client__free() can wake it; a transfer in progress is aborted from
 * curl's progress callback, which reads the stop flag atomically.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/array.h"
#include "base/err_buf.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/timed_wait.h"
#include "export/otlp_client.h"
#include "export/protobuf_read.h"

/* An answer is read up to these sizes (the body after curl inflated it), then the transfer
 * is ended: we only read a few fields, and a collector (or what poses as one) answering
 * without end would otherwise be read until the attempt's timeout, a core busy inflating.
 */
#define RESPONSE_MAX_SZ (64 * 1024)
#define RESPONSE_HEADERS_MAX_SZ (64 * 1024)
#define GRPC_MESSAGE_MAX_SZ 256
#define OUTAGE_WARN_INTERVAL_MS 60000 /* "still unavailable" at most this often */

/* gRPC status codes used here */
enum {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

/* ---- configuration ---- */

void otlp_config__init(struct otlp_config *c)
{
	memset(c, 0, sizeof(*c));
	c->protocol = OTLP_PROTOCOL_HTTP_PROTOBUF;
	c->gzip = true;
	c->timeout_ms = 10000;
	c->connect_timeout_ms = 3000;
	c->initial_backoff_ms = 1000;
	c->max_backoff_ms = 5000;
	c->max_elapsed_ms = 120000;
	c->queue_max_cnt = 16;
	c->queue_max_sz = (size_t)32 << 20;
}

void otlp_config__free(struct otlp_config *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->header_cnt; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	for (i = 0; i < c->resource_attr_cnt; i++) {
		free((char *)c->resource_attrs[i].key);
		free((char *)c->resource_attrs[i].value);
	}
	free(c->headers);
	free(c->resource_attrs);
	free(c->endpoint);
	otlp_tls__free(&c->tls);
	memset(c, 0, sizeof(*c));
}

/* Splits an endpoint into its parts; all out-pointers point into url. 0 or -EINVAL. */
struct url_parts {
	const char *scheme_end; /* after "://" */
	const char *host, *host_end;
	const char *port, *port_end; /* empty when absent */
	const char *path;            /* "" or starting with '/' (query kept) */
	bool https;
};

static int url__parse(const char *url, struct url_parts *u, const char **why)
{
	const char *s;
	unsigned long port = 0;

	memset(u, 0, sizeof(*u));
	for (s = url; *s; s++) {
		if ((unsigned char)*s <= ' ' || *s == 0x7f) {
			*why = "contains a space or control character";
			return -EINVAL;
		}
	}
	if (!strncmp(url, "http://", 7)) {
		u->scheme_end = url + 7;
	} else if (!strncmp(url, "https://", 8)) {
		u->scheme_end = url + 8;
		u->https = true;
	} else {
		*why = "must start with http:// or https://";
		return -EINVAL;
	}
	s = u->scheme_end;
	if (strchr(s, '@') && (!strchr(s, '/') || strchr(s, '@') < strchr(s, '/'))) {
		*why = "must not carry credentials (use headers)";
		return -EINVAL;
	}
	u->host = s;
	if (*s == '[') { /* IPv6 literal */
		s = strchr(s, ']');
		if (!s) {
			*why = "has an unterminated [IPv6] host";
			return -EINVAL;
		}
		s++;
	} else {
		while (*s && *s != ':' && *s != '/' && *s != '?' && *s != '#')
			s++;
	}
	u->host_end = s;
	if (u->host_end == u->host) {
		*why = "has no host";
		return -EINVAL;
	}
	u->port = u->port_end = s;
	if (*s == ':') {
		u->port = ++s;
		while (*s >= '0' && *s <= '9') {
			port = port * 10 + (unsigned long)(*s - '0');
			if (port > 65535)
				break;
			s++;
		}
		u->port_end = s;
		if (u->port_end == u->port || port == 0 || port > 65535) {
			*why = "has a bad port (1..65535)";
			return -EINVAL;
		}
	}
	if (*s && *s != '/') {
		*why = "has junk after the host";
		return -EINVAL;
	}
	u->path = s;
	return 0;
}

int otlp_config__set_endpoint(struct otlp_config *c, const char *url, bool is_full, char *err,
			      size_t err_sz)
{
	struct url_parts u;
	const char *why = "";
	char *copy;

	if (!url || url__parse(url, &u, &why)) {
		err_buf__set(err, err_sz, "bad OTLP endpoint \"%s\": %s", url ? url : "", why);
		return -EINVAL;
	}
	copy = strdup(url);
	if (!copy)
		return -ENOMEM;
	free(c->endpoint);
	c->endpoint = copy;
	c->endpoint_is_full = is_full;
	return 0;
}

char *otlp_config__url(const struct otlp_config *c)
{
	struct url_parts u;
	const char *why, *path;
	size_t base_len, path_len;
	char *out;

	if (!c->endpoint || url__parse(c->endpoint, &u, &why)) {
		errno = EINVAL;
		return NULL;
	}
	if (c->protocol == OTLP_PROTOCOL_GRPC) {
		base_len = (size_t)(u.port_end - c->endpoint);
		path = OTLP_GRPC_PATH;
	} else if (c->endpoint_is_full) {
		return strdup(c->endpoint);
	} else {
		base_len = strlen(c->endpoint);
		while (base_len > (size_t)(u.path - c->endpoint) &&
		       c->endpoint[base_len - 1] == '/')
			base_len--;
		path = OTLP_HTTP_PATH;
	}
	path_len = strlen(path);
	out = malloc(base_len + path_len + 1);
	if (!out)
		return NULL;
	memcpy(out, c->endpoint, base_len);
	memcpy(out + base_len, path, path_len + 1);
	return out;
}

/* Trimmed, percent-decoded copy of s[0..len); NULL with *bad set on bad encoding. */
static char *pct__decode(const char *s, size_t len, bool *bad)
{
	char *out;
	size_t i, o = 0;

	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	out = malloc(len + 1);
	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= len || hex_digit(s[i + 1]) < 0 || hex_digit(s[i + 2]) < 0) {
			*bad = true;
			break;
		}
		out[o++] = (char)(hex_digit(s[i + 1]) << 4 | hex_digit(s[i + 2]));
		i += 2;
	}
	out[o] = '\0';
	if (*bad || memchr(out, '\0', o) != NULL) {
		*bad = true;
		free(out);
		return NULL;
	}
	return out;
}

/* An HTTP header field name: an RFC 9110 token. */
static bool header__valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	}
	return true;
}

static bool header__valid_value(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < ' ' && *s != '\t')
			return false;
		if (*s == 0x7f)
			return false;
	}
	return true;
}

/* Parses "k=v,k2=v2" and calls add(c, key, value) (ownership moves) for each entry. */
static int kv_list__parse(struct otlp_config *c, const char *list, const char *what, bool headers,
			  char *err, size_t err_sz)
{
	const char *s = list, *end, *eq;
	char *key = NULL, *value = NULL;
	bool bad = false;
	int ret = 0;

	while (s && *s) {
		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		eq = memchr(s, '=', (size_t)(end - s));
		if (!eq) {
			/* allow empty entries ("a=b,,c=d", a trailing comma) */
			const char *t = s;

			while (t < end && isspace((unsigned char)*t))
				t++;
			if (t != end) {
				/* (a header's text is a secret's, maybe: not echoed) */
				if (headers)
					err_buf__set(err, err_sz, "%s: an entry has no '='", what);
				else
					err_buf__set(err, err_sz, "%s: entry \"%.*s\" has no '='",
						     what, (int)(end - s), s);
				return -EINVAL;
			}
			s = *end ? end + 1 : end;
			continue;
		}
		key = pct__decode(s, (size_t)(eq - s), &bad);
		value = key ? pct__decode(eq + 1, (size_t)(end - eq - 1), &bad) : NULL;
		if (!key || !value) {
			ret = bad ? -EINVAL : -ENOMEM;
			err_buf__set(err, err_sz, "%s: bad percent-encoding in \"%.*s\"", what,
				     (int)((headers ? eq : end) - s), s);
			goto cleanup;
		}
		if (!*key ||
		    (headers && (!header__valid_name(key) || !header__valid_value(value)))) {
			err_buf__set(err, err_sz, "%s: bad %s \"%.*s\"", what,
				     headers ? "header" : "attribute",
				     (int)((headers ? eq : end) - s), s);
			ret = -EINVAL;
			goto cleanup;
		}
		if (headers ? array__reserve_exact((void **)&c->headers, c->header_cnt + 1,
						   sizeof(*c->headers))
			    : array__reserve_exact((void **)&c->resource_attrs,
						   c->resource_attr_cnt + 1,
						   sizeof(*c->resource_attrs))) {
			ret = -ENOMEM;
			goto cleanup;
		}
		if (headers)
			c->headers[c->header_cnt++] = (struct otlp_header){ key, value };
		else
			c->resource_attrs[c->resource_attr_cnt++] =
				(struct otlp_attr){ key, value };
		key = value = NULL;
		s = *end ? end + 1 : end;
	}
cleanup:
	free(key);
	free(value);
	return ret;
}

int otlp_config__add_headers(struct otlp_config *c, const char *list, char *err, size_t err_sz)
{
	return kv_list__parse(c, list, "OTLP headers", true, err, err_sz);
}

int otlp_config__add_header(struct otlp_config *c, const char *kv, char *err, size_t err_sz)
{
	const char *eq = strchr(kv, '=');
	char *name = NULL, *value = NULL;
	int ret = -ENOMEM;

	if (!eq || eq == kv) {
		err_buf__set(err, err_sz, "--otlp-header: want NAME=VALUE");
		return -EINVAL;
	}
	name = strndup(kv, (size_t)(eq - kv));
	value = strdup(eq + 1);
	if (!name || !value)
		goto cleanup;
	if (!header__valid_name(name) || !header__valid_value(value)) {
		err_buf__set(err, err_sz, "--otlp-header: bad header \"%s\"", name);
		ret = -EINVAL;
		goto cleanup;
	}
	if (array__reserve_exact((void **)&c->headers, c->header_cnt + 1, sizeof(*c->headers)))
		goto cleanup;
	c->headers[c->header_cnt++] = (struct otlp_header){ name, value };
	return 0;
cleanup:
	free(name);
	free(value);
	return ret;
}

int otlp_config__add_resource_attrs(struct otlp_config *c, const char *list, char *err,
				    size_t err_sz)
{
	return kv_list__parse(c, list, "resource attributes", false, err, err_sz);
}

/* Which of two spellings environment variable name holds: *pick 0 or 1, or -1 when it is
 * unset or empty. -EINVAL, with "name=\"value\": hint" in err, when it is neither.
 */
static int env__pick(const char *name, const char *const spellings[2], const char *hint, int *pick,
		     char *err, size_t err_sz)
{
	const char *v = getenv(name);
	int i;

	*pick = -1;
	if (!v || !*v)
		return 0;
	for (i = 0; i < 2; i++) {
		if (!strcmp(v, spellings[i])) {
			*pick = i;
			return 0;
		}
	}
	err_buf__set(err, err_sz, "%s=\"%s\": %s", name, v, hint);
	return -EINVAL;
}

int otlp_config__from_env(struct otlp_config *c, char *err, size_t err_sz)
{
	/* in the order of enum otlp_protocol */
	static const char *const protocols[2] = { "http/protobuf", "grpc" };
	static const char *const compressions[2] = { "gzip", "none" };
	const char *v;
	char *end;
	unsigned long ms;
	int ret, pick;

	otlp_config__init(c);
	if (err && err_sz)
		err[0] = '\0';
	ret = env__pick("OTEL_EXPORTER_OTLP_PROTOCOL", protocols,
			"supported are http/protobuf and grpc", &pick, err, err_sz);
	if (ret)
		return ret;
	if (pick >= 0)
		c->protocol = pick;
	v = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	if (v && *v) {
		ret = otlp_config__set_endpoint(c, v, true, err, err_sz);
	} else {
		v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
		ret = v && *v ? otlp_config__set_endpoint(c, v, false, err, err_sz) : 0;
	}
	if (ret) {
		/* name the variable in front of the message */
		if (ret == -EINVAL && err && err_sz) {
			char tmp[256];

			snprintf(tmp, sizeof(tmp), "%s", err);
			err_buf__set(err, err_sz, "%s: %s",
				     getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") &&
						     *getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
					     ? "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"
					     : "OTEL_EXPORTER_OTLP_ENDPOINT",
				     tmp);
		}
		return ret;
	}
	v = getenv("OTEL_EXPORTER_OTLP_HEADERS");
	if (v && (ret = kv_list__parse(c, v, "OTEL_EXPORTER_OTLP_HEADERS", true, err, err_sz)))
		return ret;
	v = getenv("OTEL_EXPORTER_OTLP_PROFILES_HEADERS");
	if (v &&
	    (ret = kv_list__parse(c, v, "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", true, err, err_sz)))
		return ret;
	v = getenv("OTEL_RESOURCE_ATTRIBUTES");
	if (v && (ret = kv_list__parse(c, v, "OTEL_RESOURCE_ATTRIBUTES", false, err, err_sz)))
		return ret;
	ret = otlp_tls__from_env(&c->tls, err, err_sz);
	if (ret)
		return ret;
	v = getenv("OTEL_EXPORTER_OTLP_TIMEOUT");
	if (v && *v) {
		errno = 0;
		ms = strtoul(v, &end, 10);
		if (errno || *end || ms == 0 || ms > 3600 * 1000) {
			err_buf__set(err, err_sz,
				     "OTEL_EXPORTER_OTLP_TIMEOUT=\"%s\": want milliseconds", v);
			return -EINVAL;
		}
		c->timeout_ms = (unsigned)ms;
	}
	ret = env__pick("OTEL_EXPORTER_OTLP_COMPRESSION", compressions, "want gzip or none", &pick,
			err, err_sz);
	if (ret)
		return ret;
	if (pick >= 0)
		c->gzip = pick == 0;
	return 0;
}

/* ---- the client ---- */

struct export_req {
	struct export_req *next;
	uint8_t *body; /* ready to send: gzipped and, for gRPC, framed */
	size_t len;
	uint64_t seq; /* submission order */
};

struct otlp_client {
	struct otlp_config cfg; /* copy; read-only after creation */
	char *url;
	struct curl_slist *curl_headers;
	struct curl_slist *connect_to; /* --otlp-server-name: the name mapped to the host */
	CURL *curl;
	char errbuf[CURL_ERROR_SIZE]; /* curl's words on the last failed transfer */
	bool https;
	struct otlp_tls_watch tls_watch; /* export thread only: the TLS files' last stamps */

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t work; /* signalled on submit and stop */
	pthread_cond_t idle; /* signalled when a request is done */
	struct export_req *head, *tail;
	bool in_flight;
	atomic_bool stop;
	struct otlp_client_stats stats;
	uint64_t next_seq;  /* the seq of the next request submitted */
	bool fresh_connect; /* export thread only: last attempt hit a transport error */
	uint64_t rng;

	/* export thread only: what the log has been told (see otlp_client.h, Outages) */
	bool failing;             /* the last request was rejected: log only state changes */
	uint64_t outage_start_ms; /* 0: no outage */
	uint64_t outage_warned_ms;
	uint64_t outage_lost0;  /* requests lost before the outage began */
	uint64_t outage_lost;   /* requests lost during the last outage (set at its end) */
	uint64_t outage_len_ms; /* how long the last outage lasted */
	bool recovering;        /* the last outage is over; its backlog is being sent */
	uint64_t recovery_seq;  /* requests with a smaller seq waited through it */
	uint64_t late_cnt;      /* of those, delivered */
};

/* The result of one attempt. */
struct attempt {
	bool ok;
	bool retryable;
	bool tls_refused; /* the TLS layer refused (otlp_tls__refused()): not retried */
	long wait_ms;     /* server-requested delay, -1 = none */
	bool wait_is_min; /* RetryInfo: at least the backoff as well */
	int http_status;
	int grpc_status; /* -1 when absent */
	long rejected;
	bool partial;
	uint64_t uploaded; /* request bytes sent */
	char message[GRPC_MESSAGE_MAX_SZ];
	/* filled by the curl callbacks */
	uint8_t *resp;
	size_t resp_len;
	long retry_after_ms;
	char grpc_message[GRPC_MESSAGE_MAX_SZ];
	char grpc_details[1024]; /* grpc-status-details-bin, base64 */
	bool resp_gzip;          /* grpc-encoding: gzip on the response */
	size_t headers_sz;       /* header bytes read */
	bool resp_over;          /* the body went past RESPONSE_MAX_SZ: transfer ended */
	bool headers_over;       /* the headers went past RESPONSE_HEADERS_MAX_SZ: ended */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t client__rand(struct otlp_client *c)
{
	/* xorshift64*: jitter only */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 0x2545f4914f6cdd1dULL;
}

/* gzip (when configured) and gRPC framing of one request. */
static int client__prepare(const struct otlp_client *c, const uint8_t *data, size_t len,
			   struct export_req **out)
{
	size_t prefix = c->cfg.protocol == OTLP_PROTOCOL_GRPC ? 5 : 0, cap, body_len;
	struct export_req *r;
	z_stream zs = { 0 };
	int zret;

	*out = NULL;
	if (len > UINT32_MAX / 2)
		return -EMSGSIZE;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	cap = c->cfg.gzip ? deflateBound(&zs, len) + 32 : len;
	/* deflateBound without init gives the conservative bound; add the gzip wrapper */
	r->body = malloc(prefix + cap);
	if (!r->body)
		goto nomem;
	if (c->cfg.gzip) {
		/* Level 1: 2-3x less CPU than the default level 6 on our profiles, ~5% more bytes
		 * (the agent's export every interval was a tenth of its CPU under churn).
		 */
		if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
		    Z_OK)
			goto nomem;
		zs.next_in = (Bytef *)data;
		zs.avail_in = (uInt)len;
		zs.next_out = r->body + prefix;
		zs.avail_out = (uInt)cap;
		zret = deflate(&zs, Z_FINISH);
		body_len = zs.total_out;
		deflateEnd(&zs);
		if (zret != Z_STREAM_END)
			goto nomem;
	} else {
		memcpy(r->body + prefix, data, len);
		body_len = len;
	}
	if (prefix) {
		r->body[0] = c->cfg.gzip ? 1 : 0;
		r->body[1] = (uint8_t)(body_len >> 24);
		r->body[2] = (uint8_t)(body_len >> 16);
		r->body[3] = (uint8_t)(body_len >> 8);
		r->body[4] = (uint8_t)body_len;
	}
	r->len = prefix + body_len;
	*out = r;
	return 0;
nomem:
	free(r->body);
	free(r);
	return -ENOMEM;
}

static void export_req__free(struct export_req *r)
{
	if (!r)
		return;
	free(r->body);
	free(r);
}

/* Under c->lock: r at the end of the queue, counted in its stats. */
static void queue__push(struct otlp_client *c, struct export_req *r)
{
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	c->stats.queue_cnt++;
	c->stats.queue_sz += r->len;
}

/* Under c->lock, with a request queued: the first, out of the queue and its stats. */
static struct export_req *queue__pop(struct otlp_client *c)
{
	struct export_req *r = c->head;

	c->head = r->next;
	if (!c->head)
		c->tail = NULL;
	c->stats.queue_cnt--;
	c->stats.queue_sz -= r->len;
	return r;
}

int otlp_client__submit(struct otlp_client *c, const struct pb_buf *req)
{
	struct export_req *r, *old;
	int err;

	err = client__prepare(c, req->data, req->len, &r);
	if (err == -EMSGSIZE || (!err && r->len > c->cfg.queue_max_sz)) {
		export_req__free(r);
		pthread_mutex_lock(&c->lock);
		c->stats.exports_dropped++;
		c->stats.exports_lost[OTLP_LOST_TOO_LARGE]++;
		pthread_mutex_unlock(&c->lock);
		return -EMSGSIZE;
	}
	if (err)
		return err;
	pthread_mutex_lock(&c->lock);
	while (c->head && (c->stats.queue_cnt + 1 > c->cfg.queue_max_cnt ||
			   c->stats.queue_sz + r->len > c->cfg.queue_max_sz)) {
		old = queue__pop(c);
		c->stats.exports_dropped++;
		c->stats.exports_lost[OTLP_LOST_QUEUE_FULL]++;
		export_req__free(old);
	}
	r->seq = c->next_seq++;
	queue__push(c, r);
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ---- one attempt ---- */

static size_t curl__write(char *data, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;
	size_t len = size * n, room = RESPONSE_MAX_SZ - a->resp_len;
	uint8_t *tmp;

	if (len > room) {
		a->resp_over = true;
		return 0; /* ends the transfer (CURLE_WRITE_ERROR) */
	}
	if (len) {
		tmp = realloc(a->resp, a->resp_len + len);
		if (!tmp)
			return 0;
		a->resp = tmp;
		memcpy(a->resp + a->resp_len, data, len);
		a->resp_len += len;
	}
	return size * n;
}

/* Value of header "name: value" in line (len bytes, CRLF included) into out, or false. */
static bool header__match(const char *line, size_t len, const char *name, char *out, size_t out_sz)
{
	size_t nlen = strlen(name), vlen;
	const char *v;

	if (len <= nlen || strncasecmp(line, name, nlen) || line[nlen] != ':')
		return false;
	v = line + nlen + 1;
	vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
	if (vlen >= out_sz)
		vlen = out_sz - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return true;
}

/* Retry-After: delay-seconds or an HTTP-date; -1 when unparsable. */
static long retry_after__ms(const char *v)
{
	unsigned long secs = 0;
	const char *s = v;
	time_t when;

	if (*s >= '0' && *s <= '9') {
		for (; *s >= '0' && *s <= '9'; s++) {
			secs = secs * 10 + (unsigned long)(*s - '0');
			if (secs > 86400)
				secs = 86400;
		}
		return *s ? -1 : (long)secs * 1000;
	}
	when = curl_getdate(v, NULL);
	if (when == -1)
		return -1;
	when -= time(NULL);
	return when > 0 ? (long)when * 1000 : 0;
}

static size_t curl__header(char *line, size_t size, size_t n, void *ctx)
{
	struct attempt *a = ctx;
	size_t len = size * n;
	char v[GRPC_MESSAGE_MAX_SZ];

	a->headers_sz += len;
	if (a->headers_sz > RESPONSE_HEADERS_MAX_SZ) {
		a->headers_over = true;
		return 0; /* ends the transfer */
	}
	if (header__match(line, len, "retry-after", v, sizeof(v)))
		a->retry_after_ms = retry_after__ms(v);
	else if (header__match(line, len, "grpc-status", v, sizeof(v)))
		a->grpc_status = (int)strtol(v, NULL, 10);
	else if (header__match(line, len, "grpc-message", a->grpc_message, sizeof(a->grpc_message)))
		;
	else if (header__match(line, len, "grpc-status-details-bin", a->grpc_details,
			       sizeof(a->grpc_details)))
		;
	else if (header__match(line, len, "grpc-encoding", v, sizeof(v)))
		a->resp_gzip = !strcmp(v, "gzip");
	return len;
}

static int curl__progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			  curl_off_t ulnow)
{
	struct otlp_client *c = ctx;

	return atomic_load(&c->stop) ? 1 : 0;
}

/* The next field of r (export/protobuf_read.h); false at the end or on junk (answers are read
 * best effort: what precedes junk counts).
 */
static bool pb__next(struct pb_reader *r, struct pb_field *f)
{
	return r->p < r->end && !pb_reader__field(r, f);
}

static void pb__string(const struct pb_field *f, char *out, size_t out_sz)
{
	size_t len = pb_reader__left(&f->body);

	if (len >= out_sz)
		len = out_sz - 1;
	memcpy(out, f->body.p, len);
	out[len] = '\0';
}

/* ExportProfilesServiceResponse: partial_success { rejected_profiles, error_message }. */
static void response__parse(struct attempt *a, const uint8_t *data, size_t len)
{
	struct pb_reader in = pb_reader__make(data, len), ps;
	struct pb_field f, g;

	while (pb__next(&in, &f)) {
		if (f.num != 1 || f.wire != PB_WIRE_LEN)
			continue;
		a->partial = true; /* present, even empty: counted, never retried */
		ps = f.body;
		while (pb__next(&ps, &g)) {
			if (g.num == 1 && g.wire == PB_WIRE_VARINT)
				a->rejected = (long)g.v;
			else if (g.num == 2 && g.wire == PB_WIRE_LEN)
				pb__string(&g, a->message, sizeof(a->message));
		}
	}
}

/* google.rpc.Status message (HTTP error bodies): the message field. */
static void status__parse(struct attempt *a, const uint8_t *data, size_t len)
{
	struct pb_reader in = pb_reader__make(data, len);
	struct pb_field f;

	while (pb__next(&in, &f)) {
		if (f.num == 2 && f.wire == PB_WIRE_LEN)
			pb__string(&f, a->message, sizeof(a->message));
	}
}

/* The value of one base64 digit, standard or URL-safe ('-' and '_' for '+' and '/'), or -1. */
static int base64__val(char ch)
{
	static const char digits[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *d = ch ? strchr(digits, ch) : NULL;

	if (d)
		return (int)(d - digits);
	if (ch == '-')
		return 62;
	return ch == '_' ? 63 : -1;
}

/* google.rpc.RetryInfo in grpc-status-details-bin (base64 google.rpc.Status, details
 * Any{type_url, value = RetryInfo{retry_delay Duration{seconds, nanos}}}): the delay in ms,
 * or -1.
 */
static long grpc__retry_info_ms(const char *b64)
{
	static const char type[] = "type.googleapis.com/google.rpc.RetryInfo";
	uint8_t bin[768];
	size_t len = 0;
	uint32_t acc = 0;
	int bits = 0, d;
	struct pb_reader in, any, val, dur;
	struct pb_field f, g, h;
	uint64_t secs, nanos;
	char url[64];
	bool is_retry_info;

	for (; *b64 && *b64 != '='; b64++) {
		d = base64__val(*b64);
		if (d < 0)
			return -1;
		acc = acc << 6 | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (len == sizeof(bin))
				return -1;
			bin[len++] = (uint8_t)(acc >> bits);
		}
	}
	in = pb_reader__make(bin, len);
	while (pb__next(&in, &f)) {
		if (f.num != 3 || f.wire != PB_WIRE_LEN)
			continue;
		any = f.body;
		is_retry_info = false;
		val = pb_reader__make(NULL, 0);
		while (pb__next(&any, &g)) {
			if (g.num == 1 && g.wire == PB_WIRE_LEN) {
				pb__string(&g, url, sizeof(url));
				is_retry_info = !strcmp(url, type);
			} else if (g.num == 2 && g.wire == PB_WIRE_LEN) {
				val = g.body;
			}
		}
		if (!is_retry_info || !val.p)
			continue;
		secs = nanos = 0;
		while (pb__next(&val, &g)) {
			if (g.num != 1 || g.wire != PB_WIRE_LEN)
				continue;
			dur = g.body;
			while (pb__next(&dur, &h)) {
				if (h.num == 1 && h.wire == PB_WIRE_VARINT)
					secs = h.v;
				else if (h.num == 2 && h.wire == PB_WIRE_VARINT)
					nanos = h.v;
			}
		}
		if (secs > 86400)
			secs = 86400;
		if (nanos > 999999999) /* a Duration's nanos are below a second */
			nanos = 999999999;
		return (long)(secs * 1000 + nanos / 1000000);
	}
	return -1;
}

/* gRPC percent-decodes grpc-message; do it in place. */
static void grpc__decode_message(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%' && hex_digit(s[1]) >= 0 && hex_digit(s[2]) >= 0) {
			*o++ = (char)(hex_digit(s[1]) << 4 | hex_digit(s[2]));
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Status for an HTTP answer that carries no grpc-status (the gRPC HTTP mapping). */
static int grpc__status_from_http(long http)
{
	switch (http) {
	case 400:
		return GRPC_INTERNAL;
	case 401:
		return GRPC_UNAUTHENTICATED;
	case 403:
		return GRPC_PERMISSION_DENIED;
	case 404:
		return GRPC_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return GRPC_UNAVAILABLE;
	default:
		return GRPC_UNKNOWN;
	}
}

/* The gRPC response message (after the 5-byte prefix), inflated when compressed. */
static void grpc__parse_response(struct attempt *a)
{
	uint8_t out[RESPONSE_MAX_SZ];
	z_stream zs = { 0 };
	uint32_t mlen;

	if (a->resp_len < 5)
		return;
	mlen = (uint32_t)a->resp[1] << 24 | (uint32_t)a->resp[2] << 16 | (uint32_t)a->resp[3] << 8 |
	       a->resp[4];
	if (mlen > a->resp_len - 5)
		return;
	if (!a->resp[0]) {
		response__parse(a, a->resp + 5, mlen);
		return;
	}
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return;
	zs.next_in = a->resp + 5;
	zs.avail_in = mlen;
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	if (inflate(&zs, Z_FINISH) == Z_STREAM_END)
		response__parse(a, out, zs.total_out);
	inflateEnd(&zs);
}

static bool curl__retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

/* One POST of r; fills a. */
static void client__attempt(struct otlp_client *c, const struct export_req *r, struct attempt *a)
{
	bool grpc = c->cfg.protocol == OTLP_PROTOCOL_GRPC;
	curl_off_t uploaded = 0;
	long http = 0, version = 0;
	CURLcode rc;

	memset(a, 0, sizeof(*a));
	a->wait_ms = -1;
	a->retry_after_ms = -1;
	a->grpc_status = -1;
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, a);
	/* a rotated certificate or CA is used from the next connection on */
	if (c->https && otlp_tls_watch__changed(&c->tls_watch, &c->cfg.tls)) {
		pr_info("otlp: TLS files changed: a new connection uses them\n");
		c->fresh_connect = true;
	}
	/* after a transport error, do not trust the kept-alive connection */
	curl_easy_setopt(c->curl, CURLOPT_FRESH_CONNECT, c->fresh_connect ? 1L : 0L);
	c->errbuf[0] = '\0';
	rc = curl_easy_perform(c->curl);
	c->fresh_connect = rc != CURLE_OK;
	curl_easy_getinfo(c->curl, CURLINFO_SIZE_UPLOAD_T, &uploaded);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &http);
	curl_easy_getinfo(c->curl, CURLINFO_HTTP_VERSION, &version);
	a->http_status = (int)http;
	a->uploaded = uploaded > 0 ? (uint64_t)uploaded : 0;
	pthread_mutex_lock(&c->lock);
	c->stats.bytes_sent += a->uploaded;
	pthread_mutex_unlock(&c->lock);

	if (a->headers_over || (a->resp_over && (grpc || (http >= 200 && http < 300)))) {
		/* not an answer we can read: failed, not retried (the next request may fare
		 * better); an error status with a long body is judged by its status below
		 */
		snprintf(a->message, sizeof(a->message),
			 "the answer's %s went past %u KiB: not read further",
			 a->headers_over ? "headers" : "body",
			 (a->headers_over ? RESPONSE_HEADERS_MAX_SZ : RESPONSE_MAX_SZ) / 1024);
		goto cleanup;
	}
	if (rc != CURLE_OK && !a->resp_over) {
		a->tls_refused = c->https && otlp_tls__refused(rc, c->errbuf);
		a->retryable = !a->tls_refused && curl__retryable(rc);
		snprintf(a->message, sizeof(a->message), "%s",
			 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
		goto cleanup;
	}
	if (!grpc) {
		if (http >= 200 && http < 300) {
			a->ok = true;
			response__parse(a, a->resp, a->resp_len);
		} else {
			a->retryable = http == 429 || http == 502 || http == 503 || http == 504;
			if (a->retryable)
				a->wait_ms = a->retry_after_ms;
			status__parse(a, a->resp, a->resp_len);
		}
		goto cleanup;
	}
	if (version != CURL_HTTP_VERSION_2_0) {
		snprintf(a->message, sizeof(a->message), "the server does not speak HTTP/2");
		goto cleanup;
	}
	if (a->grpc_status < 0)
		a->grpc_status = http == 200 ? GRPC_UNKNOWN : grpc__status_from_http(http);
	grpc__decode_message(a->grpc_message);
	snprintf(a->message, sizeof(a->message), "%s", a->grpc_message);
	switch (a->grpc_status) {
	case GRPC_OK:
		a->ok = true;
		grpc__parse_response(a);
		break;
	case GRPC_RESOURCE_EXHAUSTED:
		a->wait_ms = grpc__retry_info_ms(a->grpc_details);
		a->retryable = a->wait_ms >= 0;
		a->wait_is_min = true;
		break;
	case GRPC_CANCELLED:
	case GRPC_DEADLINE_EXCEEDED:
	case GRPC_ABORTED:
	case GRPC_OUT_OF_RANGE:
	case GRPC_UNAVAILABLE:
	case GRPC_DATA_LOSS:
		a->retryable = true;
		a->wait_ms = a->grpc_details[0] ? grpc__retry_info_ms(a->grpc_details) : -1;
		a->wait_is_min = true;
		break;
	default:
		break;
	}
cleanup:
	free(a->resp);
	a->resp = NULL;
}

/* Sleeps ms unless stopped or, with probe, until a new request is submitted (a probe of a
 * collector that may be back); true when stopped.
 */
static bool client__sleep(struct otlp_client *c, uint64_t ms, bool probe)
{
	struct timespec ts = timed_wait__deadline(CLOCK_MONOTONIC, ms);
	uint64_t seq0;
	bool stopped;

	pthread_mutex_lock(&c->lock);
	seq0 = c->next_seq;
	while (!atomic_load(&c->stop) && !(probe && c->next_seq != seq0) &&
	       pthread_cond_timedwait(&c->work, &c->lock, &ts) != ETIMEDOUT)
		;
	stopped = atomic_load(&c->stop);
	pthread_mutex_unlock(&c->lock);
	return stopped;
}

enum export_result {
	EXPORT_OK,
	EXPORT_REJECTED,  /* a non-retryable answer or error */
	EXPORT_TLS,       /* the TLS handshake refused: nothing sent */
	EXPORT_EXHAUSTED, /* still retryable at max_elapsed_ms */
	EXPORT_STOPPED,   /* the client is being freed */
};

static uint64_t stats__lost(const struct otlp_client_stats *st)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < OTLP_LOST_REASON_CNT; i++)
		n += st->exports_lost[i];
	return n;
}

static void client__snapshot(struct otlp_client *c, struct otlp_client_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	pthread_mutex_unlock(&c->lock);
}

/* What went wrong in a failed attempt, for the log. */
static void attempt__describe(const struct otlp_client *c, const struct attempt *a, char *out,
			      size_t out_sz)
{
	const char *sep = a->message[0] ? ": " : "";

	if (c->cfg.protocol == OTLP_PROTOCOL_GRPC && a->grpc_status >= 0)
		snprintf(out, out_sz, "grpc-status %d%s%s", a->grpc_status, sep, a->message);
	else if (a->http_status)
		snprintf(out, out_sz, "HTTP %d%s%s", a->http_status, sep, a->message);
	else
		snprintf(out, out_sz, "%s", a->message[0] ? a->message : "no answer");
}

/* The end of the last outage, once the requests that waited through it are delivered. */
static void client__report_recovery(struct otlp_client *c)
{
	pr_info("otlp: collector reachable again after %.1f s, %llu requests delivered late, "
		"%llu lost during the outage\n",
		(double)c->outage_len_ms / 1000.0, (unsigned long long)c->late_cnt,
		(unsigned long long)c->outage_lost);
	c->recovering = false;
}

/* A retryable attempt failed: an outage begins (warned at once) or goes on (warned at most
 * once every OUTAGE_WARN_INTERVAL_MS). Export thread, without c->lock.
 */
static void client__outage_failure(struct otlp_client *c, const struct attempt *a)
{
	struct otlp_client_stats st;
	uint64_t now = now_ms();
	char why[GRPC_MESSAGE_MAX_SZ + 32];

	attempt__describe(c, a, why, sizeof(why));
	if (!c->outage_start_ms) {
		if (c->recovering)
			client__report_recovery(c);
		pthread_mutex_lock(&c->lock);
		c->stats.outages++;
		c->stats.collector_unavailable = true;
		st = c->stats;
		pthread_mutex_unlock(&c->lock);
		c->outage_start_ms = c->outage_warned_ms = now;
		c->outage_lost0 = stats__lost(&st);
		pr_warn("otlp: cannot deliver to %s (%s): retrying every few seconds; %zu more "
			"requests queued, %llu lost so far\n",
			c->url, why, st.queue_cnt, (unsigned long long)c->outage_lost0);
		return;
	}
	if (now - c->outage_warned_ms < OUTAGE_WARN_INTERVAL_MS)
		return;
	c->outage_warned_ms = now;
	client__snapshot(c, &st);
	pr_warn("otlp: collector still unavailable after %llu s (%s): %zu more requests "
		"queued, %llu lost since it went away\n",
		(unsigned long long)((now - c->outage_start_ms) / 1000), why, st.queue_cnt,
		(unsigned long long)(stats__lost(&st) - c->outage_lost0));
}

/* The collector answered (accepted, or a non-retryable answer): an outage going on is over.
 * The requests submitted until now waited through it. Export thread, without c->lock.
 */
static void client__outage_end(struct otlp_client *c)
{
	struct otlp_client_stats st;

	if (!c->outage_start_ms)
		return;
	pthread_mutex_lock(&c->lock);
	c->stats.collector_unavailable = false;
	c->recovery_seq = c->next_seq;
	st = c->stats;
	pthread_mutex_unlock(&c->lock);
	c->outage_len_ms = now_ms() - c->outage_start_ms;
	c->outage_lost = stats__lost(&st) - c->outage_lost0;
	c->outage_start_ms = 0;
	c->recovering = true;
	c->late_cnt = 0;
}

/* Sends r with retries; the outcome decides the counter. */
static enum export_result client__export(struct otlp_client *c, const struct export_req *r)
{
	uint64_t start = now_ms(), backoff = c->cfg.initial_backoff_ms, wait;
	char why[GRPC_MESSAGE_MAX_SZ + 32];
	struct attempt a;

	for (;;) {
		client__attempt(c, r, &a);
		pthread_mutex_lock(&c->lock);
		c->stats.last_http_status = a.http_status;
		if (c->cfg.protocol == OTLP_PROTOCOL_GRPC)
			c->stats.last_grpc_status = a.grpc_status;
		if (a.ok) {
			c->stats.bytes_delivered += a.uploaded;
			if (a.partial) {
				c->stats.exports_partial++;
				c->stats.rejected_profiles += a.rejected > 0 ? (uint64_t)a.rejected
									     : 0;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (a.ok || (!a.retryable && a.http_status))
			client__outage_end(c);
		if (a.ok) {
			if (a.partial && (a.rejected || a.message[0]))
				pr_warn("otlp: partial success: %ld profiles rejected: %s\n",
					a.rejected, a.message);
			return EXPORT_OK;
		}
		if (atomic_load(&c->stop))
			return EXPORT_STOPPED;
		if (!a.retryable)
			break;
		client__outage_failure(c, &a);
		/* jitter x0.5 .. x1.5 of the backoff, capped */
		wait = backoff / 2 + client__rand(c) % (backoff + 1);
		if (wait > c->cfg.max_backoff_ms)
			wait = c->cfg.max_backoff_ms;
		if (a.wait_ms >= 0)
			wait = a.wait_is_min && wait > (uint64_t)a.wait_ms ? wait
									   : (uint64_t)a.wait_ms;
		if (now_ms() + wait - start > c->cfg.max_elapsed_ms) {
			/* the outage's own lines say how many are lost */
			pr_debug("otlp: a request given up after %llu s of retries\n",
				 (unsigned long long)((now_ms() - start) / 1000));
			return EXPORT_EXHAUSTED;
		}
		pr_debug("otlp: export attempt failed (HTTP %d, grpc %d: %s), retry in %llu ms\n",
			 a.http_status, a.grpc_status, a.message, (unsigned long long)wait);
		/* our own backoff (not a wait the server asked for) ends at a new request */
		if (client__sleep(c, wait, a.wait_ms < 0))
			return EXPORT_STOPPED;
		pthread_mutex_lock(&c->lock);
		c->stats.exports_retried++;
		pthread_mutex_unlock(&c->lock);
		backoff = backoff * 2 > c->cfg.max_backoff_ms ? c->cfg.max_backoff_ms : backoff * 2;
	}
	/* one warning when exports start being rejected; the counters tell the rest */
	if (a.tls_refused) {
		if (!c->failing)
			pr_warn("otlp: TLS with %s refused: %s: nothing sent (check --otlp-ca, "
				"--otlp-cert, --otlp-key, --otlp-server-name)\n",
				c->url, a.message);
		c->failing = true;
		return EXPORT_TLS;
	}
	if (!c->failing) {
		attempt__describe(c, &a, why, sizeof(why));
		pr_warn("otlp: export failed (%s): not retried\n", why);
	}
	c->failing = true;
	return EXPORT_REJECTED;
}

static void *client__thread(void *arg)
{
	struct otlp_client *c = arg;
	struct export_req *r;
	enum export_result res;
	bool late, backlog_done;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->head && !atomic_load(&c->stop))
			pthread_cond_wait(&c->work, &c->lock);
		if (atomic_load(&c->stop))
			break;
		r = queue__pop(c);
		c->in_flight = true;
		pthread_mutex_unlock(&c->lock);

		res = client__export(c, r);
		late = c->recovering && r->seq < c->recovery_seq;
		export_req__free(r);
		if (res == EXPORT_OK && c->failing) {
			pr_info("otlp: exports succeed again\n");
			c->failing = false;
		}
		if (res == EXPORT_OK && late)
			c->late_cnt++;

		pthread_mutex_lock(&c->lock);
		switch (res) {
		case EXPORT_OK:
			c->stats.exports_ok++;
			c->stats.delivered_late += late ? 1 : 0;
			break;
		case EXPORT_REJECTED:
		case EXPORT_EXHAUSTED:
		case EXPORT_TLS:
			c->stats.exports_failed++;
			c->stats.exports_lost[res == EXPORT_REJECTED ? OTLP_LOST_REJECTED
					      : res == EXPORT_TLS    ? OTLP_LOST_TLS
								  : OTLP_LOST_RETRIES_EXHAUSTED]++;
			break;
		case EXPORT_STOPPED:
			c->stats.exports_dropped++;
			c->stats.exports_lost[OTLP_LOST_SHUTDOWN]++;
			break;
		}
		/* the backlog is sent when what is left was submitted after the recovery */
		backlog_done = c->recovering && (!c->head || c->head->seq >= c->recovery_seq);
		if (backlog_done) {
			pthread_mutex_unlock(&c->lock);
			client__report_recovery(c);
			pthread_mutex_lock(&c->lock);
		}
		c->in_flight = false;
		pthread_cond_broadcast(&c->idle);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int client__setup_curl(struct otlp_client *c)
{
	bool grpc = c->cfg.protocol == OTLP_PROTOCOL_GRPC;
	struct curl_slist *l = NULL, *tmp;
	char line[8192];
	size_t i;
	int n;

	c->curl = curl_easy_init();
	if (!c->curl)
		return -ENOMEM;
	if (grpc) {
		l = curl_slist_append(l, "Content-Type: application/grpc");
		l = l ? curl_slist_append(l, "TE: trailers") : NULL;
		if (c->cfg.gzip)
			l = l ? curl_slist_append(l, "grpc-encoding: gzip") : NULL;
		l = l ? curl_slist_append(l, "grpc-accept-encoding: identity,gzip") : NULL;
	} else {
		l = curl_slist_append(l, "Content-Type: application/x-protobuf");
		if (c->cfg.gzip)
			l = l ? curl_slist_append(l, "Content-Encoding: gzip") : NULL;
	}
	l = l ? curl_slist_append(l, "Expect:") : NULL; /* no 100-continue round trip */
	for (i = 0; l && i < c->cfg.header_cnt; i++) {
		n = snprintf(line, sizeof(line), "%s: %s", c->cfg.headers[i].name,
			     c->cfg.headers[i].value);
		if (n < 0 || (size_t)n >= sizeof(line)) {
			curl_slist_free_all(l);
			return -EINVAL;
		}
		tmp = curl_slist_append(l, line);
		if (!tmp) {
			curl_slist_free_all(l);
			l = NULL;
		}
		l = tmp;
	}
	if (!l)
		return -ENOMEM;
	c->curl_headers = l;
	curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->curl_headers);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "stackscope-otlp");
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, curl__write);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, curl__header);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, curl__progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->errbuf);
	if (c->https) {
		char *named = NULL;

		if (otlp_tls__apply(c->curl, &c->cfg.tls, c->url, &named, &c->connect_to))
			return -ENOMEM;
		if (named) {
			free(c->url);
			c->url = named;
			curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
		}
		otlp_tls_watch__changed(&c->tls_watch, &c->cfg.tls);
	}
	if (!grpc) {
		/* the response may come gzipped; curl inflates it */
		curl_easy_setopt(c->curl, CURLOPT_ACCEPT_ENCODING, "");
		curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION,
				 (long)(strncmp(c->url, "https:", 6) ? CURL_HTTP_VERSION_1_1
								     : CURL_HTTP_VERSION_2TLS));
	} else if (strncmp(c->url, "https:", 6)) {
		curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION,
				 (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
		/* libcurl before 8.0 breaks a reused prior-knowledge HTTP/2 connection ("Error
		 * in the HTTP2 framing layer", curl issue 10634, Debian 12 ships 7.88): one
		 * connection per export, a handshake every interval.
		 */
		if (curl_version_info(CURLVERSION_NOW)->version_num < 0x080000)
			curl_easy_setopt(c->curl, CURLOPT_FORBID_REUSE, 1L);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	}
	return 0;
}

static int config__copy(struct otlp_config *dst, const struct otlp_config *src)
{
	size_t i;

	*dst = *src;
	dst->endpoint = NULL;
	memset(&dst->tls, 0, sizeof(dst->tls));
	dst->headers = NULL;
	dst->header_cnt = 0;
	dst->resource_attrs = NULL; /* the client does not need them */
	dst->resource_attr_cnt = 0;
	dst->endpoint = strdup(src->endpoint);
	if (!dst->endpoint)
		return -ENOMEM;
	if (otlp_tls__copy(&dst->tls, &src->tls))
		return -ENOMEM;
	if (src->header_cnt) {
		dst->headers = calloc(src->header_cnt, sizeof(*dst->headers));
		if (!dst->headers)
			return -ENOMEM;
	}
	for (i = 0; i < src->header_cnt; i++) {
		dst->headers[i].name = strdup(src->headers[i].name);
		dst->headers[i].value = strdup(src->headers[i].value);
		dst->header_cnt++;
		if (!dst->headers[i].name || !dst->headers[i].value)
			return -ENOMEM;
	}
	if (!dst->queue_max_cnt)
		dst->queue_max_cnt = 1;
	if (!dst->initial_backoff_ms)
		dst->initial_backoff_ms = 1;
	if (dst->max_backoff_ms < dst->initial_backoff_ms)
		dst->max_backoff_ms = dst->initial_backoff_ms;
	return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl__global_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct otlp_client *otlp_client__new(const struct otlp_config *cfg)
{
	struct otlp_client *c = NULL;
	int err;

	if (!cfg || !cfg->endpoint) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&curl_once, curl__global_init);
	if (curl_init_rc != CURLE_OK) {
		errno = ENOMEM;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	timed_wait__init_cond(&c->work);
	timed_wait__init_cond(&c->idle);
	c->stats.last_grpc_status = -1;
	c->rng = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)c;
	if (!c->rng)
		c->rng = 1;
	err = config__copy(&c->cfg, cfg);
	if (err)
		goto fail;
	c->url = otlp_config__url(&c->cfg);
	if (!c->url) {
		err = -errno;
		goto fail;
	}
	c->https = !strncmp(c->url, "https://", 8);
	err = client__setup_curl(c);
	if (err)
		goto fail;
	err = -pthread_create(&c->thread, NULL, client__thread, c);
	if (err)
		goto fail;
	c->thread_started = true;
	return c;
fail:
	otlp_client__free(c);
	errno = -err;
	return NULL;
}

int otlp_client__flush(struct otlp_client *c, unsigned timeout_ms)
{
	struct timespec ts = timed_wait__deadline(CLOCK_MONOTONIC, timeout_ms);
	int err = 0;

	pthread_mutex_lock(&c->lock);
	while (c->head || c->in_flight) {
		if (pthread_cond_timedwait(&c->idle, &c->lock, &ts) == ETIMEDOUT) {
			err = (c->head || c->in_flight) ? -ETIMEDOUT : 0;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

void otlp_client__stats(struct otlp_client *c, struct otlp_client_stats *out)
{
	client__snapshot(c, out);
}

const char *otlp_lost_reason__name(enum otlp_lost_reason r)
{
	static const char *const names[OTLP_LOST_REASON_CNT] = {
		[OTLP_LOST_REJECTED] = "rejected",
		[OTLP_LOST_RETRIES_EXHAUSTED] = "retries_exhausted",
		[OTLP_LOST_QUEUE_FULL] = "queue_full",
		[OTLP_LOST_TOO_LARGE] = "too_large",
		[OTLP_LOST_SHUTDOWN] = "shutdown",
		[OTLP_LOST_TLS] = "tls",
	};

	return (unsigned)r < OTLP_LOST_REASON_CNT ? names[r] : "?";
}

void otlp_client__free(struct otlp_client *c)
{
	struct export_req *r;

	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		atomic_store(&c->stop, true);
		pthread_cond_broadcast(&c->work);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	while ((r = c->head)) {
		c->head = r->next;
		c->stats.exports_dropped++;
		c->stats.exports_lost[OTLP_LOST_SHUTDOWN]++;
		export_req__free(r);
	}
	if (c->recovering)
		client__report_recovery(c);
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->curl_headers);
	curl_slist_free_all(c->connect_to);
	free(c->url);
	otlp_config__free(&c->cfg);
	pthread_cond_destroy(&c->work);
	pthread_cond_destroy(&c->idle);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
