/* The unwind-table build queue. See table_queue.h. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/log.h"
#include "formats/elf_file.h"
#include "proc/executable.h"
#include "unwind/table_queue.h"
#include "unwind/unwind_maps.h"
#include "unwind/unwind_table.h"

/* Queued and loaded files are bounded by the executables live processes map. */
#define TABLE_QUEUE_CAP 65536
/* Evictions tried for one table before it is given up (a fragmented pool). */
#define EVICT_TRIES 64

struct queued {
	struct executable *exe;
	struct table_status *st; /* exe's (unwind_maps__status()) */
	bool cached;             /* the on-disk cache had its table when it was queued */
	size_t need; /* pool entries its table took when it last found no room (0: unknown) */
	uint64_t not_before_ns; /* STACKSCOPE_TABLE_DELAY_MS: not served before then */
};

/* The one build the worker owns: submitted by the owner thread, completed by the worker. */
struct worker_job {
	int fd; /* a dup of the file's fd, closed by the worker */
	bool submitted, taken, done;
	int err;
	struct unwind_table *table;
	uint64_t ns;
};

/* A file whose table is loaded. */
struct loaded_table {
	struct executable *exe;
	struct table_status *st;
};

struct table_queue {
	struct unwind_maps *um;
	struct queued *items; /* QUEUED and EVICTED files, unordered */
	size_t cnt, cap;
	struct loaded_table *loaded; /* LOADED files, eviction candidates */
	size_t loaded_cnt, loaded_cap;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct worker_job job;       /* under lock */
	struct executable *inflight; /* owner side: the file being built; NULL once removed */
	struct table_status *inflight_st;
	bool busy;               /* owner side: a job is submitted and not yet collected */
	bool sampled_only;       /* table_queue__set_sampled_only() */
	bool grow_for_samples;   /* the same, kept while table_queue__prime() lifts it */
	bool started;            /* table_queue__prime() ran: sampling runs */
	uint64_t build_delay_ns; /* STACKSCOPE_TABLE_DELAY_MS (tests), else 0 */
	struct table_queue_stats stats;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void queue__destroy(struct table_queue *q);

/* STACKSCOPE_TABLE_DELAY_MS=N (tests): a file first mapped while sampling runs whose table
 * the cache does not hold waits N ms (at most 10 s) before its build, as a slow build (a
 * giant library on a loaded machine) would: the samples in between take the deferred path
 * whatever the machine's speed.
 */
static uint64_t build_delay_ns(void)
{
	const char *v = getenv("STACKSCOPE_TABLE_DELAY_MS");
	unsigned long ms = v ? strtoul(v, NULL, 10) : 0;

	return (uint64_t)(ms < 10000 ? ms : 10000) * 1000000ULL;
}

static void *worker(void *arg)
{
	struct table_queue *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct unwind_table *t = NULL;
		struct elf_file *ef;
		uint64_t t0;
		int fd, err;

		while (!q->stop && (!q->job.submitted || q->job.done))
			pthread_cond_wait(&q->cond, &q->lock);
		if (q->stop)
			break;
		fd = q->job.fd;
		q->job.taken = true;
		pthread_mutex_unlock(&q->lock);

		t0 = mono_ns();
		ef = elf_file__open_fd(fd);
		err = ef ? unwind_table__build(ef, NULL, &t) : -(errno ? errno : ENOEXEC);
		elf_file__free(ef);
		close(fd);

		pthread_mutex_lock(&q->lock);
		q->job.table = t;
		q->job.err = err;
		q->job.ns = mono_ns() - t0;
		q->job.done = true;
		if (q->stop) {
			/* Orphaned by table_queue__free() (detached): the queue is ours to free. */
			pthread_mutex_unlock(&q->lock);
			queue__destroy(q);
			return NULL;
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct table_queue *table_queue__new(struct unwind_maps *um)
{
	struct table_queue *q = calloc(1, sizeof(*q));
	int err;

	if (!q)
		return NULL;
	q->um = um;
	q->build_delay_ns = build_delay_ns();
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	err = pthread_create(&q->thread, NULL, worker, q);
	if (err) {
		pthread_cond_destroy(&q->cond);
		pthread_mutex_destroy(&q->lock);
		free(q);
		errno = err;
		return NULL;
	}
	return q;
}

static void queue__destroy(struct table_queue *q)
{
	unwind_table__free(q->job.table);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q->items);
	free(q->loaded);
	free(q);
}

void table_queue__free(struct table_queue *q)
{
	bool building;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	building = q->job.submitted && !q->job.done && q->job.taken;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	if (building) {
		/* A giant build takes seconds on a loaded machine: do not hold up the exit. The
		 * worker frees the queue when it is done (it touches nothing else).
		 */
		pthread_detach(q->thread);
		return;
	}
	pthread_join(q->thread, NULL);
	if (q->job.submitted && !q->job.done)
		close(q->job.fd);
	queue__destroy(q);
}

static bool giant(const struct executable *exe)
{
	return exe->fd >= 0 && (uint64_t)exe->version.size >= TABLE_QUEUE_GIANT_BYTES;
}

static int push_item(struct table_queue *q, struct executable *exe, struct table_status *st,
		     bool cached, size_t need)
{
	if (array__reserve_bounded((void **)&q->items, &q->cap, q->cnt + 1, sizeof(*q->items), 64,
				   TABLE_QUEUE_CAP))
		return -ENOMEM;
	q->items[q->cnt++] = (struct queued){
		.exe = exe,
		.st = st,
		.cached = cached,
		.need = need,
		.not_before_ns = q->started && !cached && q->build_delay_ns
					 ? mono_ns() + q->build_delay_ns
					 : 0,
	};
	return 0;
}

void table_queue__set_sampled_only(struct table_queue *q, bool on)
{
	q->sampled_only = on;
	q->grow_for_samples = on;
}

/* Whether exe's table waits for a sample before it may take more than the room the pool has:
 * with sampled_only, a giant file no sample landed in (merely mapped, by an exec or a dlopen or
 * before the start: bpftrace's libLLVM and libclang-cpp, 2M entries, two segments) takes only
 * free room in the segments made. Smaller files are served as mapped: holding them too left a
 * new process's first samples in each of its libraries without a table (bench/agent.sh under
 * other sessions' builds: incomplete stacks 1024/1074 against 497/742, and more replays).
 */
static bool waits_for_sample(const struct table_queue *q, const struct executable *exe,
			     const struct table_status *st)
{
	return q->grow_for_samples && !st->last_sampled_ns && giant(exe);
}

/* A giant no sample landed in yet: not built (seconds, and its build's peak memory) for a pool
 * that would not grow for it; nothing waits for it.
 */
static bool held_giant(const struct table_queue *q, const struct queued *it)
{
	return waits_for_sample(q, it->exe, it->st) && !it->cached;
}

int table_queue__add(struct table_queue *q, struct executable *exe)
{
	struct table_status *st = unwind_maps__status(q->um, exe->file_id);
	int err;

	if (!st)
		return -ENOMEM;
	if (st->state == UNWIND_TABLE_QUEUED || st->state == UNWIND_TABLE_BUILDING ||
	    st->state == UNWIND_TABLE_LOADED)
		return 0;
	table_queue__remove(q, exe); /* an EVICTED entry */
	err = push_item(q, exe, st, unwind_maps__has_cached(q->um, exe->file_id), 0);
	if (err) {
		st->state = UNWIND_TABLE_FAILED;
		return err;
	}
	st->state = UNWIND_TABLE_QUEUED;
	/* A file first mapped while sampling runs (an exec, a dlopen) is about to run code:
	 * served as if sampled once, as soon as the loader's burst of mappings is in.
	 */
	st->wanted = q->started ? 1 : 0;
	return 0;
}

static void drop_loaded(struct table_queue *q, const struct executable *exe)
{
	size_t i;

	for (i = 0; i < q->loaded_cnt; i++) {
		if (q->loaded[i].exe == exe) {
			q->loaded[i] = q->loaded[--q->loaded_cnt];
			return;
		}
	}
}

void table_queue__remove(struct table_queue *q, struct executable *exe)
{
	struct table_status *st = unwind_maps__find_status(q->um, exe->file_id);
	size_t i;

	for (i = 0; i < q->cnt; i++) {
		if (q->items[i].exe == exe) {
			q->items[i] = q->items[--q->cnt];
			break;
		}
	}
	if (q->inflight == exe)
		q->inflight = NULL; /* its build is discarded when it completes */
	drop_loaded(q, exe);
	if (st && st->state != UNWIND_TABLE_LOADED)
		st->state = UNWIND_TABLE_NONE;
}

/* Order of service (table_queue.h): sampled (most samples per byte first), cached, then the
 * most mapped, then smallest.
 */
static bool before(const struct queued *a, const struct queued *b)
{
	if (!!a->st->wanted != !!b->st->wanted)
		return a->st->wanted;
	if (a->st->wanted) {
		/* Samples served per byte to read: a small file a few samples wait for goes
		 * before a giant many wait for (whose build would delay it by seconds).
		 */
		double ca = (double)a->exe->version.size + (1 << 20);
		double cb = (double)b->exe->version.size + (1 << 20);

		return a->st->wanted / ca > b->st->wanted / cb;
	}
	if (a->cached != b->cached)
		return a->cached;
	/* Files more processes map (libc, the loader) are more likely sampled next. */
	if (a->exe->live_maps != b->exe->live_maps)
		return a->exe->live_maps > b->exe->live_maps;
	return a->exe->version.size < b->exe->version.size;
}

/* Whether less than 1/8 of the entry pool is free. */
static bool low_on_room(const struct table_queue *q)
{
	return unwind_maps__pool_free(q->um) < unwind_maps__pool_cap(q->um) / 8;
}

/* Index of the next file to serve, or -1; a giant file that must be built (not cached) is
 * skipped while the worker is busy.
 */
static ssize_t pick(const struct table_queue *q, uint64_t now_ns)
{
	ssize_t best = -1;
	size_t i;

	for (i = 0; i < q->cnt; i++) {
		const struct queued *it = &q->items[i];

		if (it->st->state == UNWIND_TABLE_EVICTED &&
		    (!it->st->wanted || now_ns < it->st->retry_ns))
			continue;
		if (q->busy && giant(it->exe) && !it->cached)
			continue;
		if (now_ns < it->not_before_ns)
			continue;
		/* Files no sample asked for take only room nobody needs, if any. */
		if (!it->st->last_sampled_ns && !it->st->wanted &&
		    (q->sampled_only || low_on_room(q)))
			continue;
		/* A giant no sample landed in would be built (seconds, its build's peak memory)
		 * for a pool that would not grow for it.
		 */
		if (held_giant(q, it))
			continue;
		if (best < 0 || before(it, &q->items[best]))
			best = (ssize_t)i;
	}
	return best;
}

/* The loaded file to unload for a table of `need` entries: one whose entries, with the room
 * the pool has, make that much (a table no free range holds whole is split at its pages; a
 * victim too small alone is not taken, so the pool is never emptied in vain), never sampled or
 * else the least recently sampled, and not sampled within the idle minimum; NULL if none.
 */
static const struct loaded_table *victim(const struct table_queue *q, const struct executable *keep,
					 size_t need, uint64_t now_ns)
{
	const struct loaded_table *v = NULL;
	size_t i;

	for (i = 0; i < q->loaded_cnt; i++) {
		const struct loaded_table *e = &q->loaded[i];

		if (e->exe == keep ||
		    (e->st->last_sampled_ns &&
		     now_ns - e->st->last_sampled_ns < TABLE_QUEUE_EVICT_MIN_IDLE_NS))
			continue;
		if (unwind_maps__hole_without(q->um, e->exe->file_id) < need)
			continue;
		/* never sampled (0) first */
		if (!v || e->st->last_sampled_ns < v->st->last_sampled_ns)
			v = e;
	}
	return v;
}

/* exe waits for a sample, and for the retry period, to be queued again; need: the entries its
 * table found no room for (0: it had room, or it was evicted).
 */
static void wait_evicted(struct table_queue *q, struct executable *exe, struct table_status *st,
			 uint64_t now_ns, size_t need)
{
	st->wanted = 0;
	st->retry_ns = now_ns + TABLE_QUEUE_EVICT_MIN_IDLE_NS;
	if (!push_item(q, exe, st, unwind_maps__has_cached(q->um, exe->file_id), need))
		st->state = UNWIND_TABLE_EVICTED;
	else
		st->state = UNWIND_TABLE_FAILED;
}

/* exe's table found no room in the pool: counted ("without room"), said once. A table may be
 * larger than the whole pool (-E2BIG; or a build stops at the pool's size and meets -ENOSPC):
 * the same for the user.
 */
static void count_pool_full(struct table_queue *q, const struct executable *exe)
{
	q->stats.pool_full++;
	if (q->stats.pool_full == 1)
		pr_warn("%s: unwind-entry pool full (%zu entries; --unwind-entries): frame "
			"pointers only for this file and others later (counted)\n",
			exe->path, unwind_maps__pool_cap(q->um));
}

/* Load t for exe, evicting least recently sampled tables while the pool is full. */
static int install(struct table_queue *q, struct executable *exe, struct table_status *st,
		   const struct unwind_table *t, uint64_t now_ns)
{
	bool held = waits_for_sample(q, exe, st);
	bool wanted = (st->last_sampled_ns || st->wanted) && !held;
	size_t need = 0; /* counted when the pool has no room: a pass over every row */
	int tries, err = -ENOSPC;

	unwind_maps__hold_growth(q->um, held);
	for (tries = 0; tries <= EVICT_TRIES; tries++) {
		const struct loaded_table *found;
		struct loaded_table v;

		err = unwind_maps__install(q->um, exe, t);
		if (err != -ENOSPC || !wanted)
			break;
		if (!need)
			need = unwind_maps__entries_needed(q->um, t);
		found = victim(q, exe, need, now_ns);
		if (!found)
			break;
		v = *found; /* its place in the list goes next */
		drop_loaded(q, v.exe);
		unwind_maps__unload(q->um, v.exe);
		wait_evicted(q, v.exe, v.st, now_ns, 0);
		q->stats.evicted++;
		pr_debug("%s: unwind table evicted for %s\n", v.exe->path, exe->path);
	}
	unwind_maps__hold_growth(q->um, false);
	if (err == -ENOSPC && !wanted) {
		/* Not sampled yet: waits for its first sample, when it may evict or grow. */
		wait_evicted(q, exe, st, now_ns, 0);
		st->retry_ns = 0;
	} else if (err == -ENOSPC) {
		wait_evicted(q, exe, st, now_ns, need ?: unwind_maps__entries_needed(q->um, t));
		count_pool_full(q, exe);
	} else if (err == -E2BIG) {
		count_pool_full(q, exe); /* larger than the pool: no eviction makes room */
	}
	if (!err) {
		drop_loaded(q, exe);
		/* Without room in the list the table stays, only never evicted. */
		if (!array__reserve_bounded((void **)&q->loaded, &q->loaded_cap, q->loaded_cnt + 1,
					    sizeof(*q->loaded), 64, TABLE_QUEUE_CAP))
			q->loaded[q->loaded_cnt++] = (struct loaded_table){ exe, st };
	}
	return err;
}

/* Install the worker's finished build, if any. */
static int collect(struct table_queue *q, uint64_t now_ns)
{
	struct executable *exe = q->inflight;
	struct table_status *st = q->inflight_st;
	struct unwind_table *t;
	uint64_t ns;
	int err, loaded = 0;

	if (!q->busy)
		return 0;
	pthread_mutex_lock(&q->lock);
	if (!q->job.done) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	t = q->job.table;
	err = q->job.err;
	ns = q->job.ns;
	q->stats.worker_busy_ns += ns;
	q->job = (struct worker_job){ .fd = -1 };
	pthread_mutex_unlock(&q->lock);
	q->busy = false;
	q->inflight = NULL;
	q->inflight_st = NULL;
	if (!exe) {
		q->stats.discarded++;
	} else {
		q->stats.built_worker++;
		pr_debug("%s: unwind table built by the worker in %llu ms\n", exe->path,
			 (unsigned long long)(ns / 1000000));
		err = unwind_maps__complete(q->um, exe, err, &t);
		if (!err && !install(q, exe, st, t, now_ns))
			loaded = 1;
		elf_file__drop_pages(exe->elf);
	}
	unwind_table__free(t);
	malloc_trim(0); /* a giant build's blocks go back now, not at the next trim */
	return loaded;
}

static int submit(struct table_queue *q, struct executable *exe, struct table_status *st)
{
	int fd = fcntl(exe->fd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&q->lock);
	q->job = (struct worker_job){ .fd = fd, .submitted = true };
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	q->busy = true;
	q->inflight = exe;
	q->inflight_st = st;
	st->state = UNWIND_TABLE_BUILDING;
	return 0;
}

/* Build or read exe's table on this thread and load it. */
static int serve_inline(struct table_queue *q, struct executable *exe, struct table_status *st,
			uint64_t now_ns)
{
	struct unwind_table *t = NULL;
	int err = unwind_maps__cached(q->um, exe, &t);

	q->stats.built_inline++;
	if (err) {
		err = unwind_table__build(exe->elf, NULL, &t);
		err = unwind_maps__complete(q->um, exe, err, &t);
	}
	if (!err)
		err = install(q, exe, st, t, now_ns);
	unwind_table__free(t);
	elf_file__drop_pages(exe->elf);
	return err;
}

/* Whether a table of need entries, for exe, could go in now: the pool has that many free, or
 * install() would find a file to evict. A retry without room would read (or build) the whole
 * table only to free it again: on a machine whose giant files outgrow the pool, once a minute
 * for each of them (a cache read and CRC of libclang-cpp's 12 MB took 30-80 ms of the agent).
 */
static bool room_for(const struct table_queue *q, const struct executable *exe, size_t need,
		     uint64_t now_ns)
{
	return unwind_maps__pool_free(q->um) >= need || victim(q, exe, need, now_ns);
}

int table_queue__run(struct table_queue *q, uint64_t now_ns, uint64_t budget_ns)
{
	uint64_t t0 = mono_ns();
	int loaded = collect(q, now_ns);
	ssize_t i;

	while ((i = pick(q, now_ns)) >= 0) {
		struct queued it = q->items[i];

		q->items[i] = q->items[--q->cnt];
		if (it.need && !room_for(q, it.exe, it.need, now_ns)) {
			/* Still no room: wait again, for another sample after the retry period. */
			wait_evicted(q, it.exe, it.st, now_ns, it.need);
			q->stats.no_room_waits++;
			continue;
		}
		if (it.st->wanted)
			q->stats.sampled_first++;
		if (giant(it.exe) && !it.cached) {
			if (!submit(q, it.exe, it.st))
				continue;
			/* No fd to give: build here. */
		}
		if (!serve_inline(q, it.exe, it.st, now_ns))
			loaded++;
		if (mono_ns() - t0 >= budget_ns)
			break;
	}
	return loaded;
}

void table_queue__prime(struct table_queue *q, uint64_t now_ns, uint64_t budget_ns)
{
	uint64_t t0 = mono_ns();
	bool was = q->sampled_only;

	/* Giant files are only handed to the worker, which keeps building after we return. */
	q->sampled_only = false;
	while (mono_ns() - t0 < budget_ns && pick(q, now_ns) >= 0)
		table_queue__run(q, now_ns, budget_ns - (mono_ns() - t0));
	q->sampled_only = was;
	q->started = true;
}

void table_queue__drain(struct table_queue *q, uint64_t now_ns)
{
	for (;;) {
		table_queue__run(q, now_ns, UINT64_MAX);
		if (!q->busy)
			break;
		usleep(1000);
	}
}

bool table_queue__urgent(const struct table_queue *q)
{
	size_t i;

	for (i = 0; i < q->cnt; i++)
		if (q->items[i].st->state == UNWIND_TABLE_QUEUED && q->items[i].st->wanted &&
		    !(q->busy && giant(q->items[i].exe)) && !held_giant(q, &q->items[i]))
			return true;
	return false;
}

bool table_queue__building_wanted(const struct table_queue *q)
{
	size_t i;

	if (q->busy && q->inflight)
		return true;
	for (i = 0; i < q->cnt; i++)
		if (q->items[i].st->state == UNWIND_TABLE_QUEUED && q->items[i].st->wanted &&
		    !held_giant(q, &q->items[i]))
			return true;
	return false;
}

void table_queue__stats(const struct table_queue *q, struct table_queue_stats *out)
{
	size_t i;

	*out = q->stats;
	out->queued = 0;
	for (i = 0; i < q->cnt; i++)
		out->queued += q->items[i].st->state == UNWIND_TABLE_QUEUED;
	out->queued += q->busy;
}
