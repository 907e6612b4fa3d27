/* Deferred samples: pairing, queue, replay, expiry. See deferred.h. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/bpf.h>

#include "base/log.h"
#include "base/u64_map.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "unwind/deferred.h"
#include "unwind/replay_runtime.h"
#include "unwind/stack_replay.h"
#include "unwind/unwind_maps.h"

#define RULE_CAP 65536u
/* BPF array elements are 8-byte aligned in the memory-mapped view. */
#define RULE_STRIDE ((sizeof(struct unwind_rule) + 7) & ~(size_t)7)
/* Entry pairs of the pool remembered between lookups (direct-mapped by index). */
#define ENTRY_CACHE_SLOTS 1024
/* The pages of tables read (a hash lookup each: a syscall per frame of every replay, and a
 * sample waiting for a table is replayed again at every change), kept like the pairs.
 */
#define PAGE_CACHE_SLOTS 256
/* A sample waiting for a process that was never scanned asks for a scan at most this often. */
#define RESCAN_MIN_INTERVAL_NS (100 * 1000 * 1000ULL)

/* One deferred sample: eBPF's record and its stack copy, as received. */
struct deferred_sample {
	struct deferred_sample *next;
	uint64_t queued_ns;
	size_t rec_size, stack_size;
	struct sample_record *rec;
	struct stack_copy_record *stack;
};

/* One pair of the entry pool as read (pair_1: its index + 1; 0: empty). */
struct entry_slot {
	uint64_t pair_1;
	struct unwind_entry_pair entries;
};

struct page_slot {
	uint64_t file_id;
	uint64_t page_1; /* page + 1, 0: empty */
	struct unwind_page page;
};

struct deferred {
	struct process_table *pt;
	struct exe_registry *reg;
	struct unwind_maps *um; /* borrowed: the files' table status */
	deferred_emit_fn emit;
	deferred_hold_fn hold; /* NULL: none */
	void *ctx;
	int pages_fd;
	/* The entry pool's segments (um's) are read a pair at a time (a lookup: 0.5-0.7 us
	 * here, a binary search ~10 of them; a batch of 512 pairs took 115 us), not mapped: a
	 * mapping of a BPF array has every page in our RSS from the start (2 MiB a segment) on
	 * top of the map memory it already is. The pairs read are kept until anything changes
	 * (deferred__changed(): tables loaded or unloaded), so retried replays read no more.
	 */
	struct entry_slot *entry_cache; /* ENTRY_CACHE_SLOTS, by pair of the whole pool's index */
	struct page_slot *page_cache;   /* PAGE_CACHE_SLOTS, by file and page */
	uint64_t entry_cache_gen;       /* the gen its pairs and pages were read in */
	const uint8_t *rules;           /* read-only view of the rule array (1 MiB) */
	struct u64_map pending;         /* cpu + 1 -> the stack copy waiting for its sample */
	struct deferred_sample *head, *tail; /* oldest first */
	uint64_t gen, tried_gen;             /* changes seen / when the queue was last tried */
	struct deferred_stats stats;
	struct sample_record out; /* the completed record being emitted */
	/* out's frames with eBPF's runtime frames placed among them (replay_runtime.h) */
	struct user_frame merged[SS_MAX_USER_FRAMES];
	/* What the world answers while a replay runs. */
	uint64_t sample_ns;  /* time of the sample being replayed */
	uint64_t sample_seq; /* its map_seq (for the process replayed with, else 0) */
	uint64_t give_up_ns; /* when the sample being replayed stops waiting */
	bool no_room;        /* it waits for a table that cannot come before give_up_ns */
	struct mapping_info mapping;
	struct file_info file;
	struct unwind_page page;
	struct replay_world world;
};

/* ---- the world: what eBPF would read, from userspace's side ---- */

static const struct mapping_info *world_mapping(void *ctx, uint32_t pid, uint64_t pc, bool *wait)
{
	struct deferred *d = ctx;
	const struct process *p = process_table__find(d->pt, (pid_t)pid);
	const struct exec_mapping *m;

	if (!p) {
		*wait = true; /* never scanned yet */
		return NULL;
	}
	m = process__mapping_at(p, pc);
	if (!m) {
		/* Not mapped as of a scan that followed the sample (or the process is gone):
		 * anonymous memory, as eBPF would have seen it.
		 */
		if (p->alive && p->scanned_ns < d->sample_ns)
			*wait = true;
		return NULL;
	}
	if (!process__view_fits(d->pt, p, pc, d->sample_seq)) {
		/* Another file there between our view and the sample: not what it ran, or
		 * not known yet (a scan is due: the mmap record that says so).
		 */
		if (p->alive && p->view_seq < d->sample_seq)
			*wait = true;
		return NULL;
	}
	d->mapping = (struct mapping_info){
		.file_id = m->exe->file_id, .bias = m->bias, .start = m->start, .end = m->end
	};
	return &d->mapping;
}

static const struct file_info *world_file(void *ctx, uint64_t file_id, bool *wait)
{
	struct deferred *d = ctx;
	struct table_status *st;

	if (!exe_registry__find(d->reg, file_id))
		return NULL;
	st = unwind_maps__find_status(d->um, file_id);
	switch (st ? st->state : UNWIND_TABLE_NONE) {
	case UNWIND_TABLE_EVICTED:
		/* Unloaded, or found no room in the pool: not queued again before its
		 * retry_ns (table_queue.h). Waiting past the sample's own deadline would only
		 * hold a place in the queue that other samples need.
		 */
		if (st->retry_ns > d->give_up_ns)
			d->no_room = true;
		/* fall through */
	case UNWIND_TABLE_QUEUED:
	case UNWIND_TABLE_BUILDING:
		/* A waiting sample asks for the table (unwind/table_queue.h); it is a sample
		 * in the file (a giant one waits for one before it is built).
		 */
		if (st->wanted < UINT32_MAX)
			st->wanted++;
		if (d->sample_ns > st->last_sampled_ns)
			st->last_sampled_ns = d->sample_ns;
		*wait = true;
		return NULL;
	case UNWIND_TABLE_NONE:
		*wait = true;
		return NULL;
	case UNWIND_TABLE_LOADED:
		d->file.flags = FILE_HAS_TABLE;
		return &d->file;
	case UNWIND_TABLE_NO_CFI:
		d->file.flags = FILE_NO_CFI;
		return &d->file;
	default: /* failed */
		d->file.flags = FILE_NO_TABLE;
		return &d->file;
	}
}

/* The pairs and pages cached, emptied when anything changed since they were read. */
static void caches_current(struct deferred *d)
{
	if (d->entry_cache_gen == d->gen)
		return;
	memset(d->entry_cache, 0, ENTRY_CACHE_SLOTS * sizeof(*d->entry_cache));
	memset(d->page_cache, 0, PAGE_CACHE_SLOTS * sizeof(*d->page_cache));
	d->entry_cache_gen = d->gen;
}

static const struct unwind_page *world_page(void *ctx, uint64_t file_id, uint64_t page)
{
	struct deferred *d = ctx;
	struct unwind_page_key key = { .file_id = file_id, .page = page };
	struct page_slot *slot;

	caches_current(d);
	slot = &d->page_cache[((file_id ^ page * 0x9e3779b97f4a7c15ULL) >> 32) % PAGE_CACHE_SLOTS];
	if (slot->page_1 == page + 1 && slot->file_id == file_id)
		return &slot->page;
	if (bpf_map_lookup_elem(d->pages_fd, &key, &d->page))
		return NULL;
	*slot = (struct page_slot){ file_id, page + 1, d->page };
	return &slot->page;
}

static bool world_segment(void *ctx, uint32_t segment)
{
	struct deferred *d = ctx;

	return unwind_maps__segment_fd(d->um, segment) >= 0;
}

static const struct unwind_entry *world_entry(void *ctx, uint32_t segment, uint32_t index)
{
	struct deferred *d = ctx;
	int fd = unwind_maps__segment_fd(d->um, segment);
	uint32_t in_seg = index / 2;
	uint32_t pair = (segment << (UNWIND_SEGMENT_SHIFT - 1)) + in_seg;
	struct entry_slot *slot;

	if (fd < 0 || index > UNWIND_SEGMENT_INDEX_MASK)
		return NULL;
	caches_current(d);
	slot = &d->entry_cache[pair % ENTRY_CACHE_SLOTS];
	if (slot->pair_1 != (uint64_t)pair + 1) {
		slot->pair_1 = 0;
		if (bpf_map_lookup_elem(fd, &in_seg, &slot->entries))
			return NULL;
		slot->pair_1 = (uint64_t)pair + 1;
	}
	return &slot->entries.e[index & 1];
}

static const struct unwind_rule *world_rule(void *ctx, uint32_t index)
{
	struct deferred *d = ctx;

	if (index >= RULE_CAP)
		return NULL;
	return (const struct unwind_rule *)(d->rules + (size_t)index * RULE_STRIDE);
}

/* ---- lifetime ---- */

struct deferred *deferred__new(const struct deferred_maps *maps, struct process_table *pt,
			       struct exe_registry *reg, deferred_emit_fn emit, void *ctx)
{
	struct deferred *d = calloc(1, sizeof(*d));
	void *p;

	if (!d)
		return NULL;
	d->pt = pt;
	d->reg = reg;
	d->um = maps->um;
	d->emit = emit;
	d->ctx = ctx;
	d->pages_fd = maps->pages_fd;
	d->entry_cache = calloc(ENTRY_CACHE_SLOTS, sizeof(*d->entry_cache));
	d->page_cache = calloc(PAGE_CACHE_SLOTS, sizeof(*d->page_cache));
	if (!d->entry_cache || !d->page_cache)
		goto fail;
	p = mmap(NULL, RULE_CAP * RULE_STRIDE, PROT_READ, MAP_SHARED, maps->rules_fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	d->rules = p;
	d->world = (struct replay_world){ .mapping = world_mapping,
					  .file = world_file,
					  .page = world_page,
					  .segment = world_segment,
					  .entry = world_entry,
					  .rule = world_rule,
					  .ctx = d };
	return d;
fail:
	deferred__free(d);
	return NULL;
}

static void sample_free(struct deferred_sample *ds)
{
	if (!ds)
		return;
	free(ds->rec);
	free(ds->stack);
	free(ds);
}

void deferred__set_hold(struct deferred *d, deferred_hold_fn hold)
{
	d->hold = hold;
}

void deferred__free(struct deferred *d)
{
	struct deferred_sample *ds, *next;
	size_t it = 0;
	uint64_t key;
	void *v;
	int err = errno;

	if (!d)
		return;
	for (ds = d->head; ds; ds = next) {
		next = ds->next;
		sample_free(ds);
	}
	while (u64_map__next(&d->pending, &it, &key, &v))
		sample_free(v);
	u64_map__free(&d->pending);
	free(d->entry_cache);
	free(d->page_cache);
	if (d->rules)
		munmap((void *)d->rules, RULE_CAP * RULE_STRIDE);
	free(d);
	errno = err;
}

const struct deferred_stats *deferred__stats(struct deferred *d)
{
	return &d->stats;
}

void deferred__changed(struct deferred *d)
{
	d->gen++;
}

/* ---- pairing ---- */

/* Part 0 of a copy: a new pending sample for its CPU (one before it lost its sample). */
static void first_part(struct deferred *d, const struct stack_copy_record *sr, size_t bytes)
{
	struct deferred_sample *ds, *old;

	ds = calloc(1, sizeof(*ds));
	if (ds)
		ds->stack = malloc(bytes);
	if (!ds || !ds->stack) {
		sample_free(ds);
		d->stats.unpaired++;
		return;
	}
	memcpy(ds->stack, sr, bytes);
	ds->stack_size = bytes;
	old = u64_map__get(&d->pending, (uint64_t)sr->hdr.cpu + 1);
	if (u64_map__set(&d->pending, (uint64_t)sr->hdr.cpu + 1, ds)) {
		sample_free(ds);
		d->stats.unpaired++;
		return;
	}
	if (old) {
		d->stats.unpaired++; /* its sample was lost (ring buffer full) */
		sample_free(old);
	}
}

/* Part k > 0: appended to its CPU's pending copy when it is the part that follows (same
 * sample, part k - 1 full and last); else dropped (a part lost in between), the copy kept.
 */
static void next_part(struct deferred *d, const struct stack_copy_record *sr)
{
	struct deferred_sample *ds = u64_map__get(&d->pending, (uint64_t)sr->hdr.cpu + 1);
	size_t head = offsetof(struct stack_copy_record, stack);
	struct stack_copy_record *joined;

	if (!ds || ds->stack->hdr.time_ns != sr->hdr.time_ns || ds->stack->hdr.tid != sr->hdr.tid ||
	    ds->stack->part + 1 != sr->part || !ds->stack->full ||
	    sr->stack_addr != ds->stack->stack_addr + ds->stack->stack_len) {
		d->stats.unpaired++;
		return;
	}
	joined = realloc(ds->stack, ds->stack_size + sr->stack_len);
	if (!joined) {
		d->stats.unpaired++;
		return;
	}
	memcpy((uint8_t *)joined + ds->stack_size, (const uint8_t *)sr + head, sr->stack_len);
	joined->stack_len += sr->stack_len;
	joined->full = sr->full;
	joined->part = sr->part;
	ds->stack = joined;
	ds->stack_size += sr->stack_len;
	d->stats.more_parts++;
}

void deferred__stack_copy(struct deferred *d, const struct stack_copy_record *sr, size_t size)
{
	size_t head = offsetof(struct stack_copy_record, stack);

	if (size < head || sr->stack_len > sizeof(sr->stack) || size < head + sr->stack_len ||
	    sr->part >= SS_DEFER_STACK_PARTS) {
		d->stats.unpaired++;
		return;
	}
	if (sr->part)
		next_part(d, sr);
	else
		first_part(d, sr, head + sr->stack_len);
}

/* ---- replay ---- */

/* Field by field: eBPF does not write a frame's padding (it holds whatever the scratch had). */
static bool same_frame(const struct user_frame *a, const struct user_frame *b)
{
	return a->addr == b->addr && a->file_id == b->file_id && a->flags == b->flags &&
	       a->kind == b->kind;
}

/* The first frame where two walks differ (the shorter count when one is a prefix). */
static uint32_t first_difference(const struct sample_record *a, const struct sample_record *b)
{
	uint32_t i = 0;

	while (i < a->user_frame_cnt && i < b->user_frame_cnt &&
	       same_frame(&a->user[i], &b->user[i]))
		i++;
	return i;
}

static bool same_walk(const struct sample_record *a, const struct sample_record *b)
{
	return a->user_frame_cnt == b->user_frame_cnt && a->user_end == b->user_end &&
	       first_difference(a, b) == a->user_frame_cnt;
}

/* Verify mode: say where a replay left eBPF's walk (debug log). */
static void log_mismatch(const struct sample_record *replay, const struct sample_record *ebpf)
{
	uint32_t i = first_difference(replay, ebpf);
	const struct user_frame *r = &replay->user[i], *e = &ebpf->user[i];

	if (i < replay->user_frame_cnt && i < ebpf->user_frame_cnt)
		pr_debug(
			"deferred: replay of pid %u differs from eBPF at frame %u (%#llx/%#llx/%#x "
			"vs %#llx/%#llx/%#x)\n",
			ebpf->hdr.pid, i, (unsigned long long)r->addr,
			(unsigned long long)r->file_id, r->flags, (unsigned long long)e->addr,
			(unsigned long long)e->file_id, e->flags);
	else
		pr_debug("deferred: replay of pid %u: %u frames, end %u; eBPF: %u frames, end %u\n",
			 ebpf->hdr.pid, replay->user_frame_cnt, replay->user_end,
			 ebpf->user_frame_cnt, ebpf->user_end);
}

/* Does eBPF's walk hold runtime frames from frame `from` on (the replay cannot make them)? */
static bool runtime_frames(const struct sample_record *rec, uint32_t from)
{
	uint32_t i;

	for (i = from; i < rec->user_frame_cnt; i++)
		if (rec->user[i].kind != FRAME_KIND_NATIVE)
			return true;
	return false;
}

/* Try to finish ds: REPLAY_DONE (emitted; *err set), REPLAY_WAIT (keep it). */
static int try_sample(struct deferred *d, struct deferred_sample *ds, uint64_t now_ns, int *err)
{
	const struct stack_copy_record *sr = ds->stack;
	const struct sample_record *rec = ds->rec;
	struct sample_record *out = &d->out;
	uint32_t cnt = 0, end = 0, pid = rec->hdr.pid, placed;
	size_t head = offsetof(struct sample_record, user);
	int r;

	*err = 0;
	/* A forked child not scanned yet is replayed with the mappings eBPF used. */
	if (!process_table__find(d->pt, (pid_t)pid) && rec->map_pid != pid &&
	    process_table__find(d->pt, (pid_t)rec->map_pid))
		pid = rec->map_pid;
	memcpy(out, rec, head);
	memcpy(out->user, rec->user, sr->at.frame_idx * sizeof(out->user[0]));
	d->sample_ns = rec->hdr.time_ns;
	d->sample_seq = (uint32_t)pid == rec->map_pid ? rec->map_seq : 0;
	d->give_up_ns = ds->queued_ns + DEFERRED_WAIT_NS;
	d->no_room = false;
	process_table__memo_views(d->pt, true); /* one read of eBPF's account per replay */
	r = stack_replay__run(&d->world, sr, sr->stack_len, pid, out->user, &cnt, &end);
	process_table__memo_views(d->pt, false);
	if (r == REPLAY_WAIT && d->no_room) {
		d->stats.no_room++; /* as eBPF walked it, now */
		*err = d->emit(rec, ds->rec_size, now_ns, d->ctx);
		return REPLAY_DONE;
	}
	if (r == REPLAY_WAIT)
		return REPLAY_WAIT;
	if (r == REPLAY_DONE && runtime_frames(rec, sr->at.frame_idx)) {
		if (replay_runtime__place(rec->user, rec->user_frame_cnt, sr->at.frame_idx,
					  out->user, &cnt, &end, d->merged, &placed) == 0) {
			memcpy(out->user, d->merged, cnt * sizeof(out->user[0]));
		} else {
			d->stats.runtime_unplaced++;
			if (rec->deferred != DEFER_VERIFY) { /* as eBPF walked it */
				*err = d->emit(rec, ds->rec_size, now_ns, d->ctx);
				return REPLAY_DONE;
			}
		}
	}
	if (r < 0 || rec->deferred == DEFER_VERIFY) {
		/* Verify mode: the profile gets eBPF's walk; the replay is only compared. */
		if (r < 0 || sr->natural)
			d->stats.verify_skipped++;
		else {
			out->user_frame_cnt = (uint16_t)cnt;
			out->user_end = (uint16_t)end;
			if (same_walk(out, rec)) {
				d->stats.verified++;
			} else if (end == UNWIND_END_STACK_COPY &&
				   first_difference(out, rec) == cnt) {
				d->stats.verify_short++; /* identical up to the copy's end */
			} else {
				d->stats.verify_mismatch++;
				log_mismatch(out, rec);
			}
		}
		*err = d->emit(rec, ds->rec_size, now_ns, d->ctx);
		return REPLAY_DONE;
	}
	out->user_frame_cnt = (uint16_t)cnt;
	out->user_end = (uint16_t)end;
	out->deferred = DEFER_NONE;
	d->stats.completed++;
	d->stats.runtime_kept += runtime_frames(rec, 0);
	if (end == UNWIND_END_STACK_COPY)
		d->stats.stack_short++;
	*err = d->emit(out, head + cnt * sizeof(out->user[0]), now_ns, d->ctx);
	return REPLAY_DONE;
}

/* A sample waits for a scan of its process that follows it (a process never scanned, a
 * library mapped since): ask for one, at most every RESCAN_MIN_INTERVAL_NS per process.
 */
static void ask_scan(struct deferred *d, const struct sample_record *rec, uint64_t now_ns,
		     uint64_t min_interval_ns)
{
	const struct process *p = process_table__find(d->pt, (pid_t)rec->hdr.pid);

	if (!p || (p->alive && p->scanned_ns < rec->hdr.time_ns))
		process_table__refresh(d->pt, (pid_t)rec->hdr.pid, now_ns, min_interval_ns);
}

static void unlink_sample(struct deferred *d, struct deferred_sample *prev,
			  struct deferred_sample *ds)
{
	if (prev)
		prev->next = ds->next;
	else
		d->head = ds->next;
	if (d->tail == ds)
		d->tail = prev;
	d->stats.queued--;
	d->stats.queued_bytes -= ds->rec_size + ds->stack_size;
}

int deferred__sample(struct deferred *d, const struct sample_record *rec, size_t size,
		     uint64_t now_ns)
{
	struct deferred_sample *ds = u64_map__del(&d->pending, (uint64_t)rec->hdr.cpu + 1);
	size_t head = offsetof(struct sample_record, user);
	int err;

	if (size < head || rec->user_frame_cnt > SS_MAX_USER_FRAMES ||
	    size < head + rec->user_frame_cnt * sizeof(struct user_frame)) {
		sample_free(ds); /* the trace handler counts the malformed record */
		return d->emit(rec, size, now_ns, d->ctx);
	}
	if (!ds || ds->stack->at.frame_idx > rec->user_frame_cnt ||
	    ds->stack->hdr.time_ns != rec->hdr.time_ns || ds->stack->hdr.tid != rec->hdr.tid) {
		d->stats.unpaired++;
		sample_free(ds);
		return d->emit(rec, size, now_ns, d->ctx);
	}
	d->stats.received++;
	ds->rec = malloc(size);
	if (!ds->rec) {
		sample_free(ds);
		return -ENOMEM;
	}
	memcpy(ds->rec, rec, size);
	ds->rec_size = size;
	ds->queued_ns = now_ns;
	if (try_sample(d, ds, now_ns, &err) == REPLAY_DONE) {
		sample_free(ds);
		return err;
	}
	if (d->stats.queued >= DEFERRED_QUEUE_CAP ||
	    d->stats.queued_bytes + size + ds->stack_size > DEFERRED_QUEUE_BYTES) {
		d->stats.queue_full++;
		err = d->emit(rec, size, now_ns, d->ctx);
		sample_free(ds);
		return err;
	}
	ask_scan(d, rec, now_ns, RESCAN_MIN_INTERVAL_NS);
	if (d->hold && runtime_frames(rec, 0))
		d->hold(rec, d->ctx);
	if (d->tail)
		d->tail->next = ds;
	else
		d->head = ds;
	d->tail = ds;
	d->stats.queued++;
	d->stats.queued_bytes += size + ds->stack_size;
	return 0;
}

/* A process that exited before any scan of it: its mappings will never be known. */
static bool never_known(struct deferred *d, pid_t pid)
{
	return !process_table__find(d->pt, pid) && kill(pid, 0) && errno == ESRCH;
}

/* Try the queue (all: even without a change) and emit what is older than max_wait_ns. */
static int run_queue(struct deferred *d, uint64_t now_ns, bool all, uint64_t max_wait_ns)
{
	struct deferred_sample *prev = NULL, *ds, *next;
	bool retry = all || d->gen != d->tried_gen, gone;
	int err = 0, e;

	d->tried_gen = d->gen;
	for (ds = d->head; ds; ds = next) {
		next = ds->next;
		if (all) /* the last chance: a scan now, if the sample still needs one */
			ask_scan(d, ds->rec, now_ns, 0);
		if (retry && try_sample(d, ds, now_ns, &e) == REPLAY_DONE) {
			unlink_sample(d, prev, ds);
			sample_free(ds);
			err = err ?: e;
			continue;
		}
		gone = never_known(d, (pid_t)ds->rec->hdr.pid);
		if (gone || now_ns - ds->queued_ns >= max_wait_ns) {
			if (gone)
				d->stats.gone++;
			else
				d->stats.expired++;
			pr_debug("deferred: pid %u (%s) given up (%s): defer point %s at %#llx\n",
				 ds->rec->hdr.pid, ds->rec->comm, gone ? "process gone" : "expired",
				 ds->stack->at.why == UNWIND_END_UNMAPPED ? "unmapped" : "no table",
				 (unsigned long long)ds->stack->at.regs[DWARF_RIP]);
			e = d->emit(ds->rec, ds->rec_size, now_ns, d->ctx);
			err = err ?: e;
			unlink_sample(d, prev, ds);
			sample_free(ds);
			continue;
		}
		ask_scan(d, ds->rec, now_ns, RESCAN_MIN_INTERVAL_NS);
		prev = ds;
	}
	return err;
}

int deferred__tick(struct deferred *d, uint64_t now_ns)
{
	return run_queue(d, now_ns, false, DEFERRED_WAIT_NS);
}

int deferred__flush(struct deferred *d, uint64_t now_ns)
{
	return run_queue(d, now_ns, true, 0);
}
