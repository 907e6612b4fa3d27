/* Reading the store back: a time range and filters merged into one in-memory profile, and the
 * list of intervals (the UI's timeline). Rows are read in interval order from the clustered
 * samples table; each distinct stack, frame, mapping, process, thread, label set and string is
 * looked up once per query and cached here. See store.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/process_context_pb.h"
#include "profile/mem_types.h"
#include "profile/profile.h"
#include "store/store_db.h"

struct query_proc {
	uint32_t id; /* pid or tid */
	const char *name;
	bool match;
};

struct query_stack {
	uint32_t frame_cnt;
	uint32_t frames[]; /* profile frame ids, leaf first */
};

struct query_labels {
	uint32_t cnt;
	bool match;
	struct profile_label labels[PROFILE_MAX_LABELS];
};

struct query {
	struct store *st;
	const struct store_filter *f;
	struct profile *p;
	sqlite3_stmt *string_q, *frame_q, *mapping_q, *stack_q, *labels_q, *proc_q, *thread_q;
	struct u64_map strings, mappings, frames, stacks, labels, procs, threads;
	int64_t label_key, label_value;     /* the label filter's string ids (-1: no such string) */
	int64_t service_key, service_value; /* the service filter's, the same way */
};

static int prepare(struct query *q)
{
	static const struct {
		size_t off;
		const char *sql;
	} stmts[] = {
		{ offsetof(struct query, string_q), "SELECT s FROM strings WHERE id=?1" },
		{ offsetof(struct query, frame_q),
		  "SELECT kind, mapping, address, runtime, call_site, lines FROM frames WHERE "
		  "id=?1" },
		{ offsetof(struct query, mapping_q),
		  "SELECT path, build_id, start, limit_, file_offset, file_hash, go_build_id FROM "
		  "mappings WHERE id=?1" },
		{ offsetof(struct query, stack_q), "SELECT frames FROM stacks WHERE id=?1" },
		{ offsetof(struct query, labels_q), "SELECT labels FROM label_sets WHERE id=?1" },
		{ offsetof(struct query, proc_q),
		  "SELECT pid, comm, exe, container FROM processes WHERE id=?1" },
		{ offsetof(struct query, thread_q), "SELECT tid, name FROM threads WHERE id=?1" },
	};
	size_t i;

	for (i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		sqlite3_stmt **s = (sqlite3_stmt **)((char *)q + stmts[i].off);
		int rc = sqlite3_prepare_v2(q->st->db, stmts[i].sql, -1, s, NULL);

		if (rc != SQLITE_OK)
			return store_db__errno(rc) ?: -EIO;
	}
	return 0;
}

static void query__free(struct query *q)
{
	sqlite3_finalize(q->string_q);
	sqlite3_finalize(q->frame_q);
	sqlite3_finalize(q->mapping_q);
	sqlite3_finalize(q->stack_q);
	sqlite3_finalize(q->labels_q);
	sqlite3_finalize(q->proc_q);
	sqlite3_finalize(q->thread_q);
	u64_map__free_values(&q->strings, free);
	u64_map__free(&q->mappings);
	u64_map__free(&q->frames);
	u64_map__free_values(&q->stacks, free);
	u64_map__free_values(&q->labels, free);
	u64_map__free_values(&q->procs, free);
	u64_map__free_values(&q->threads, free);
}

/* A column that is never negative in a store we wrote (another file may say so): 0 then. */
static uint64_t column_u64(sqlite3_stmt *q, int col)
{
	int64_t v = sqlite3_column_int64(q, col);

	return v > 0 ? (uint64_t)v : 0;
}

/* Steps stmt bound to id; SQLITE_ROW, or -EBADMSG for a missing row (a dangling id). */
static int fetch_row(sqlite3_stmt *s, int64_t id)
{
	int rc;

	sqlite3_reset(s);
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -EBADMSG : store_db__errno(rc) ?: -EIO;
}

/* The string of id (NULL for 0); *err set on failure. Owned by the query. */
static const char *string_of(struct query *q, int64_t id, int *err)
{
	char *s;

	if (id <= 0 || *err)
		return NULL;
	s = u64_map__get(&q->strings, (uint64_t)id);
	if (s)
		return s;
	*err = fetch_row(q->string_q, id);
	if (*err)
		return NULL;
	s = strdup((const char *)sqlite3_column_text(q->string_q, 0) ?: "");
	if (!s || u64_map__set(&q->strings, (uint64_t)id, s)) {
		free(s);
		*err = -ENOMEM;
		return NULL;
	}
	return s;
}

static uint32_t mapping_of(struct query *q, int64_t id, int *err)
{
	struct profile_mapping m = { 0 };
	int64_t cols[7];
	uint32_t pid;
	int i;

	if (id <= 0 || *err)
		return 0;
	pid = (uint32_t)(uintptr_t)u64_map__get(&q->mappings, (uint64_t)id);
	if (pid)
		return pid;
	*err = fetch_row(q->mapping_q, id);
	if (*err)
		return 0;
	for (i = 0; i < 7; i++)
		cols[i] = sqlite3_column_int64(q->mapping_q, i);
	m.path = string_of(q, cols[0], err);
	m.build_id = string_of(q, cols[1], err);
	m.start = (uint64_t)cols[2];
	m.limit = (uint64_t)cols[3];
	m.file_offset = (uint64_t)cols[4];
	m.file_hash = string_of(q, cols[5], err);
	m.go_build_id = string_of(q, cols[6], err);
	if (*err)
		return 0;
	pid = profile__add_mapping(q->p, &m);
	if (!pid || u64_map__set(&q->mappings, (uint64_t)id, (void *)(uintptr_t)pid)) {
		*err = -ENOMEM;
		return 0;
	}
	return pid;
}

static uint32_t frame_of(struct query *q, int64_t id, int *err)
{
	struct profile_line lines[256];
	struct profile_frame f = { 0 };
	const uint8_t *blob;
	size_t len, pos = 0;
	int64_t runtime, mapping;
	uint64_t fn, file, line;
	uint32_t fid;

	fid = (uint32_t)(uintptr_t)u64_map__get(&q->frames, (uint64_t)id);
	if (fid || *err)
		return fid;
	*err = fetch_row(q->frame_q, id);
	if (*err)
		return 0;
	f.kind = (enum frame_kind)sqlite3_column_int(q->frame_q, 0);
	mapping = sqlite3_column_int64(q->frame_q, 1);
	f.address = (uint64_t)sqlite3_column_int64(q->frame_q, 2);
	runtime = sqlite3_column_int64(q->frame_q, 3);
	f.call_site = sqlite3_column_int(q->frame_q, 4) != 0;
	/* the blob is valid until the next step of frame_q: decode before any other lookup
	 * (string_of() and mapping_of() use statements of their own)
	 */
	blob = sqlite3_column_blob(q->frame_q, 5);
	len = (size_t)sqlite3_column_bytes(q->frame_q, 5);
	{
		uint64_t ids[256 * 3];
		size_t n = 0, i;

		while (n < 256 * 3 && store_db__blob_get(blob, len, &pos, &ids[n]))
			n++;
		if (pos != len || n % 3) {
			*err = -EBADMSG;
			return 0;
		}
		f.mapping = mapping_of(q, mapping, err);
		f.runtime = string_of(q, runtime, err);
		for (i = 0; i + 2 < n; i += 3) {
			fn = ids[i];
			file = ids[i + 1];
			line = ids[i + 2];
			lines[i / 3] = (struct profile_line){ string_of(q, (int64_t)fn, err),
							      string_of(q, (int64_t)file, err),
							      (uint32_t)line,
							      (uint32_t)(line >> 32) };
		}
		f.lines = lines;
		f.line_cnt = (uint32_t)(n / 3);
	}
	if (*err)
		return 0;
	if (f.kind < FRAME_KERNEL || f.kind > FRAME_RUNTIME) {
		*err = -EBADMSG;
		return 0;
	}
	fid = profile__add_frame(q->p, &f);
	if (!fid || u64_map__set(&q->frames, (uint64_t)id, (void *)(uintptr_t)fid)) {
		*err = fid ? -ENOMEM : -errno;
		return 0;
	}
	return fid;
}

static const struct query_stack *stack_of(struct query *q, int64_t id, int *err)
{
	struct query_stack *qs = u64_map__get(&q->stacks, (uint64_t)id);
	uint64_t ids[4096];
	size_t n = 0, pos = 0, len, i;
	const uint8_t *blob;

	if (qs || *err)
		return qs;
	*err = fetch_row(q->stack_q, id);
	if (*err)
		return NULL;
	blob = sqlite3_column_blob(q->stack_q, 0);
	len = (size_t)sqlite3_column_bytes(q->stack_q, 0);
	while (n < 4096 && store_db__blob_get(blob, len, &pos, &ids[n]))
		n++;
	if (pos != len) {
		*err = -EBADMSG;
		return NULL;
	}
	qs = malloc(sizeof(*qs) + n * sizeof(qs->frames[0]));
	if (!qs) {
		*err = -ENOMEM;
		return NULL;
	}
	qs->frame_cnt = (uint32_t)n;
	for (i = 0; i < n && !*err; i++)
		qs->frames[i] = frame_of(q, (int64_t)ids[i], err);
	if (*err || u64_map__set(&q->stacks, (uint64_t)id, qs)) {
		*err = *err ?: -ENOMEM;
		free(qs);
		return NULL;
	}
	return qs;
}

static const struct query_labels *labels_of(struct query *q, int64_t id, int *err)
{
	struct query_labels *ql = u64_map__get(&q->labels, (uint64_t)id);
	uint64_t ids[PROFILE_MAX_LABELS * 2];
	size_t n = 0, pos = 0, len, i;
	const uint8_t *blob;
	bool service_ok;

	if (ql || *err || id <= 0)
		return ql;
	*err = fetch_row(q->labels_q, id);
	if (*err)
		return NULL;
	blob = sqlite3_column_blob(q->labels_q, 0);
	len = (size_t)sqlite3_column_bytes(q->labels_q, 0);
	while (n < PROFILE_MAX_LABELS * 2 && store_db__blob_get(blob, len, &pos, &ids[n]))
		n++;
	if (pos != len || n % 2 || !(ql = calloc(1, sizeof(*ql)))) {
		*err = ql || pos != len || n % 2 ? -EBADMSG : -ENOMEM;
		return NULL;
	}
	ql->match = !q->f->label;
	service_ok = !q->f->service;
	for (i = 0; i < n; i += 2) {
		ql->labels[ql->cnt++] =
			(struct profile_label){ string_of(q, (int64_t)ids[i], err),
						string_of(q, (int64_t)ids[i + 1], err) };
		if ((int64_t)ids[i] == q->label_key && (int64_t)ids[i + 1] == q->label_value)
			ql->match = true;
		if ((int64_t)ids[i] == q->service_key && (int64_t)ids[i + 1] == q->service_value)
			service_ok = true;
	}
	ql->match = ql->match && service_ok;
	if (*err || u64_map__set(&q->labels, (uint64_t)id, ql)) {
		*err = *err ?: -ENOMEM;
		free(ql);
		return NULL;
	}
	return ql;
}

static bool same(const char *want, const char *have)
{
	return !want || (have && !strcmp(want, have));
}

/* Process (is_thread false) or thread row id, with whether it passes the filter. */
static const struct query_proc *proc_of(struct query *q, int64_t id, bool is_thread, int *err)
{
	struct u64_map *m = is_thread ? &q->threads : &q->procs;
	sqlite3_stmt *s = is_thread ? q->thread_q : q->proc_q;
	struct query_proc *qp = u64_map__get(m, (uint64_t)id);
	int64_t cols[4];
	int i;

	if (qp || *err)
		return qp;
	*err = fetch_row(s, id);
	if (*err)
		return NULL;
	for (i = 0; i < (is_thread ? 2 : 4); i++)
		cols[i] = sqlite3_column_int64(s, i);
	qp = malloc(sizeof(*qp));
	if (!qp) {
		*err = -ENOMEM;
		return NULL;
	}
	qp->id = (uint32_t)cols[0];
	qp->name = string_of(q, cols[1], err);
	if (is_thread)
		qp->match = (!q->f->tid || q->f->tid == qp->id) && same(q->f->thread, qp->name);
	else
		qp->match = (!q->f->pid || q->f->pid == qp->id) && same(q->f->comm, qp->name) &&
			    same(q->f->exe, string_of(q, cols[2], err)) &&
			    same(q->f->container, string_of(q, cols[3], err));
	if (*err || u64_map__set(m, (uint64_t)id, qp)) {
		*err = *err ?: -ENOMEM;
		free(qp);
		return NULL;
	}
	return qp;
}

/* Id of string s, 0 if absent, or -errno. */
static int64_t find_string(struct store *st, const char *s, size_t len)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db, "SELECT id FROM strings WHERE s=?1", -1, &q, NULL);
	int64_t id = 0;

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(q, 1, s, (int)len, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		id = sqlite3_column_int64(q, 0);
	else if (rc != SQLITE_DONE)
		id = store_db__errno(rc) ?: -EIO;
	sqlite3_finalize(q);
	return id;
}

static int resolve_label_filter(struct query *q)
{
	const char *eq = q->f->label ? strchr(q->f->label, '=') : NULL;

	q->label_key = q->label_value = -1;
	if (!q->f->label)
		return 0;
	if (!eq)
		return -EINVAL;
	q->label_key = find_string(q->st, q->f->label, (size_t)(eq - q->f->label));
	q->label_value = find_string(q->st, eq + 1, strlen(eq + 1));
	if (q->label_key < 0 || q->label_value < 0)
		return (int)(q->label_key < 0 ? q->label_key : q->label_value);
	if (!q->label_key || !q->label_value)
		q->label_key = q->label_value = -1;
	return 0;
}

/* The service filter: the label service.name's string ids (-1: no sample can match). */
static int resolve_service_filter(struct query *q)
{
	q->service_key = q->service_value = -1;
	if (!q->f->service)
		return 0;
	q->service_key = find_string(q->st, PCTX_SERVICE_LABEL, strlen(PCTX_SERVICE_LABEL));
	q->service_value = find_string(q->st, q->f->service, strlen(q->f->service));
	if (q->service_key < 0 || q->service_value < 0)
		return (int)(q->service_key < 0 ? q->service_key : q->service_value);
	if (!q->service_key || !q->service_value)
		q->service_key = q->service_value = -1;
	return 0;
}

/* The intervals overlapping the time range [?1, ?2): ending after ?1 or starting at or after
 * it, and starting before ?2.
 */
#define IN_RANGE "(end_ns > ?1 OR start_ns >= ?1) AND start_ns < ?2"

/* A time of a filter as SQLite's signed integer: past INT64_MAX (where the store keeps times
 * it was given larger) is INT64_MAX, never a negative number that would match every interval;
 * an end of 0 is no end.
 */
static int64_t time_arg(uint64_t ns, bool is_end)
{
	if (is_end && !ns)
		return INT64_MAX;
	return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

/* Prepares sql with from_ns bound to ?1 and to_ns to ?2 (0: no end). A sqlite result code. */
static int prepare_range(struct store *st, const char *sql, uint64_t from_ns, uint64_t to_ns,
			 sqlite3_stmt **q)
{
	int rc = sqlite3_prepare_v2(st->db, sql, -1, q, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(*q, 1, time_arg(from_ns, false));
		sqlite3_bind_int64(*q, 2, time_arg(to_ns, true));
	}
	return rc;
}

/* The range of interval ids, the window and the period of the intervals overlapping the
 * filter's time range; *lo > *hi when there are none.
 */
static int interval_range(struct store *st, const struct store_filter *f, int64_t *lo, int64_t *hi,
			  uint64_t *start, uint64_t *end, uint64_t *period)
{
	sqlite3_stmt *q = NULL;
	int rc = prepare_range(st,
			       "SELECT min(id), max(id), min(start_ns), max(end_ns), "
			       "max(period_ns) FROM intervals WHERE " IN_RANGE,
			       f->from_ns, f->to_ns, &q);

	*lo = 1;
	*hi = 0;
	*start = *end = *period = 0;
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		*lo = sqlite3_column_int64(q, 0);
		*hi = sqlite3_column_int64(q, 1);
		*start = column_u64(q, 2);
		*end = column_u64(q, 3);
		*period = column_u64(q, 4);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 0 : store_db__errno(rc) ?: -EIO;
}

/* Rows of one key (stack, process, thread, labels) added up before they reach the profile
 * (whose interning per sample costs more than a hash of four ids).
 */
struct merge_row {
	int64_t key[4];
	uint64_t value;
};

struct merge_table {
	struct merge_row *rows;
	size_t cap; /* power of two */
	size_t cnt;
};

static uint64_t merge_hash(const int64_t *key)
{
	return u64_hash((uint64_t)key[0] * 0x9e3779b97f4a7c15ULL ^ (uint64_t)key[1] << 21 ^
			(uint64_t)key[2] << 42 ^ (uint64_t)key[3] * 0xc2b2ae3d27d4eb4fULL);
}

static int merge_table__add(struct merge_table *t, const int64_t *key, uint64_t value)
{
	size_t i;

	if (t->cnt * 4 >= t->cap * 3) {
		struct merge_table big = { .cap = t->cap ? t->cap * 2 : 4096 };

		big.rows = calloc(big.cap, sizeof(*big.rows));
		if (!big.rows)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->rows[i].value)
				merge_table__add(&big, t->rows[i].key, t->rows[i].value);
		free(t->rows);
		*t = big;
	}
	for (i = merge_hash(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		struct merge_row *r = &t->rows[i];

		if (!r->value) {
			memcpy(r->key, key, sizeof(r->key));
			r->value = value;
			t->cnt++;
			return 0;
		}
		if (!memcmp(r->key, key, sizeof(r->key))) {
			r->value = profile__count_add(r->value, value);
			return 0;
		}
	}
}

/* Adds one merged row to the profile if it passes the filter. */
static int add_row(struct query *q, const struct merge_row *r)
{
	const struct query_proc *proc, *thread;
	const struct query_labels *labels;
	const struct query_stack *stack;
	struct profile_sample ps = { 0 };
	int err = 0;

	proc = proc_of(q, r->key[1], false, &err);
	thread = proc_of(q, r->key[2], true, &err);
	labels = labels_of(q, r->key[3], &err);
	if (err || !proc->match || !thread->match || ((q->f->label || q->f->service) && !labels) ||
	    (labels && !labels->match))
		return err;
	stack = stack_of(q, r->key[0], &err);
	if (err)
		return err;
	ps.frames = stack->frames;
	ps.frame_cnt = stack->frame_cnt;
	ps.pid = proc->id;
	ps.comm = proc->name;
	ps.tid = thread->id;
	ps.thread_comm = thread->name;
	ps.labels = labels ? labels->labels : NULL;
	ps.label_cnt = labels ? labels->cnt : 0;
	ps.count = r->value;
	return profile__add_sample(q->p, &ps);
}

/* Adds the samples of the intervals lo..hi overlapping the filter's range that pass it. */
static int merge_samples(struct query *q, int64_t lo, int64_t hi)
{
	struct merge_table t = { 0 };
	sqlite3_stmt *iv = NULL, *s = NULL;
	const char *type = q->f->sample_type;
	int mt = mem_type__by_name(type);
	bool gauge = mt >= 0 && mem_type__desc((unsigned int)mt)->gauge, seen = false;
	int rc, err = 0;
	size_t i;

	if (!type || !strcmp(type, "cpu"))
		type = "samples";
	/* a gauge (in use): the newest interval with rows of the type, alone */
	rc = sqlite3_prepare_v2(
		q->st->db,
		"SELECT id FROM intervals WHERE id BETWEEN ?1 AND ?2 AND (end_ns > ?3 "
		"OR start_ns >= ?3) AND start_ns < ?4 ORDER BY id DESC",
		-1, &iv, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
			q->st->db,
			"SELECT stack, process, thread, labels, value FROM samples "
			"WHERE interval = ?1 AND type IN (SELECT id FROM sample_types "
			"WHERE type=?2)",
			-1, &s, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(iv, 1, lo);
		sqlite3_bind_int64(iv, 2, hi);
		sqlite3_bind_int64(iv, 3, time_arg(q->f->from_ns, false));
		sqlite3_bind_int64(iv, 4, time_arg(q->f->to_ns, true));
	}
	while (rc == SQLITE_OK && !err && !(gauge && seen) &&
	       (rc = sqlite3_step(iv)) == SQLITE_ROW) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, sqlite3_column_int64(iv, 0));
		sqlite3_bind_text(s, 2, type, -1, SQLITE_STATIC);
		while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			int64_t key[4];
			int64_t v = sqlite3_column_int64(s, 4);
			int k;

			for (k = 0; k < 4; k++)
				key[k] = sqlite3_column_int64(s, k);
			seen = true;
			if (v > 0)
				err = merge_table__add(&t, key, (uint64_t)v);
		}
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc == SQLITE_OK)
		rc = SQLITE_DONE; /* a gauge's loop ended early */
	sqlite3_finalize(iv);
	sqlite3_finalize(s);
	if (!err && rc != SQLITE_DONE)
		err = store_db__errno(rc) ?: -EIO;
	for (i = 0; !err && i < t.cap; i++)
		if (t.rows[i].value)
			err = add_row(q, &t.rows[i]);
	free(t.rows);
	return err;
}

int store__query(struct store *st, const struct store_filter *f, struct profile **out)
{
	struct query q = { .st = st, .f = f };
	struct profile_opts po = { 0 };
	uint64_t start, end, period;
	int64_t lo, hi;
	int err;

	*out = NULL;
	/* one snapshot: the writer's commits after this point are not seen */
	err = store_db__exec(st, "BEGIN");
	err = err ?: interval_range(st, f, &lo, &hi, &start, &end, &period);
	err = err ?: prepare(&q);
	err = err ?: resolve_label_filter(&q);
	err = err ?: resolve_service_filter(&q);
	if (err)
		goto out;
	po.period_ns = period ?: 1000000000ULL / 19;
	po.start_time_ns = start ?: f->from_ns;
	q.p = profile__new(&po);
	if (!q.p) {
		err = -ENOMEM;
		goto out;
	}
	profile__set_end_time(q.p, end ?: po.start_time_ns);
	if (lo <= hi)
		err = merge_samples(&q, lo, hi);
out:
	query__free(&q); /* its statements first: one still running would keep the snapshot */
	store_db__exec(st, "COMMIT");
	if (err)
		profile__free(q.p);
	else
		*out = q.p;
	return err;
}

int store__intervals(struct store *st, uint64_t from_ns, uint64_t to_ns,
		     int (*fn)(void *ctx, const struct store_interval *iv), void *ctx)
{
	sqlite3_stmt *q = NULL;
	int rc = prepare_range(st,
			       "SELECT id, start_ns, end_ns, total FROM intervals WHERE " IN_RANGE
			       " ORDER BY start_ns, id",
			       from_ns, to_ns, &q);

	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_interval iv = {
			.id = sqlite3_column_int64(q, 0),
			.start_ns = column_u64(q, 1),
			.end_ns = column_u64(q, 2),
			.total = column_u64(q, 3),
		};

		rc = fn(ctx, &iv) ? SQLITE_DONE : SQLITE_OK;
		if (rc == SQLITE_DONE)
			break;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : store_db__errno(rc) ?: -EIO;
}

/* "-30s", "-5m", "-2h", "-1d": that long before now; else ns since the epoch. */
static int parse_time(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	struct timespec now;
	uint64_t unit = 1;

	if (s[0] == '-') {
		v = strtoull(s + 1, &end, 10);
		if (end == s + 1)
			return -EINVAL;
		switch (*end) {
		case 's':
			unit = 1000000000ULL;
			break;
		case 'm':
			unit = 60 * 1000000000ULL;
			break;
		case 'h':
			unit = 3600 * 1000000000ULL;
			break;
		case 'd':
			unit = 86400 * 1000000000ULL;
			break;
		default:
			return -EINVAL;
		}
		if (end[1] || v > UINT64_MAX / unit)
			return -EINVAL;
		clock_gettime(CLOCK_REALTIME, &now);
		*out = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
		*out = *out > v * unit ? *out - v * unit : 0;
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '+')
		return -EINVAL;
	*out = v;
	return 0;
}

int store_filter__parse(struct store_filter *f, const char *name, const char *value)
{
	unsigned long v;
	char *end;

	if (!strcmp(name, "from"))
		return parse_time(value, &f->from_ns) ?: 1;
	if (!strcmp(name, "to"))
		return parse_time(value, &f->to_ns) ?: 1;
	if (!strcmp(name, "pid") || !strcmp(name, "tid")) {
		errno = 0;
		v = strtoul(value, &end, 10);
		if (!*value || *end || errno || !v || v > UINT32_MAX || value[0] == '-')
			return -EINVAL;
		*(name[0] == 'p' ? &f->pid : &f->tid) = (uint32_t)v;
		return 1;
	}
	if (!strcmp(name, "comm"))
		f->comm = value;
	else if (!strcmp(name, "thread"))
		f->thread = value;
	else if (!strcmp(name, "exe"))
		f->exe = value;
	else if (!strcmp(name, "container"))
		f->container = value;
	else if (!strcmp(name, "label"))
		f->label = value;
	else if (!strcmp(name, "service"))
		f->service = value;
	else if (!strcmp(name, "sample_type") || !strcmp(name, "sample-type"))
		f->sample_type = value;
	else
		return 0;
	if (!strcmp(name, "label") && !strchr(value, '='))
		return -EINVAL;
	return 1;
}

/* A sum of values as total() gives it (a double: sum() fails on integer overflow). */
static uint64_t samples_of(double sum)
{
	if (!(sum > 0))
		return 0;
	return sum >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)sum;
}

int store__processes(struct store *st, uint64_t from_ns, uint64_t to_ns,
		     int (*fn)(void *ctx, const struct store_process_row *row), void *ctx)
{
	sqlite3_stmt *q = NULL;
	int rc;

	/* one snapshot, as store__query(): the intervals and their samples agree */
	rc = store_db__exec(st, "BEGIN");
	if (rc)
		return rc;
	rc = prepare_range(
		st,
		"SELECT p.pid, (SELECT s FROM strings WHERE id=p.comm), (SELECT s FROM strings "
		"WHERE id=p.exe), (SELECT s FROM strings WHERE id=p.container), total(x.value) "
		"FROM samples x JOIN processes p ON p.id = x.process WHERE x.interval IN "
		"(SELECT id FROM intervals WHERE " IN_RANGE ") "
		"AND x.type = (SELECT id FROM sample_types WHERE type='samples' AND unit='count') "
		"GROUP BY x.process ORDER BY 5 DESC, 1",
		from_ns, to_ns, &q);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_process_row row = {
			.pid = (uint32_t)sqlite3_column_int64(q, 0),
			.comm = (const char *)sqlite3_column_text(q, 1),
			.exe = (const char *)sqlite3_column_text(q, 2),
			.container = (const char *)sqlite3_column_text(q, 3),
			.samples = samples_of(sqlite3_column_double(q, 4)),
		};

		rc = fn(ctx, &row) ? SQLITE_DONE : SQLITE_OK;
		if (rc == SQLITE_DONE)
			break;
	}
	sqlite3_finalize(q);
	store_db__exec(st, "COMMIT");
	return rc == SQLITE_DONE ? 0 : store_db__errno(rc) ?: -EIO;
}

int store__sample_types(struct store *st, uint64_t from_ns, uint64_t to_ns,
			int (*fn)(void *ctx, const char *type, const char *unit), void *ctx)
{
	sqlite3_stmt *q = NULL;
	int rc = prepare_range(st,
			       "SELECT t.type, t.unit FROM sample_types t WHERE EXISTS (SELECT 1 "
			       "FROM samples x WHERE x.type = t.id AND x.interval IN (SELECT id "
			       "FROM intervals WHERE " IN_RANGE ")) ORDER BY t.id",
			       from_ns, to_ns, &q);

	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		rc = fn(ctx, (const char *)sqlite3_column_text(q, 0),
			(const char *)sqlite3_column_text(q, 1))
			     ? SQLITE_DONE
			     : SQLITE_OK;
		if (rc == SQLITE_DONE)
			break;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : store_db__errno(rc) ?: -EIO;
}

int store__state(struct store *st, struct store_state *out)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(
		st->db,
		"SELECT count(*), ifnull(max(id), 0), ifnull(max(end_ns), 0) FROM intervals", -1,
		&q, NULL);

	*out = (struct store_state){ 0 };
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		out->interval_cnt = column_u64(q, 0);
		out->last_id = sqlite3_column_int64(q, 1);
		out->last_end_ns = column_u64(q, 2);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 0 : store_db__errno(rc) ?: -EIO;
}
