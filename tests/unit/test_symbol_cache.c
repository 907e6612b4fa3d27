/* A runtime's cache of what it read from processes (src/interp/common/symbol_cache.c), against
 * what a hostile process can make it do: entries that hold a lot (the total stays under
 * bytes_max, older entries evicted, counted) and reads that cost a lot of time (a process over
 * its read budget gets a counted marker instead of a read, and its cached entries still).
 * The read function here is the cache's own contract: fill the entry, say what it holds.
 */
#include <time.h>

#include "interp/common/symbol_cache.h"
#include "interp/interp.h"
#include "test.h"

enum { STAT_READS, STAT_UNREADABLE, STAT_REUSED, STAT_OVER_BUDGET, STAT_EVICTED, STAT_CNT };

static const struct symbol_cache_report report = { STAT_READS,       STAT_UNREADABLE, STAT_REUSED,
						   STAT_OVER_BUDGET, STAT_EVICTED,    "unreadable",
						   "reused" };

struct entry {
	struct symbol_cache_key key;
	char *held; /* what the read allocated: key.bytes of it */
};

struct reader {
	uint32_t bytes;     /* what each entry holds */
	long sleep_ns;      /* what each read takes */
	unsigned int calls; /* reads made */
};

static void entry_clear(void *ctx, void *entry)
{
	(void)ctx;
	free(((struct entry *)entry)->held);
}

static int read_entry(const void *ctx, pid_t from, uint64_t addr, void *entry)
{
	struct reader *r = (struct reader *)ctx;
	struct entry *e = entry;
	struct timespec ts = { 0, r->sleep_ns };

	(void)from;
	(void)addr;
	r->calls++;
	if (r->sleep_ns)
		nanosleep(&ts, NULL);
	e->held = calloc(1, r->bytes ? r->bytes : 1);
	if (!e->held)
		return -ENOMEM;
	e->key.bytes = r->bytes;
	return 0;
}

static void *get(struct symbol_cache *c, struct interp_proc_base *owner, uint64_t addr,
		 struct reader *r, struct interp_symbol *out)
{
	memset(out, 0, sizeof(*out));
	return symbol_cache__get(c, owner, owner->pid, addr, 0, 0, read_entry, r, out, NULL);
}

/* 100 entries of 300 bytes into a cache allowed 1,000: never more than that held, the newest
 * kept, every eviction counted, and what is freed given back (ASan: nothing leaks).
 */
TEST(bytes_capped)
{
	uint64_t stats[STAT_CNT] = { 0 };
	struct interp_proc_base owner = { .pid = 100, .gen = 1 };
	struct reader r = { .bytes = 300 };
	struct interp_symbol out;
	struct symbol_cache c;
	uint64_t a;
	size_t most = 0;

	REQUIRE(symbol_cache__init(&c, 64, sizeof(struct entry), true, entry_clear, NULL, &report,
				   stats) == 0);
	CHECK_EQ_INT(c.bytes_max, SYMBOL_CACHE_BYTES_MAX);
	c.bytes_max = 1000;
	for (a = 1; a <= 100; a++) {
		CHECK(get(&c, &owner, a * 64, &r, &out) != NULL);
		most = c.bytes > most ? c.bytes : most;
	}
	CHECK_EQ_INT(most, 900);
	CHECK_EQ_INT(stats[STAT_READS], 100);
	CHECK_EQ_INT(stats[STAT_EVICTED], 97);
	r.calls = 0;
	CHECK(get(&c, &owner, 100 * 64, &r, &out) != NULL); /* the newest: cached */
	CHECK_EQ_INT(r.calls, 0);
	CHECK(get(&c, &owner, 1 * 64, &r, &out) != NULL); /* the oldest: evicted, read again */
	CHECK_EQ_INT(r.calls, 1);
	symbol_cache__free(&c);
}

/* Reads of at least 20 ms each (more on a loaded box: a sleep never ends early): the burst
 * (250 ms) goes in at most 13 reads and a little refill, then the process's frames are
 * markers, counted, without a read; what it has cached is still answered; another process has
 * its own budget.
 */
TEST(read_budget)
{
	uint64_t stats[STAT_CNT] = { 0 };
	struct interp_proc_base owner = { .pid = 100, .gen = 1 }, other = { .pid = 200, .gen = 2 };
	struct reader r = { .bytes = 8, .sleep_ns = 20 * 1000 * 1000 };
	struct interp_symbol out;
	struct symbol_cache c;
	unsigned int i, got = 0;

	REQUIRE(symbol_cache__init(&c, 64, sizeof(struct entry), true, entry_clear, NULL, &report,
				   stats) == 0);
	for (i = 0; i < 30; i++)
		got += get(&c, &owner, 64 + i * 64, &r, &out) != NULL;
	CHECK(got >= 3 && got <= 14); /* 3: reads of 80 ms would still fit */
	CHECK_EQ_INT(r.calls, got);
	CHECK_EQ_INT(stats[STAT_OVER_BUDGET], 30 - got);
	CHECK(out.marker);
	CHECK_STR(out.function, SYMBOL_CACHE_OVER_BUDGET);
	CHECK(get(&c, &owner, 64, &r, &out) != NULL); /* cached: no read, no budget */
	CHECK_EQ_INT(r.calls, got);
	r.sleep_ns = 0;
	CHECK(get(&c, &other, 64, &r, &out) != NULL);
	CHECK_EQ_INT(r.calls, got + 1);
	symbol_cache__free(&c);
}

/* Each read has a serial of its own, the memo a runtime may give its symbols (interp.h): the
 * same entry answered from the cache keeps it; another object, or the same one read again
 * after its eviction, never has an earlier one (what a caller made of the old read is not
 * taken for the new one).
 */
TEST(serials)
{
	uint64_t stats[STAT_CNT] = { 0 };
	struct interp_proc_base owner = { .pid = 100, .gen = 1 };
	struct reader r = { .bytes = 300 };
	struct interp_symbol out;
	struct symbol_cache c;
	struct entry *e;
	uint64_t first, second, a;

	REQUIRE(symbol_cache__init(&c, 64, sizeof(struct entry), true, entry_clear, NULL, &report,
				   stats) == 0);
	c.bytes_max = 1000;
	REQUIRE((e = get(&c, &owner, 64, &r, &out)) != NULL);
	first = e->key.serial;
	CHECK(first != 0);
	REQUIRE((e = get(&c, &owner, 128, &r, &out)) != NULL);
	second = e->key.serial;
	CHECK(second != 0 && second != first);
	REQUIRE((e = get(&c, &owner, 64, &r, &out)) != NULL); /* cached */
	CHECK(e->key.serial == first);
	for (a = 3; a <= 10; a++) /* evicts the first two for room */
		CHECK(get(&c, &owner, a * 64, &r, &out) != NULL);
	REQUIRE((e = get(&c, &owner, 64, &r, &out)) != NULL); /* read again */
	CHECK(e->key.serial > second);
	symbol_cache__free(&c);
}

int main(void)
{
	RUN(bytes_capped);
	RUN(serials);
	RUN(read_budget);
	return test_summary();
}
