/* Prometheus /metrics endpoint: a handler on base/http_server.c, which owns the thread, the
 * connections and their limits. See metrics_server.h for the limits and why it has a thread
 * of its own.
 *
 * The snapshot (text, len, its time and count) and the answer counters are the only state
 * shared with callers (m->lock); the handler copies the text into the answer under the lock,
 * so publish() waits for at most one copy, never for a client. With a max_age_ms, a scrape of
 * an older text raises `wanted` (read without the lock by the owner's loop) and waits on
 * m->published, outside the lock, for the next publish or fresh_wait_ms.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/http_server.h"
#include "base/timed_wait.h"
#include "cli/metrics_server.h"

#define REQUEST_TIMEOUT_MS_DEFAULT 3000
#define RESPONSE_TIMEOUT_MS_DEFAULT 5000
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4"

struct metrics_server {
	struct http_server *http;
	pthread_mutex_t lock;     /* text, len, published_ns, publish_cnt, served, rejected */
	pthread_cond_t published; /* CLOCK_MONOTONIC: a publish came */
	char *text;
	size_t len;
	uint64_t published_ns; /* CLOCK_MONOTONIC of the text's publish */
	uint64_t publish_cnt;
	uint64_t served;                    /* 200 answers */
	uint64_t rejected;                  /* the handler's 404s */
	uint64_t max_age_ns, fresh_wait_ns; /* 0: text served as it is */
	bool wanted;                        /* a scrape waits for a publish (atomic) */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Under m->lock: a text older than max_age_ns is asked for anew and waited for, at most
 * fresh_wait_ns. Whatever text there is afterwards is served.
 */
static void wait_fresh(struct metrics_server *m)
{
	uint64_t now = mono_ns(), end, seen = m->publish_cnt;
	struct timespec ts;

	if (!m->max_age_ns || !m->text || now - m->published_ns <= m->max_age_ns)
		return;
	__atomic_store_n(&m->wanted, true, __ATOMIC_RELEASE);
	end = now + m->fresh_wait_ns;
	ts.tv_sec = (time_t)(end / 1000000000ull);
	ts.tv_nsec = (long)(end % 1000000000ull);
	while (m->publish_cnt == seen)
		if (pthread_cond_timedwait(&m->published, &m->lock, &ts) == ETIMEDOUT)
			break;
}

/* Runs on the server thread: GET /metrics (any query) gets the published text. */
static void metrics__handle(void *ctx, const struct http_request *req, struct http_response *resp)
{
	struct metrics_server *m = ctx;

	pthread_mutex_lock(&m->lock);
	if (!strcmp(req->path, "/metrics"))
		wait_fresh(m);
	if (strcmp(req->path, "/metrics")) {
		resp->status = 404;
		m->rejected++;
	} else if (!m->text) {
		resp->status = 503; /* nothing published yet: not ready, rather than no metrics */
	} else {
		resp->body = malloc(m->len ?: 1);
		if (resp->body) {
			memcpy(resp->body, m->text, m->len);
			resp->body_len = m->len;
			resp->content_type = METRICS_CONTENT_TYPE;
			resp->status = 200;
			m->served++;
		} else {
			resp->status = 503;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

struct metrics_server *metrics_server__start(const char *addr,
					     const struct metrics_server_opts *opts)
{
	struct http_server_opts ho = {
		.methods = HTTP_METHOD_GET,
		.head_max = METRICS_REQUEST_MAX_SZ,
		.request_timeout_ms = REQUEST_TIMEOUT_MS_DEFAULT,
		.response_timeout_ms = RESPONSE_TIMEOUT_MS_DEFAULT,
	};
	struct metrics_server *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	timed_wait__init_cond(&m->published);
	if (opts) {
		m->max_age_ns = (uint64_t)opts->max_age_ms * 1000000ull;
		m->fresh_wait_ns = (uint64_t)opts->fresh_wait_ms * 1000000ull;
		if (!opts->fresh_wait_ms)
			m->max_age_ns = 0;
		ho.conn_max = opts->conn_max;
		ho.spare_timeout_ms = opts->spare_timeout_ms;
		ho.hosts = opts->hosts;
		if (opts->request_timeout_ms)
			ho.request_timeout_ms = opts->request_timeout_ms;
		if (opts->response_timeout_ms)
			ho.response_timeout_ms = opts->response_timeout_ms;
	}
	m->http = http_server__start(addr, &ho, metrics__handle, m);
	if (!m->http) {
		err = errno;
		metrics_server__stop(m);
		errno = err;
		return NULL;
	}
	return m;
}

uint16_t metrics_server__port(const struct metrics_server *m)
{
	return http_server__port(m->http);
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
	m->published_ns = mono_ns();
	m->publish_cnt++;
	__atomic_store_n(&m->wanted, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&m->published);
	pthread_mutex_unlock(&m->lock);
	free(old);
}

bool metrics_server__wanted(struct metrics_server *m)
{
	return __atomic_load_n(&m->wanted, __ATOMIC_ACQUIRE);
}

void metrics_server__stats(struct metrics_server *m, struct metrics_server_stats *out)
{
	struct http_server_stats hs;

	http_server__stats(m->http, &hs);
	pthread_mutex_lock(&m->lock);
	*out = (struct metrics_server_stats){
		.served = m->served,
		.rejected = hs.rejected + m->rejected,
		.refused = hs.refused,
		.timed_out = hs.timed_out,
		.evicted = hs.evicted,
		.forbidden = hs.forbidden,
		.open = hs.open,
	};
	pthread_mutex_unlock(&m->lock);
}

void metrics_server__stop(struct metrics_server *m)
{
	if (!m)
		return;
	http_server__stop(m->http); /* no handler call after this */
	pthread_cond_destroy(&m->published);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}
