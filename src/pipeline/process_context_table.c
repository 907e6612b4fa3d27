/* The processes' OpenTelemetry process contexts (process_context_table.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/u64_map.h"
#include "pipeline/process_context_table.h"
#include "proc/process.h"
#include "proc/process_context.h"

struct pctx_entry {
	pid_t pid;
	bool alive;
	bool probing;          /* new: maps probed until PCTX_PROBE_LAST_NS after discovery */
	bool sampled;          /* a sample since discovery or the last probe */
	uint64_t addr;         /* the header, 0: not found */
	uint64_t published_ns; /* publish time of what attrs/refused describe (0: nothing read) */
	uint64_t seen_ns;      /* discovery (or exec) */
	uint64_t probe_gap_ns; /* the next probe's distance from the last one */
	uint64_t due_ns;       /* next probe or check, 0: none */
	uint64_t exited_ns;
	struct pctx_attrs attrs; /* cnt == 0 and !have: none */
	bool have;
	const char *service; /* attrs' service.name (borrowed from attrs), or NULL */
	const char *refused; /* static reason, or NULL */
};

struct pctx_table {
	struct u64_map by_pid; /* pid + 1 -> struct pctx_entry */
	bool started;
	uint64_t next_due_ns; /* no entry is due before (0: run the next tick) */
	uint64_t next_reap_ns;
	struct pctx_stats stats;
	uint8_t *buf; /* PCTX_PAYLOAD_MAX */
};

#define PCTX_STAT_NAME(id, name) name,
static const char *const stat_names[] = { PCTX_STATS(PCTX_STAT_NAME) };

const char *pctx_stat__name(enum pctx_stat s)
{
	return s < PCTX_STAT_CNT ? stat_names[s] : "?";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct pctx_table *pctx_table__new(void)
{
	struct pctx_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->buf = malloc(PCTX_PAYLOAD_MAX);
	if (!t->buf) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void entry__free(void *v)
{
	struct pctx_entry *e = v;

	if (!e)
		return;
	pctx_attrs__clear(&e->attrs);
	free(e);
}

void pctx_table__free(struct pctx_table *t)
{
	if (!t)
		return;
	u64_map__free_values(&t->by_pid, entry__free);
	free(t->buf);
	free(t);
}

void pctx_table__started(struct pctx_table *t)
{
	t->started = true;
}

static void forget_context(struct pctx_entry *e)
{
	e->service = NULL;
	pctx_attrs__clear(&e->attrs);
	e->have = false;
}

static void set_due(struct pctx_table *t, struct pctx_entry *e, uint64_t due_ns)
{
	e->due_ns = due_ns;
	if (due_ns && (!t->next_due_ns || due_ns < t->next_due_ns))
		t->next_due_ns = due_ns;
}

/* A new image (or pid): nothing known; probes from now on if the table has started. */
static void entry__reset(struct pctx_table *t, struct pctx_entry *e, uint64_t now_ns)
{
	forget_context(e);
	e->alive = true;
	e->addr = 0;
	e->published_ns = 0;
	e->refused = NULL;
	e->seen_ns = now_ns;
	e->probing = t->started;
	e->sampled = false;
	e->probe_gap_ns = PCTX_PROBE_FIRST_NS;
	set_due(t, e, e->probing ? now_ns + PCTX_PROBE_FIRST_NS : 0);
}

static struct pctx_entry *get_or_add(struct pctx_table *t, pid_t pid, uint64_t now_ns)
{
	struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	if (e)
		return e;
	if (t->by_pid.cnt >= PCTX_TABLE_CAP) {
		t->stats.v[PCTX_STAT_TABLE_FULL]++;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	if (u64_map__set(&t->by_pid, (uint64_t)pid + 1, e)) {
		free(e);
		return NULL;
	}
	entry__reset(t, e, now_ns);
	return e;
}

static const char *const refusals[] = {
	[PCTX_GONE] = "mapping gone",
	[PCTX_BAD_HEADER] = "bad header",
	[PCTX_TOO_BIG] = "payload too big",
	[PCTX_BAD_PAYLOAD] = "payload unreadable",
	[PCTX_TORN] = "torn",
};

/* Reads e's context at e->addr (the header; the payload when republished). */
static void entry__read(struct pctx_table *t, struct pctx_entry *e)
{
	struct pctx_attrs attrs;
	enum pctx_read_err r;
	unsigned int tries = 0;
	uint64_t published = 0;
	size_t len = 0;
	int err;

	t->stats.v[PCTX_STAT_CHECKS]++;
	r = process_context__read(e->pid, e->addr, e->published_ns, t->buf, &len, &published,
				  &tries);
	switch (r) {
	case PCTX_UNCHANGED:
	case PCTX_NO_PROCESS: /* exited: what it published stays for its last samples */
		return;
	case PCTX_OK:
		break;
	case PCTX_TORN: /* keep what was true until now; tried again at the next check */
		t->stats.v[PCTX_STAT_TORN]++;
		return;
	case PCTX_NOT_READY: /* mapped before its header is written: read at the next check */
		return;
	case PCTX_BAD_HEADER: /* maybe being written: checked again, counted once */
		if (e->refused != refusals[r])
			t->stats.v[PCTX_STAT_BAD_HEADER]++;
		forget_context(e);
		e->refused = refusals[r];
		e->published_ns = 0;
		return;
	case PCTX_GONE: /* unmapped (the SDK dropped it) */
		t->stats.v[PCTX_STAT_GONE]++;
		forget_context(e);
		e->refused = refusals[r];
		e->addr = 0;
		e->published_ns = 0;
		return;
	case PCTX_TOO_BIG:
	case PCTX_BAD_PAYLOAD:
		t->stats.v[r == PCTX_TOO_BIG ? PCTX_STAT_TOO_BIG : PCTX_STAT_BAD_PAYLOAD]++;
		forget_context(e);
		e->refused = refusals[r];
		e->published_ns = published; /* not read again until republished */
		return;
	}
	err = pctx_attrs__decode(t->buf, len, &attrs);
	e->published_ns = published;
	if (err) {
		if (err == -EBADMSG)
			t->stats.v[PCTX_STAT_MALFORMED]++;
		forget_context(e);
		e->refused = err == -EBADMSG ? "payload malformed" : "out of memory";
		if (err == -ENOMEM)
			e->published_ns = 0; /* tried again */
		return;
	}
	t->stats.v[e->have ? PCTX_STAT_REPUBLISHED : PCTX_STAT_READ]++;
	t->stats.v[PCTX_STAT_ATTRS_SKIPPED] += attrs.skipped;
	forget_context(e);
	e->attrs = attrs;
	e->have = true;
	e->service = pctx_attrs__find(&e->attrs, "service.name")
			     ? pctx_attrs__find(&e->attrs, "service.name")->str
			     : NULL;
	e->refused = NULL;
}

/* e's mapping found at addr (a scan or a probe). */
static void entry__found(struct pctx_table *t, struct pctx_entry *e, uint64_t addr, uint64_t now_ns)
{
	if (addr == e->addr)
		return;
	t->stats.v[PCTX_STAT_PUBLISHED]++;
	forget_context(e);
	e->addr = addr;
	e->published_ns = 0;
	e->probing = false;
	entry__read(t, e);
	set_due(t, e, e->addr ? now_ns + PCTX_RECHECK_NS : 0);
}

void pctx_table__scanned(struct pctx_table *t, const struct process *p, uint64_t now_ns)
{
	uint64_t t0 = mono_ns();
	struct pctx_entry *e = get_or_add(t, p->pid, now_ns);

	if (!e)
		return;
	if (!e->alive)
		entry__reset(t, e, now_ns); /* a pid reused */
	if (p->otel_ctx_addr)
		entry__found(t, e, p->otel_ctx_addr, now_ns);
	t->stats.read_ns += mono_ns() - t0;
}

void pctx_table__exec(struct pctx_table *t, pid_t pid, uint64_t now_ns)
{
	struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	if (e)
		entry__reset(t, e, now_ns);
}

void pctx_table__exited(struct pctx_table *t, pid_t pid, uint64_t now_ns)
{
	struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	if (!e)
		return;
	if (!e->have && !e->refused) {
		/* Nothing its last samples could carry: forgotten now, so a churn of short
		 * processes neither piles up entries for PCTX_EXITED_KEEP_NS nor lengthens every
		 * tick's pass over the table.
		 */
		entry__free(u64_map__del(&t->by_pid, (uint64_t)pid + 1));
		return;
	}
	e->alive = false;
	e->exited_ns = now_ns;
	e->due_ns = 0;
}

static void entry__due(struct pctx_table *t, struct pctx_entry *e, uint64_t now_ns)
{
	uint64_t addr;

	if (e->addr) {
		entry__read(t, e);
		set_due(t, e, e->addr ? now_ns + PCTX_RECHECK_NS : 0);
		return;
	}
	if (!e->probing) {
		e->due_ns = 0;
		return;
	}
	if (e->sampled) {
		e->sampled = false;
		t->stats.v[PCTX_STAT_PROBES]++;
		addr = process_context__probe(e->pid);
		if (addr) {
			entry__found(t, e, addr, now_ns);
			return;
		}
	} else {
		t->stats.v[PCTX_STAT_PROBES_SKIPPED]++;
	}
	if (now_ns - e->seen_ns >= PCTX_PROBE_LAST_NS) {
		e->probing = false;
		e->due_ns = 0;
		return;
	}
	e->probe_gap_ns *= 2;
	set_due(t, e, now_ns + e->probe_gap_ns);
}

void pctx_table__tick(struct pctx_table *t, uint64_t now_ns)
{
	struct pctx_entry *e;
	uint64_t key, t0, gone[256];
	size_t it = 0, gone_cnt = 0, i;
	bool reap;

	reap = now_ns >= t->next_reap_ns;
	if ((!t->next_due_ns || now_ns < t->next_due_ns) && !reap)
		return;
	t0 = mono_ns();
	t->next_due_ns = 0;
	if (reap)
		t->next_reap_ns = now_ns + PCTX_EXITED_KEEP_NS / 10;
	while (u64_map__next(&t->by_pid, &it, &key, (void **)&e)) {
		if (e->alive && e->due_ns && e->due_ns <= now_ns)
			entry__due(t, e, now_ns);
		else if (e->due_ns)
			set_due(t, e, e->due_ns);
	}
	/* exited long ago: forgotten (not while iterating; the rest at the next reap) */
	for (it = 0; reap && gone_cnt < 256 && u64_map__next(&t->by_pid, &it, &key, (void **)&e);) {
		if (!e->alive && now_ns - e->exited_ns >= PCTX_EXITED_KEEP_NS)
			gone[gone_cnt++] = key;
	}
	for (i = 0; i < gone_cnt; i++)
		entry__free(u64_map__del(&t->by_pid, gone[i]));
	if (gone_cnt == 256)
		t->next_reap_ns = now_ns; /* more to do */
	t->stats.read_ns += mono_ns() - t0;
}

const struct pctx_attrs *pctx_table__get(const struct pctx_table *t, pid_t pid)
{
	const struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	return e && e->have ? &e->attrs : NULL;
}

const char *pctx_table__service(struct pctx_table *t, pid_t pid, const char **refused)
{
	struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	if (e)
		e->sampled = true;
	*refused = e && !e->have ? e->refused : NULL;
	return e && e->have ? e->service : NULL;
}

const char *const *pctx_table__key_map(const struct pctx_table *t, pid_t pid, size_t *cnt)
{
	const struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	if (!e || !e->have || !e->attrs.key_map) {
		*cnt = 0;
		return NULL;
	}
	*cnt = e->attrs.key_map_cnt;
	return (const char *const *)e->attrs.key_map;
}

const char *pctx_table__refused(const struct pctx_table *t, pid_t pid)
{
	const struct pctx_entry *e = u64_map__get(&t->by_pid, (uint64_t)pid + 1);

	return e && !e->have ? e->refused : NULL;
}

const struct pctx_stats *pctx_table__stats(const struct pctx_table *t)
{
	return &t->stats;
}

void pctx_stats__format(const struct pctx_stats *s, char *buf, size_t sz)
{
	size_t i, n = 0;
	int k;

	buf[0] = '\0';
	for (i = 0; i < PCTX_STAT_CNT && n < sz; i++) {
		k = snprintf(buf + n, sz - n, "%s%s %llu", i ? ", " : "", stat_names[i],
			     (unsigned long long)s->v[i]);
		n += k > 0 ? (size_t)k : 0;
	}
	if (n < sz)
		snprintf(buf + n, sz - n, "; %.1f ms", (double)s->read_ns / 1e6);
}
