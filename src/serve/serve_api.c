/* The UI's routes: the embedded files and /api/... (JSON, documented in docs/API.md). Query
 * strings are decoded strictly: an unknown or repeated parameter, a bad number or time, a
 * broken percent escape is a 400 with {"error": "..."}, so a script learns of its mistake
 * instead of getting a silently unfiltered answer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/hex.h"
#include "base/http_server.h"
#include "export/pprof.h"
#include "export/process_context_pb.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "profile/runtime_fold.h"
#include "profile/trace_label.h"
#include "serve/flame_tree.h"
#include "serve/json_out.h"
#include "serve/label_values.h"
#include "serve/serve_api.h"
#include "serve/source_view.h"
#include "serve/trace_list.h"
#include "serve/ui_assets.h"
#include "serve/upload.h"
#include "store/store.h"

#define PARAM_MAX 32
#define TOP_LIMIT_DEFAULT 200
#define TOP_LIMIT_MAX 100000
#define LIST_MAX 2000 /* entries of one filter list */

/* A merged range kept for the next requests (the page asks for a range's graph, then its
 * filters; a diff needs two): valid while the filter and the store's intervals are the same.
 */
#define CACHE_CNT 2

struct cached_range {
	char key[1024]; /* the filter and the store's state; "" = empty slot */
	struct profile *p;
	uint64_t used;
};

struct serve_api {
	char *store_path;
	struct store *st;
	struct cached_range cache[CACHE_CNT];
	uint64_t clock;
	char *trace_url; /* the trace links' template (serve/trace_list.h), or NULL */
};

struct param {
	const char *key, *value;
	bool used;
};

/* One request's decoded parameters (strings in buf). */
struct params {
	char *buf;
	struct param p[PARAM_MAX];
	size_t cnt;
};

/* What a data request asks for: one side's store filter (a diff has two), a frame type. */
struct ask {
	struct store_filter f[2];
	const char *type;
	uint64_t min;
	size_t limit;
	size_t a_len; /* POST /api/diff: bytes of the first file */
	bool fold;    /* fold=runtime: the runtime fold (profile/runtime_fold.h) */
	char trace_label[TRACE_LABEL_FILTER_SZ]; /* trace=ID: the label filter of both sides */
};

struct serve_api *serve_api__new(const char *store_path)
{
	struct serve_api *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->store_path = strdup(store_path);
	if (!a->store_path) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void serve_api__free(struct serve_api *a)
{
	size_t i;

	if (!a)
		return;
	store__close(a->st);
	for (i = 0; i < CACHE_CNT; i++)
		profile__free(a->cache[i].p);
	free(a->store_path);
	free(a->trace_url);
	free(a);
}

int serve_api__set_trace_url(struct serve_api *a, const char *tmpl)
{
	char *copy = NULL;

	if (tmpl && !(copy = strdup(tmpl)))
		return -ENOMEM;
	free(a->trace_url);
	a->trace_url = copy;
	return 0;
}

/* ---- answers ---- */

static void answer_error(struct http_response *r, int status, const char *fmt, const char *arg)
{
	struct json_out j;
	char text[512];

	snprintf(text, sizeof(text), fmt, arg ? arg : "");
	json_out__init(&j, 4096);
	json_out__raw(&j, "{\"error\":");
	json_out__str(&j, text);
	json_out__raw(&j, "}\n");
	r->status = status;
	r->content_type = "application/json";
	r->body = json_out__take(&j, &r->body_len);
}

static void answer_json(struct http_response *r, struct json_out *j)
{
	int err = json_out__err(j);

	if (err) {
		json_out__free(j);
		answer_error(r, err == -EMSGSIZE ? 413 : 503, "%s",
			     err == -EMSGSIZE ? "the answer is too large: narrow the range or "
						"raise min"
					      : "out of memory");
		return;
	}
	json_out__raw(j, "\n");
	r->status = 200;
	r->content_type = "application/json";
	r->body = json_out__take(j, &r->body_len);
	if (!r->body)
		answer_error(r, 503, "%s", "out of memory");
}

/* A query's error as an answer. */
static void answer_errno(struct http_response *r, int err)
{
	switch (err) {
	case -EBADMSG:
		answer_error(r, 500, "%s", "the store is corrupt");
		break;
	case -E2BIG:
		answer_error(r, 413, "%s", "too many distinct stacks: narrow the range or filters");
		break;
	case -ENOMEM:
		answer_error(r, 503, "%s", "out of memory");
		break;
	default:
		answer_error(r, 500, "store error: %s", strerror(-err));
	}
}

/* ---- parameters ---- */

/* Decodes s in place (percent escapes, '+' as space); false for a bad escape or a NUL. */
static bool url_decode(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s == '+') {
			*out++ = ' ';
		} else if (*s == '%') {
			int hi = hex_digit(s[1]), lo = hi < 0 ? -1 : hex_digit(s[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return false;
			*out++ = (char)(hi << 4 | lo);
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
	return true;
}

/* Splits and decodes query into ps; a message in *why on error (-EINVAL). */
static int params__parse(struct params *ps, const char *query, const char **why)
{
	char *save = NULL, *item;
	size_t i;

	ps->buf = strdup(query);
	if (!ps->buf) {
		*why = "out of memory";
		return -ENOMEM;
	}
	for (item = strtok_r(ps->buf, "&", &save); item; item = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(item, '=');

		if (ps->cnt == PARAM_MAX) {
			*why = "too many parameters";
			return -EINVAL;
		}
		if (eq)
			*eq = '\0';
		if (!url_decode(item) || (eq && !url_decode(eq + 1))) {
			*why = "bad percent escape";
			return -EINVAL;
		}
		for (i = 0; i < ps->cnt; i++)
			if (!strcmp(ps->p[i].key, item)) {
				*why = "repeated parameter";
				return -EINVAL;
			}
		ps->p[ps->cnt++] = (struct param){ .key = item, .value = eq ? eq + 1 : "" };
	}
	return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || s[0] == '+' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Fills *ask from the parameters (sides: 1, or 2 for a diff where "a_X" and "b_X" apply to
 * one side and "X" to both). Unknown names are errors. 0 or -EINVAL with *bad the name.
 */
static int ask__parse(struct ask *ask, struct params *ps, unsigned sides, const char **bad)
{
	size_t i;

	*ask = (struct ask){ .limit = TOP_LIMIT_DEFAULT };
	for (i = 0; i < ps->cnt; i++) {
		struct param *p = &ps->p[i];
		const char *name = p->key;
		unsigned side, first = 0, last = sides - 1;
		uint64_t v;

		*bad = p->key;
		if (!strcmp(name, "type")) {
			if (!*p->value)
				return -EINVAL;
			ask->type = p->value;
			continue;
		}
		if (!strcmp(name, "fold")) {
			if (runtime_fold__parse(p->value, &ask->fold))
				return -EINVAL;
			continue;
		}
		if (!strcmp(name, "trace")) { /* one trace: its label trace_id, both sides */
			if (!trace_label__filter(p->value, ask->trace_label))
				return -EINVAL;
			continue;
		}
		if (!strcmp(name, "min") || !strcmp(name, "limit") || !strcmp(name, "a_len")) {
			if (parse_u64(p->value, name[0] == 'l' ? TOP_LIMIT_MAX : UINT32_MAX, &v))
				return -EINVAL;
			if (name[0] == 'm')
				ask->min = v;
			else if (name[0] == 'l')
				ask->limit = (size_t)v;
			else
				ask->a_len = (size_t)v;
			continue;
		}
		if (sides == 2 && (name[0] == 'a' || name[0] == 'b') && name[1] == '_') {
			first = last = name[0] == 'b';
			name += 2;
		}
		for (side = first; side <= last; side++) {
			int r = store_filter__parse(&ask->f[side], name, p->value);

			if (r <= 0)
				return -EINVAL;
			/* the store keeps times as SQLite integers (int64): a bound past them
			 * would wrap to a negative one and filter nothing
			 */
			if (ask->f[side].from_ns > INT64_MAX || ask->f[side].to_ns > INT64_MAX)
				return -EINVAL;
		}
	}
	for (size_t side = 0; ask->trace_label[0] && side < sides; side++) {
		*bad = "trace";
		if (ask->f[side].label) /* one label filter: trace and label exclude each other */
			return -EINVAL;
		ask->f[side].label = ask->trace_label;
	}
	return 0;
}

/* ---- the store ---- */

/* The open store, opened now if need be; NULL with the answer already set. */
static struct store *api_store(struct serve_api *a, struct http_response *r)
{
	struct store_opts so = { .path = a->store_path, .read_only = true };
	char why[512];

	if (a->st)
		return a->st;
	a->st = store__open(&so, why, sizeof(why));
	if (!a->st)
		answer_error(r, errno == ENOENT ? 503 : 500, "cannot open the store: %s", why);
	return a->st;
}

/* After a failed query: the next request opens the file again (it may have been replaced). */
static void api_store_reset(struct serve_api *a)
{
	size_t i;

	store__close(a->st);
	a->st = NULL;
	for (i = 0; i < CACHE_CNT; i++) {
		profile__free(a->cache[i].p);
		a->cache[i] = (struct cached_range){ 0 };
	}
}

/* The key of a filter over the store as it is now: every field of the filter (a field left
 * out answers one query with another's profile: a pid's CPU tree for its inuse_space) and the
 * intervals' count, last id and last end (a write or a retention drop changes them). 0 or -errno.
 */
static int range_key(struct store *st, const struct store_filter *f, char *key, size_t sz)
{
	struct store_state ss;
	int err = store__state(st, &ss), n;

	if (err)
		return err;
	n = snprintf(key, sz, "%llu|%llu|%u|%u|%s|%s|%s|%s|%s|%s|%s|%llu|%lld|%llu",
		     (unsigned long long)f->from_ns, (unsigned long long)f->to_ns, f->pid, f->tid,
		     f->comm ?: "\x01", f->thread ?: "\x01", f->exe ?: "\x01",
		     f->container ?: "\x01", f->label ?: "\x01", f->service ?: "\x01",
		     f->sample_type ?: "\x01", (unsigned long long)ss.interval_cnt,
		     (long long)ss.last_id, (unsigned long long)ss.last_end_ns);
	return n > 0 && (size_t)n < sz ? 0 : -E2BIG;
}

/* The merged profile of a filter, borrowed from the cache (valid until the next query()); on
 * error, the answer is set and NULL returned.
 */
static struct profile *query(struct serve_api *a, const struct store_filter *f,
			     struct http_response *r)
{
	struct store *st = api_store(a, r);
	struct cached_range *slot = NULL;
	char key[sizeof(a->cache[0].key)];
	struct profile *p = NULL;
	size_t i;
	int err;

	if (!st)
		return NULL;
	err = range_key(st, f, key, sizeof(key));
	if (!err) {
		for (i = 0; i < CACHE_CNT; i++) {
			if (!strcmp(a->cache[i].key, key)) {
				a->cache[i].used = ++a->clock;
				return a->cache[i].p;
			}
			if (!slot || a->cache[i].used < slot->used)
				slot = &a->cache[i];
		}
	}
	err = err == -E2BIG ? 0 : err; /* a key too long: not cached */
	err = err ?: store__query(st, f, &p);
	if (err) {
		answer_errno(r, err);
		api_store_reset(a);
		return NULL;
	}
	if (!slot) { /* uncacheable: kept in the oldest slot, under no key */
		slot = &a->cache[0];
		for (i = 1; i < CACHE_CNT; i++)
			if (a->cache[i].used < slot->used)
				slot = &a->cache[i];
		key[0] = '\0';
	}
	profile__free(slot->p);
	slot->p = p;
	snprintf(slot->key, sizeof(slot->key), "%s", key);
	slot->used = ++a->clock;
	return p;
}

/* ---- routes ---- */

static int emit_interval(void *ctx, const struct store_interval *iv)
{
	struct json_out *j = ctx;

	json_out__raw(j, j->data[j->len - 1] == '[' ? "{\"id\":" : ",{\"id\":");
	json_out__u64(j, (uint64_t)iv->id);
	json_out__raw_u64(j, ",\"start\":", iv->start_ns);
	json_out__raw_u64(j, ",\"end\":", iv->end_ns);
	json_out__raw_u64(j, ",\"samples\":", iv->total);
	json_out__raw(j, "}");
	return json_out__err(j) != 0;
}

static void route_intervals(struct serve_api *a, const struct ask *ask, struct http_response *r)
{
	struct store *st = api_store(a, r);
	struct json_out j;
	int err;

	if (!st)
		return;
	json_out__init(&j, SERVE_JSON_MAX);
	json_out__raw(&j, "{\"intervals\":[");
	err = store__intervals(st, ask->f[0].from_ns, ask->f[0].to_ns, emit_interval, &j);
	json_out__raw(&j, "]}");
	if (err && !json_out__err(&j)) {
		json_out__free(&j);
		api_store_reset(a);
		answer_errno(r, err);
		return;
	}
	answer_json(r, &j);
}

static void window_json(const struct profile *p, struct json_out *j)
{
	json_out__raw_u64(j, "\"from\":", profile__start_time_ns(p));
	json_out__raw_u64(j, ",\"to\":", profile__end_time_ns(p));
	json_out__raw_u64(j, ",\"period_ns\":", profile__period_ns(p));
}

/* flamegraph (top false) or top functions (top true) of one range, or of a diff. */
static void route_tree(struct serve_api *a, const struct ask *ask, struct profile *given[2],
		       unsigned sides, bool top, struct http_response *r)
{
	struct profile *p[2] = { 0 };
	struct flame_tree *t = flame_tree__new();
	struct json_out j;
	unsigned s;
	int err = 0;

	json_out__init(&j, SERVE_JSON_MAX);
	if (!t) {
		answer_errno(r, -ENOMEM);
		goto out;
	}
	if (given)
		flame_tree__set_max_nodes(t, UPLOAD_NODES_MAX);
	for (s = 0; s < sides; s++) {
		p[s] = given ? given[s] : query(a, &ask->f[s], r);
		if (!p[s])
			goto out;
		if (ask->fold) {
			struct profile *folded = runtime_fold__copy(p[s]);

			err = folded ? flame_tree__add(t, folded, s, ask->type) : -ENOMEM;
			profile__free(folded);
		} else {
			err = flame_tree__add(t, p[s], s, ask->type);
		}
		if (err) {
			answer_errno(r, err);
			goto out;
		}
	}
	json_out__raw(&j, "{");
	window_json(p[0], &j);
	if (sides > 1) {
		json_out__raw(&j, ",\"total\":");
		json_out__u64(&j, flame_tree__total(t, 0));
		json_out__raw(&j, ",\"total2\":");
		json_out__u64(&j, flame_tree__total(t, 1));
	} else {
		json_out__raw(&j, ",\"total\":");
		json_out__u64(&j, flame_tree__total(t, 0));
	}
	json_out__raw(&j, ",");
	if (top)
		err = flame_tree__top_json(t, sides, ask->limit, &j);
	else
		flame_tree__json(t, sides, ask->min, &j);
	json_out__raw(&j, "}");
	if (err)
		answer_errno(r, err);
	else
		answer_json(r, &j);
out:
	json_out__free(&j);
	flame_tree__free(t);
}

struct thread_row {
	uint32_t tid;
	const char *name; /* interned by the profile */
	uint64_t samples;
};

static int by_thread(const void *a, const void *b)
{
	const struct thread_row *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->name == y->name ? 0 : x->name < y->name ? -1 : 1;
}

static int by_samples(const void *a, const void *b)
{
	const struct thread_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

struct process_list {
	struct json_out *j;
	size_t cnt;
	/* containers seen, for their own list */
	char *containers[64];
	uint64_t container_samples[64];
	size_t container_cnt;
};

static int emit_process(void *ctx, const struct store_process_row *row)
{
	struct process_list *pl = ctx;
	struct json_out *j = pl->j;
	size_t i;

	if (row->container && *row->container) {
		for (i = 0; i < pl->container_cnt; i++)
			if (!strcmp(pl->containers[i], row->container))
				break;
		if (i == pl->container_cnt && i < 64) {
			pl->containers[i] = strdup(row->container);
			if (pl->containers[i])
				pl->container_cnt++;
		}
		if (i < pl->container_cnt)
			pl->container_samples[i] += row->samples;
	}
	if (pl->cnt >= LIST_MAX)
		return 0;
	json_out__raw(j, pl->cnt++ ? ",{\"pid\":" : "{\"pid\":");
	json_out__u64(j, row->pid);
	json_out__raw(j, ",\"comm\":");
	json_out__str(j, row->comm);
	json_out__raw(j, ",\"exe\":");
	json_out__str(j, row->exe && *row->exe ? row->exe : NULL);
	json_out__raw(j, ",\"container\":");
	json_out__str(j, row->container && *row->container ? row->container : NULL);
	json_out__raw_u64(j, ",\"samples\":", row->samples);
	json_out__raw(j, "}");
	return json_out__err(j) != 0;
}

/* Processes (with executable and container), containers, threads and frame types of a
 * range: what the UI's filter menus offer.
 */
struct sample_type_list {
	struct json_out *j;
	size_t n;
};

static int emit_sample_type(void *ctx, const char *type, const char *unit)
{
	struct sample_type_list *l = ctx;

	json_out__raw(l->j, l->n++ ? ",{\"type\":" : "{\"type\":");
	json_out__str(l->j, type && !strcmp(type, "samples") ? "cpu" : type);
	json_out__raw(l->j, ",\"unit\":");
	json_out__str(l->j, unit);
	json_out__raw(l->j, "}");
	return 0;
}

/* The sample types the range has rows of (the UI's sample-type menu): "cpu" for the store's
 * "samples", then off_cpu and the memory types (what sample_type= takes). 0 or -errno.
 */
static int sample_types_json(struct store *st, const struct store_filter *range, struct json_out *j)
{
	struct sample_type_list l = { .j = j };

	return store__sample_types(st, range->from_ns, range->to_ns, emit_sample_type, &l);
}

static void route_filters(struct serve_api *a, const struct ask *ask, struct http_response *r)
{
	struct store_filter range = { .from_ns = ask->f[0].from_ns, .to_ns = ask->f[0].to_ns };
	struct process_list pl = { 0 };
	struct thread_row *rows = NULL;
	struct flame_tree *t = NULL;
	struct profile *p = NULL;
	struct json_out j;
	size_t i, n, cnt = 0;
	int err;

	json_out__init(&j, SERVE_JSON_MAX);
	pl.j = &j;
	if (!api_store(a, r))
		goto out;
	json_out__raw(&j, "{\"processes\":[");
	err = store__processes(a->st, range.from_ns, range.to_ns, emit_process, &pl);
	if (err) {
		api_store_reset(a);
		answer_errno(r, err);
		goto out;
	}
	json_out__raw(&j, "],\"containers\":[");
	for (i = 0; i < pl.container_cnt; i++) {
		json_out__raw(&j, i ? ",{\"container\":" : "{\"container\":");
		json_out__str(&j, pl.containers[i]);
		json_out__raw(&j, ",\"samples\":");
		json_out__u64(&j, pl.container_samples[i]);
		json_out__raw(&j, "}");
	}
	json_out__raw(&j, "],\"threads\":[");
	p = query(a, &range, r);
	if (!p)
		goto out;
	n = profile__sample_cnt(p);
	rows = calloc(n ? n : 1, sizeof(*rows));
	t = flame_tree__new();
	if (!rows || !t || (err = flame_tree__add(t, p, 0, NULL))) {
		answer_errno(r, rows && t ? err : -ENOMEM);
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);

		if (s->off_cpu_ns)
			continue;
		rows[cnt++] = (struct thread_row){ s->tid, s->thread_comm, s->count };
	}
	qsort(rows, cnt, sizeof(*rows), by_thread);
	for (i = 0, n = 0; i < cnt; i++) { /* add up the rows of one thread */
		if (n && rows[n - 1].tid == rows[i].tid && rows[n - 1].name == rows[i].name)
			rows[n - 1].samples += rows[i].samples;
		else
			rows[n++] = rows[i];
	}
	qsort(rows, n, sizeof(*rows), by_samples);
	for (i = 0; i < n && i < LIST_MAX; i++) {
		json_out__raw(&j, i ? ",{\"tid\":" : "{\"tid\":");
		json_out__u64(&j, rows[i].tid);
		json_out__raw(&j, ",\"name\":");
		json_out__str(&j, rows[i].name);
		json_out__raw(&j, ",\"samples\":");
		json_out__u64(&j, rows[i].samples);
		json_out__raw(&j, "}");
	}
	json_out__raw(&j, "],\"sample_types\":[");
	err = sample_types_json(a->st, &range, &j);
	if (err) {
		answer_errno(r, err);
		goto out;
	}
	json_out__raw(&j, "],");
	/* "services": the label service.name; "hosts": host.name, the OTLP receiver's senders */
	if (label_values__json(p, PCTX_SERVICE_LABEL, "services", "service", &j) == 0)
		json_out__raw(&j, ",");
	if (label_values__json(p, "host.name", "hosts", "host", &j) == 0)
		json_out__raw(&j, ",");
	flame_tree__types_json(t, &j);
	json_out__raw(&j, "}");
	answer_json(r, &j);
out:
	json_out__free(&j);
	for (i = 0; i < pl.container_cnt; i++)
		free(pl.containers[i]);
	free(rows);
	flame_tree__free(t);
}

/* The traces of a range, for the trace table (serve/trace_list.h). */
static void route_traces(struct serve_api *a, const struct ask *ask, struct http_response *r)
{
	struct profile *p = query(a, &ask->f[0], r);
	struct json_out j;
	int err;

	if (!p)
		return;
	json_out__init(&j, SERVE_JSON_MAX);
	err = trace_list__json(p, a->trace_url, ask->limit, &j);
	if (err) {
		json_out__free(&j);
		answer_errno(r, err);
		return;
	}
	answer_json(r, &j);
}

/* The gzip of buf (one member), malloc()ed into *out. 0 or -ENOMEM / -EIO. */
static int gzip(const uint8_t *buf, size_t len, char **out, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = len + len / 1000 + 64;
	char *o;
	int rc;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len);
	o = malloc(cap);
	if (!o) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)o;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(o);
		return -EIO;
	}
	*out = o;
	return 0;
}

static void route_pprof(struct serve_api *a, const struct ask *ask, struct http_response *r)
{
	struct profile *p;
	struct pb_buf buf;
	int err;

	if (ask->type) {
		answer_error(r, 400, "%s", "a pprof download takes the store's filters, not type");
		return;
	}
	if (ask->fold) { /* pprof keeps every frame */
		answer_error(r, 400, "%s", "a pprof download keeps every frame, not fold");
		return;
	}
	p = query(a, &ask->f[0], r);
	if (!p)
		return;
	pb_buf__init(&buf, PPROF_MAX_SZ);
	err = pprof__encode(p, &buf);
	err = err ?: (buf.len > UINT32_MAX ? -EMSGSIZE : 0);
	err = err ?: gzip(buf.data, buf.len, &r->body, &r->body_len);
	if (err) {
		answer_errno(r, err == -EMSGSIZE ? -E2BIG : err);
	} else {
		r->status = 200;
		r->content_type = "application/octet-stream";
		r->headers = "Content-Disposition: attachment; filename=\"stackscope.pb.gz\"\r\n";
	}
	pb_buf__free(&buf);
}

/* POST /api/diff?a_len=N: the body is two pprof files, the first N bytes and the rest, read
 * under the limits of serve/upload.h.
 */
static void route_upload_diff(const struct ask *ask, const struct http_request *req,
			      struct http_response *r)
{
	struct profile *p[2] = { 0 };
	char why[256];
	int status;

	if (!ask->a_len || ask->a_len >= req->body_len) {
		answer_error(r, 400, "%s",
			     "the body is two pprof files: a_len=N gives the first one's size");
		return;
	}
	status = upload__import(req->body, req->body_len, ask->a_len, NULL, p, why, sizeof(why));
	if (status)
		answer_error(r, status, "%s", why);
	else
		route_tree(NULL, ask, p, 2, false, r);
	profile__free(p[0]);
	profile__free(p[1]);
}

/* GET /api/source?function=NAME[&file=PATH] with the store's filters: a function's source
 * with its lines' heat (serve/source_view.h). NAME and PATH are only looked up among the
 * range's frames: no file is read that no frame names.
 */
static void route_source(struct serve_api *a, const char *qs, struct http_response *r)
{
	struct params ps = { 0 };
	const char *why = NULL, *function = NULL, *file = NULL;
	char reason[256];
	struct profile *p;
	struct json_out j;
	struct ask ask;
	size_t i, k;
	int status;

	json_out__init(&j, SERVE_JSON_MAX);
	if (params__parse(&ps, qs, &why))
		goto bad;
	for (i = k = 0; i < ps.cnt; i++) { /* ours out, the filters left for ask__parse() */
		if (!strcmp(ps.p[i].key, "function"))
			function = ps.p[i].value;
		else if (!strcmp(ps.p[i].key, "file"))
			file = ps.p[i].value;
		else
			ps.p[k++] = ps.p[i];
	}
	ps.cnt = k;
	if (ask__parse(&ask, &ps, 1, &why))
		goto bad;
	if (!function || !*function || (file && !*file) || ask.type || ask.fold) {
		why = !function || !*function ? "function"
		      : file && !*file        ? "file"
		      : ask.type              ? "type"
					      : "fold";
		goto bad;
	}
	p = query(a, &ask.f[0], r);
	if (!p)
		goto out;
	status = source_view__json(a->st, p, &ask.f[0], function, file, &j, reason, sizeof(reason));
	if (status)
		answer_error(r, status, "%s", reason);
	else
		answer_json(r, &j);
	goto out;
bad:
	answer_error(r, 400, "bad parameter: %s", why);
out:
	json_out__free(&j);
	free(ps.buf);
}

static const struct asset {
	const char *path;
	const char *type;
	const unsigned char *data;
	const unsigned int *len;
} assets[] = {
	{ "/", "text/html; charset=utf-8", index_html, &index_html_len },
	{ "/index.html", "text/html; charset=utf-8", index_html, &index_html_len },
	{ "/app.js", "text/javascript; charset=utf-8", app_js, &app_js_len },
	{ "/app.css", "text/css; charset=utf-8", app_css, &app_css_len },
	{ "/source_view.js", "text/javascript; charset=utf-8", source_view_js,
	  &source_view_js_len },
	{ "/source_view.css", "text/css; charset=utf-8", source_view_css, &source_view_css_len },
};

void serve_api__handle(void *ctx, const struct http_request *req, struct http_response *r)
{
	struct serve_api *a = ctx;
	struct params ps = { 0 };
	struct ask ask;
	const char *why = NULL, *path = req->path;
	bool post = !strcmp(req->method, "POST"), diff, two_sided;
	size_t i;

	for (i = 0; i < sizeof(assets) / sizeof(assets[0]); i++) {
		if (strcmp(path, assets[i].path))
			continue;
		if (post) {
			answer_error(r, 405, "%s", "GET only");
			return;
		}
		r->status = 200;
		r->content_type = assets[i].type;
		r->body_static = assets[i].data;
		r->body_len = *assets[i].len;
		r->headers = "Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
			     "style-src 'self' 'unsafe-inline'\r\n";
		return;
	}
	if (strncmp(path, "/api/", 5)) {
		answer_error(r, 404, "%s", "no such page");
		return;
	}
	diff = !strcmp(path, "/api/diff");
	two_sided = diff || !strcmp(path, "/api/difftop");
	if (post && !diff) {
		answer_error(r, 405, "%s", "only /api/diff takes POST (two pprof files)");
		return;
	}
	if (!strcmp(path, "/api/source")) {
		route_source(a, req->query, r);
		return;
	}
	if (params__parse(&ps, req->query, &why) ||
	    ask__parse(&ask, &ps, two_sided ? 2 : 1, &why)) {
		answer_error(r, 400, "bad parameter: %s", why);
		goto out;
	}
	if (!strcmp(path, "/api/intervals"))
		route_intervals(a, &ask, r);
	else if (!strcmp(path, "/api/flamegraph"))
		route_tree(a, &ask, NULL, 1, false, r);
	else if (!strcmp(path, "/api/top"))
		route_tree(a, &ask, NULL, 1, true, r);
	else if (!strcmp(path, "/api/filters"))
		route_filters(a, &ask, r);
	else if (!strcmp(path, "/api/traces"))
		route_traces(a, &ask, r);
	else if (!strcmp(path, "/api/pprof"))
		route_pprof(a, &ask, r);
	else if (diff && post)
		route_upload_diff(&ask, req, r);
	else if (diff)
		route_tree(a, &ask, NULL, 2, false, r);
	else if (!strcmp(path, "/api/difftop"))
		route_tree(a, &ask, NULL, 2, true, r);
	else
		answer_error(r, 404, "no such API: %s", path);
out:
	free(ps.buf);
}
