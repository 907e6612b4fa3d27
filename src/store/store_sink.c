/* The agent's store sink. See store_sink.h.
 *
 * Kept intervals form a FIFO (oldest first); each is a profile__copy() with the executable and
 * container of each of its processes as the caller's lookup said when it was kept (a process
 * may be gone by the time the interval is written). They are written in order before any new
 * one; the first that fails again ends the round (the file is still busy, or full).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "export/pprof_dir.h"
#include "profile/profile.h"
#include "store/store_sink.h"

/* What the caller's lookup said of one pid, when the interval was kept. */
struct kept_process {
	uint32_t pid;
	char *exe, *container;
};

struct kept_interval {
	struct kept_interval *next;
	struct profile *p;
	struct kept_process *procs; /* sorted by pid */
	size_t proc_cnt;
	size_t sz; /* bytes held, for the bound */
};

struct store_sink {
	struct store_opts opts;
	struct store *st;
	struct store_stats past; /* counters of the files replaced after corruption */
	uint64_t recovered;
	struct kept_interval *head, *tail;
	uint64_t deferred, written_late, lost, pending, pending_sz;
	int kept_err; /* why intervals are being kept (0: none are), for the log */
};

static void add_stats(struct store_stats *sum, const struct store_stats *s)
{
	sum->intervals_written += s->intervals_written;
	sum->write_failed += s->write_failed;
	sum->dropped_size += s->dropped_size;
	sum->dropped_age += s->dropped_age;
	sum->samples_written += s->samples_written;
	sum->gc_runs += s->gc_runs;
}

/* Opens the store, moving a corrupt file aside once (said in the log). 0, or -errno with the
 * reason in why.
 */
static int open_store(struct store_sink *sink, char *why, size_t why_sz)
{
	char moved[4200];
	int ret;

	sink->st = store__open(&sink->opts, why, why_sz);
	if (sink->st)
		return 0;
	ret = -errno;
	if (ret != -EBADMSG)
		return ret;
	if (store__quarantine(sink->opts.path, moved, sizeof(moved))) {
		pr_err("store %s is unusable (%s) and cannot be moved aside: %s\n", sink->opts.path,
		       why, strerror(errno));
		return ret;
	}
	sink->recovered++;
	pr_err("store %s is corrupt (%s): moved to %s; profiling continues into a fresh %s\n",
	       sink->opts.path, why, moved, sink->opts.path);
	sink->st = store__open(&sink->opts, why, why_sz);
	return sink->st ? 0 : -errno;
}

struct store_sink *store_sink__open(const char *path, uint64_t max_sz, uint64_t max_age_ns)
{
	struct store_sink *sink = calloc(1, sizeof(*sink));
	char why[512];
	int err;

	if (!sink)
		return NULL;
	/* at start the open may wait for a co-writer (nothing samples yet); later ones, on the
	 * sampling thread, wait briefly only
	 */
	sink->opts =
		(struct store_opts){ .path = path, .max_sz = max_sz, .max_age_ns = max_age_ns };
	/* the default place is the agent's state folder: made root's alone, as for pprof files */
	if (!strcmp(path, STORE_DEFAULT_PATH) &&
	    (err = pprof_dir__prepare("/var/lib/stackscope"))) {
		pr_err("cannot keep the store in /var/lib/stackscope: %s\n", strerror(-err));
		free(sink);
		errno = -err;
		return NULL;
	}
	err = open_store(sink, why, sizeof(why));
	sink->opts.busy_ms = STORE_SINK_BUSY_MS;
	if (sink->st)
		store__set_busy_timeout(sink->st, STORE_SINK_BUSY_MS);
	if (err == -EBUSY) {
		pr_warn("store %s is locked by another writer (%s): intervals are kept until it is "
			"free\n",
			path, why);
		sink->kept_err = err;
	} else if (err) {
		pr_err("cannot open the store %s: %s\n", path, why);
		free(sink);
		errno = -err;
		return NULL;
	}
	return sink;
}

static void kept_interval__free(struct kept_interval *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->proc_cnt; i++) {
		free(k->procs[i].exe);
		free(k->procs[i].container);
	}
	free(k->procs);
	profile__free(k->p);
	free(k);
}

static int kept_process__cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct kept_process *)a)->pid;
	uint32_t y = ((const struct kept_process *)b)->pid;

	return (x > y) - (x < y);
}

/* The lookup of a kept interval: what the caller's lookup said when it was kept. */
static int kept_lookup(void *ctx, uint32_t pid, struct store_process *out)
{
	const struct kept_interval *k = ctx;
	struct kept_process key = { .pid = pid };
	const struct kept_process *kp =
		bsearch(&key, k->procs, k->proc_cnt, sizeof(*k->procs), kept_process__cmp);

	if (!kp)
		return -ESRCH;
	out->exe = kp->exe;
	out->container = kp->container;
	return 0;
}

/* A copy of p to keep, with what lookup says of its processes now. NULL on ENOMEM. */
static struct kept_interval *kept_interval__new(const struct profile *p, store_process_fn lookup,
						void *ctx)
{
	struct kept_interval *k = calloc(1, sizeof(*k));
	size_t n = profile__sample_cnt(p), i, cnt = 0;

	if (!k || !(k->p = profile__copy(p)))
		goto fail;
	k->procs = calloc(n ? n : 1, sizeof(*k->procs));
	if (!k->procs)
		goto fail;
	for (i = 0; i < n; i++)
		k->procs[i].pid = profile__sample(p, i)->pid;
	qsort(k->procs, n, sizeof(*k->procs), kept_process__cmp);
	for (i = 0; i < n; i++) /* one entry per pid */
		if (!cnt || k->procs[cnt - 1].pid != k->procs[i].pid)
			k->procs[cnt++].pid = k->procs[i].pid;
	k->proc_cnt = cnt;
	k->sz = sizeof(*k) + profile__mem_sz(k->p) + cnt * sizeof(*k->procs);
	for (i = 0; lookup && i < cnt; i++) {
		struct store_process sp = { 0 };
		struct kept_process *kp = &k->procs[i];

		if (lookup(ctx, kp->pid, &sp))
			continue;
		if ((sp.exe && !(kp->exe = strdup(sp.exe))) ||
		    (sp.container && !(kp->container = strdup(sp.container))))
			goto fail;
		k->sz += (sp.exe ? strlen(sp.exe) + 1 : 0) +
			 (sp.container ? strlen(sp.container) + 1 : 0);
	}
	return k;
fail:
	kept_interval__free(k);
	return NULL;
}

/* The oldest kept interval, out of the list and its counts. */
static struct kept_interval *kept__pop(struct store_sink *sink)
{
	struct kept_interval *k = sink->head;

	sink->head = k->next;
	if (!sink->head)
		sink->tail = NULL;
	sink->pending--;
	sink->pending_sz -= k->sz;
	return k;
}

/* Keeps a copy of p (the write failed with err), dropping the oldest kept past the bounds. */
static void keep(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
		 void *ctx, int err)
{
	struct kept_interval *k = kept_interval__new(p, lookup, ctx);
	uint64_t dropped = 0;

	if (!k) {
		sink->lost++;
		pr_warn("cannot keep an interval for the store %s (out of memory): interval lost\n",
			sink->opts.path);
		return;
	}
	while (sink->head && (sink->pending + 1 > STORE_SINK_PENDING_MAX_CNT ||
			      sink->pending_sz + k->sz > STORE_SINK_PENDING_MAX_SZ)) {
		kept_interval__free(kept__pop(sink));
		dropped++;
	}
	if (dropped) {
		sink->lost += dropped;
		pr_warn("store %s: %llu kept intervals dropped (at most %u intervals, %u MiB are "
			"kept)\n",
			sink->opts.path, (unsigned long long)dropped, STORE_SINK_PENDING_MAX_CNT,
			STORE_SINK_PENDING_MAX_SZ >> 20);
	}
	if (sink->tail)
		sink->tail->next = k;
	else
		sink->head = k;
	sink->tail = k;
	sink->pending++;
	sink->pending_sz += k->sz;
	sink->deferred++;
	if (sink->kept_err != err) /* once per cause, not per interval */
		pr_warn("cannot write an interval into the store %s now (%s): it is kept and "
			"written later, %llu kept\n",
			sink->opts.path,
			err == -EBUSY ? "another writer holds its lock" : strerror(-err),
			(unsigned long long)sink->pending);
	sink->kept_err = err;
}

/* Whether an interval that failed with err may be written later (a lock, a full disk, ...),
 * rather than never (it does not fit the store's limits).
 */
static bool may_pass(int err)
{
	return err != -E2BIG && err != -EINVAL && err != -EPROTO;
}

/* One attempt at p: the store opened if need be, a corrupt file replaced (then retried once).
 * 0 or -errno.
 */
static int try_write(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
		     void *ctx)
{
	struct store_stats s;
	int err;

	char why[512];

	if (!sink->st && (err = open_store(sink, why, sizeof(why)))) {
		sink->past.write_failed++;
		if (err != sink->kept_err)
			pr_warn("cannot open the store %s: %s\n", sink->opts.path, why);
		return err;
	}
	err = store__write(sink->st, p, lookup, ctx);
	if (err == -EBADMSG) {
		/* corrupt under our feet: keep what was counted, start a fresh file, retry once */
		store__stats(sink->st, &s);
		add_stats(&sink->past, &s);
		store__close(sink->st);
		sink->st = NULL;
		pr_err("store %s turned out corrupt while writing\n", sink->opts.path);
		err = open_store(sink, why, sizeof(why));
		if (!err)
			err = store__write(sink->st, p, lookup, ctx);
		else
			pr_err("cannot open the store %s: %s\n", sink->opts.path, why);
	}
	return err;
}

/* Writes the kept intervals in order until one fails again. 0 when none is left. */
static int write_kept(struct store_sink *sink)
{
	uint64_t late = 0;
	int err = 0;

	while (sink->head) {
		struct kept_interval *k = sink->head;

		err = try_write(sink, k->p, kept_lookup, k);
		if (err && may_pass(err))
			break;
		kept_interval__free(kept__pop(sink));
		if (err) {
			sink->lost++;
			pr_warn("cannot write a kept interval into the store %s: %s (interval "
				"dropped)\n",
				sink->opts.path, strerror(-err));
		} else {
			late++;
		}
	}
	sink->written_late += late;
	if (!sink->head && sink->kept_err) {
		if (late)
			pr_info("store %s: written again, %llu kept intervals written late\n",
				sink->opts.path, (unsigned long long)late);
		sink->kept_err = 0;
	}
	return sink->head ? err : 0;
}

void store_sink__write(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
		       void *ctx)
{
	int err = write_kept(sink);

	/* while older ones wait, a new one waits behind them (no second wait for the lock) */
	if (!err)
		err = try_write(sink, p, lookup, ctx);
	if (!err)
		return;
	if (may_pass(err)) {
		keep(sink, p, lookup, ctx, err);
		return;
	}
	sink->lost++;
	pr_warn("cannot write an interval into the store %s: %s (interval dropped)\n",
		sink->opts.path, strerror(-err));
}

void store_sink__free(struct store_sink *sink)
{
	if (!sink)
		return;
	if (sink->head) { /* the last try: wait longer for the lock */
		sink->opts.busy_ms = STORE_SINK_FINAL_BUSY_MS;
		if (sink->st)
			store__set_busy_timeout(sink->st, STORE_SINK_FINAL_BUSY_MS);
		write_kept(sink);
	}
	if (sink->pending) {
		pr_warn("store %s: %llu kept intervals could not be written before the end: lost\n",
			sink->opts.path, (unsigned long long)sink->pending);
		sink->lost += sink->pending;
	}
	while (sink->head)
		kept_interval__free(kept__pop(sink));
	store__close(sink->st);
	free(sink);
}

void store_sink__stats(const struct store_sink *sink, struct store_sink_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (sink->st)
		store__stats(sink->st, &out->store);
	add_stats(&out->store, &sink->past);
	out->recovered = sink->recovered;
	out->deferred = sink->deferred;
	out->written_late = sink->written_late;
	out->lost = sink->lost;
	out->pending = sink->pending;
	out->pending_sz = sink->pending_sz;
}
