/* A runtime's cache of what it read from processes' memory for their frames (a code object's
 * names and line table, a function, a method), and the read behind it: from the sampled
 * process first, then from the process whose runtime state walked the stack (the parent a
 * forked child shares its objects with, still readable once the child has exited), and the
 * marker frames for what could not be read ("unreadable", "reused": the runtime's reasons).
 *
 * Bounded in memory and time against a hostile process (one that makes its objects huge, or
 * many): what entries hold beyond themselves (key.bytes, set by the read) is capped in total at
 * bytes_max, older entries evicted in clock order to make room; and each process has a budget
 * of read time (READ_BUDGET_* in symbol_cache.c: 1 % of a core, with a burst for the first
 * samples of a big program): a read beyond it is not made, its frame becomes a counted marker.
 *
 * Invariants: cap entries of entry_sz bytes, fixed at init, set-associative (base/lru_sets.h);
 * every entry begins with struct symbol_cache_key, keyed by (pid, attach generation, address,
 * kind) and checked against the frame's cookie, so an object freed and its address reused is
 * read again, never shown under the old name. Each read gets a serial of its own (key.serial,
 * from 1, never reused by the cache): what one serial names never changes, so a runtime may
 * give it as its symbol's memo (interp.h). The cache owns its entries: clear() frees what
 * an entry holds, the cache then zeroes it. A returned entry is borrowed until the cache's next
 * get.
 * Not thread-safe.
 */
#ifndef STACKSCOPE_SYMBOL_CACHE_H
#define STACKSCOPE_SYMBOL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/lru_sets.h"

struct interp_proc_base;
struct interp_symbol;

struct symbol_cache_key {
	pid_t pid; /* the process whose state it is; 0: empty slot */
	uint32_t gen;
	uint64_t addr;
	uint32_t cookie; /* what the read found, compared with the frame's */
	uint32_t bytes;  /* what the entry holds beyond itself (set by the read) */
	uint8_t kind;    /* what addr was read as (a runtime's own distinction) */
	uint64_t serial; /* this read's, unique in the cache (see above) */
};

/* Fill entry (zeroed, its key aside from the cookie left to the cache) with the object at addr
 * of process `from`: 0 or -errno. What it allocated before failing is freed by clear().
 */
typedef int (*symbol_cache_read_fn)(const void *ctx, pid_t from, uint64_t addr, void *entry);

/* What the cache reports of its reads: the counters it bumps (indices in the runtime's stats
 * array given to init; -1: not counted), objects read, unreadable, found reused, not read
 * (over the process's budget), evicted for room (bytes_max); and the reasons of the marker
 * frames it gives for the unreadable and reused ones (interp__marker). A read over budget gives
 * SYMBOL_CACHE_OVER_BUDGET.
 */
struct symbol_cache_report {
	int reads, unreadable, reused, over_budget, evicted;
	const char *unreadable_why, *reused_why;
};

#define SYMBOL_CACHE_OVER_BUDGET "over the process's read budget"
/* bytes_max unless the runtime sets another after init */
#define SYMBOL_CACHE_BYTES_MAX (16u << 20)

struct symbol_cache {
	uint8_t *entries; /* cap entries, then one for reads in progress */
	size_t cap, entry_sz;
	struct lru_sets slots;
	size_t bytes, bytes_max; /* what entries hold beyond themselves (key.bytes), its cap */
	size_t hand;             /* the next entry the clock evicts for room */
	uint64_t serial;         /* the last read's */
	bool any_cookie;         /* a frame's cookie 0 says "unknown": any entry's matches */
	void (*clear)(void *ctx, void *entry);
	void *clear_ctx;
	const struct symbol_cache_report *report;
	uint64_t *stats;
};

/* cap: a power of two, at least LRU_WAYS. any_cookie: see above. report (static) and stats
 * outlive the cache. 0 or -ENOMEM, -EINVAL.
 */
int symbol_cache__init(struct symbol_cache *c, size_t cap, size_t entry_sz, bool any_cookie,
		       void (*clear)(void *ctx, void *entry), void *clear_ctx,
		       const struct symbol_cache_report *report, uint64_t *stats);
/* Frees every entry (clear()) and the table; accepts a zeroed or half-built cache. */
void symbol_cache__free(struct symbol_cache *c);

/* The entry of the object at addr, read as `kind`, that frame-walk state `owner` saw with
 * `cookie`: cached, or read (from reader, then owner->pid, the time charged to owner's budget)
 * into the slot it takes. NULL with a marker in *out when unreadable, read with another cookie
 * (reused memory) or not read (owner over its budget): the slot keeps its old entry. *read_from (NULL: not wanted): the process it was read from now, 0 when it
 * was cached.
 */
void *symbol_cache__get(struct symbol_cache *c, struct interp_proc_base *owner, pid_t reader,
			uint64_t addr, uint32_t cookie, uint8_t kind, symbol_cache_read_fn read,
			const void *read_ctx, struct interp_symbol *out, pid_t *read_from);

/* A runtime's own reads outside the cache (a line table it does not keep, read again for a
 * frame) on the same budget: false when owner has none left now (the read is not to be made:
 * count it, give the frame what is known without it); else *start for budget_end, which
 * charges the time since to owner. *start is the time now on both paths (CLOCK_MONOTONIC; at
 * the tick's resolution when the budget was already spent).
 */
bool symbol_cache__budget_begin(struct interp_proc_base *owner, uint64_t *start);
void symbol_cache__budget_end(struct interp_proc_base *owner, uint64_t start);

#endif
