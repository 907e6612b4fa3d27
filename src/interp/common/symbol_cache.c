/* A runtime's cache of what it read from processes' memory (see symbol_cache.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/u64_map.h"
#include "interp/common/symbol_cache.h"
#include "interp/interp.h"

/* A process's read budget: READ_BUDGET_PER_S ns of reading per second of its life (1 % of a
 * core), saved up to READ_BUDGET_BURST_NS (what the first samples of a large program take: some
 * 10,000 objects at ~20 us). A read that costs more than the budget left is made, and the
 * budget goes negative: the next reads wait until it has been paid back.
 */
#define READ_BUDGET_PER_S (10 * 1000 * 1000LL * budget_scale())
#define READ_BUDGET_BURST_NS (250 * 1000 * 1000LL * budget_scale())
#define READ_BUDGET_SCALE_MAX 1000

/* STACKSCOPE_READ_BUDGET_SCALE=N (1 to 1000, default 1) multiplies both: for an emulated
 * machine (the kernel matrix's arm64 guest under TCG, on a loaded host), where a read's wall
 * time is that of a vCPU the host deschedules, tens of times a real one's.
 */
static int64_t budget_scale(void)
{
	static int64_t scale;

	if (!scale) {
		const char *v = getenv("STACKSCOPE_READ_BUDGET_SCALE");
		long n = v ? strtol(v, NULL, 10) : 1;

		scale = n >= 1 && n <= READ_BUDGET_SCALE_MAX ? n : 1;
	}
	return scale;
}

int symbol_cache__init(struct symbol_cache *c, size_t cap, size_t entry_sz, bool any_cookie,
		       void (*clear)(void *ctx, void *entry), void *clear_ctx,
		       const struct symbol_cache_report *report, uint64_t *stats)
{
	int err;

	*c = (struct symbol_cache){ .cap = cap,
				    .entry_sz = entry_sz,
				    .bytes_max = SYMBOL_CACHE_BYTES_MAX,
				    .any_cookie = any_cookie,
				    .clear = clear,
				    .clear_ctx = clear_ctx,
				    .report = report,
				    .stats = stats };
	if (entry_sz < sizeof(struct symbol_cache_key) || !clear)
		return -EINVAL;
	c->entries = calloc(cap + 1, entry_sz); /* the last: reads in progress */
	if (!c->entries)
		return -ENOMEM;
	err = lru_sets__init(&c->slots, cap);
	if (err) {
		free(c->entries);
		c->entries = NULL;
	}
	return err;
}

static void *entry_at(const struct symbol_cache *c, size_t i)
{
	return c->entries + i * c->entry_sz;
}

/* What entry e holds freed (the runtime's clear), and e zeroed. */
static void clear_entry(const struct symbol_cache *c, void *e)
{
	c->clear(c->clear_ctx, e);
	memset(e, 0, c->entry_sz);
}

/* A cached entry cleared, the bytes it held given back. */
static void drop_entry(struct symbol_cache *c, struct symbol_cache_key *e)
{
	c->bytes -= e->bytes <= c->bytes ? e->bytes : c->bytes;
	clear_entry(c, e);
}

void symbol_cache__free(struct symbol_cache *c)
{
	size_t i;

	for (i = 0; c->entries && i <= c->cap; i++)
		clear_entry(c, entry_at(c, i));
	free(c->entries);
	lru_sets__free(&c->slots);
	memset(c, 0, sizeof(*c));
}

static void count(const struct symbol_cache *c, int counter)
{
	if (counter >= 0)
		c->stats[counter]++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Tops owner's budget up for the whole milliseconds since it last was; true if some is left. */
static bool budget_left(struct interp_proc_base *owner, uint64_t now)
{
	const int64_t per_ms = READ_BUDGET_PER_S / 1000;

	if (!owner->budget_at) {
		owner->budget_ns = READ_BUDGET_BURST_NS;
		owner->budget_at = now;
	} else if (now > owner->budget_at) {
		uint64_t ms = (now - owner->budget_at) / 1000000ULL;

		if (ms >= (uint64_t)(READ_BUDGET_BURST_NS / per_ms))
			owner->budget_ns = READ_BUDGET_BURST_NS;
		else
			owner->budget_ns += (int64_t)ms * per_ms;
		if (owner->budget_ns > READ_BUDGET_BURST_NS)
			owner->budget_ns = READ_BUDGET_BURST_NS;
		owner->budget_at += ms * 1000000ULL;
	}
	return owner->budget_ns > 0;
}

/* CLOCK_MONOTONIC at the kernel tick's resolution: no clock source read (a paravirtual
 * clock's is most of what a frame of a process over its budget costs in a VM).
 */
static uint64_t coarse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

bool symbol_cache__budget_begin(struct interp_proc_base *owner, uint64_t *start)
{
	/* still over (every frame of a hostile process): the refill is whole milliseconds, a
	 * tick's lag only delays it; the time a read is charged is the precise clock's
	 */
	if (owner->budget_at && owner->budget_ns <= 0) {
		*start = coarse_now_ns(); /* set on every path: callers use it as "now" */
		if (!budget_left(owner, *start))
			return false;
	}
	*start = now_ns();
	return budget_left(owner, *start);
}

void symbol_cache__budget_end(struct interp_proc_base *owner, uint64_t start)
{
	owner->budget_ns -= (int64_t)(now_ns() - start);
}

/* Evicts entries in clock order, never `keep`, until what they hold fits bytes_max. */
static void make_room(struct symbol_cache *c, const void *keep)
{
	size_t tries;

	for (tries = 0; c->bytes > c->bytes_max && tries < c->cap; tries++) {
		struct symbol_cache_key *e = entry_at(c, c->hand);

		c->hand = (c->hand + 1) % c->cap;
		if ((const void *)e == keep || !e->pid)
			continue;
		drop_entry(c, e);
		count(c, c->report->evicted);
	}
}

void *symbol_cache__get(struct symbol_cache *c, struct interp_proc_base *owner, pid_t reader,
			uint64_t addr, uint32_t cookie, uint8_t kind, symbol_cache_read_fn read,
			const void *read_ctx, struct interp_symbol *out, pid_t *read_from)
{
	/* Cached under the process whose state it is: a forked child shares its parent's objects
	 * at the same addresses (the cookie catches one the child replaced).
	 */
	size_t slot = lru_sets__slot(
		&c->slots, u64_hash(addr ^ u64_hash((uint64_t)owner->pid << 32 | owner->gen)));
	struct symbol_cache_key *e = entry_at(c, slot), *fresh = entry_at(c, c->cap);
	bool cookie_ok = (c->any_cookie && !cookie) || e->cookie == cookie;
	pid_t src = reader;
	uint64_t start;
	int err;

	if (read_from)
		*read_from = 0;
	if (e->pid == owner->pid && e->gen == owner->gen && e->addr == addr && e->kind == kind &&
	    cookie_ok)
		return e;
	if (!symbol_cache__budget_begin(owner, &start)) {
		count(c, c->report->over_budget);
		interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
		return NULL;
	}
	count(c, c->report->reads);
	clear_entry(c, fresh);
	err = read(read_ctx, src, addr, fresh);
	if (err && reader != owner->pid) { /* the child is gone: its parent has the same */
		clear_entry(c, fresh);
		src = owner->pid;
		err = read(read_ctx, src, addr, fresh);
	}
	symbol_cache__budget_end(owner, start);
	if (!err && (!c->any_cookie || cookie) && fresh->cookie != cookie) {
		clear_entry(c, fresh);
		count(c, c->report->reused);
		interp__marker(out, c->report->reused_why);
		return NULL;
	}
	if (err) {
		clear_entry(c, fresh);
		count(c, c->report->unreadable);
		interp__marker(out, c->report->unreadable_why);
		return NULL;
	}
	drop_entry(c, e);
	memcpy(e, fresh, c->entry_sz);
	memset(fresh, 0, c->entry_sz);
	e->pid = owner->pid;
	e->gen = owner->gen;
	e->addr = addr;
	e->kind = kind;
	e->serial = ++c->serial;
	c->bytes += e->bytes;
	make_room(c, e);
	if (read_from)
		*read_from = src;
	return e;
}
