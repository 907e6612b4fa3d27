/* Deferred unwinding, the eBPF half: a sample whose walk met a frame it could not unwind yet
 * (a pc in a file-backed mapping userspace has not told eBPF about, or in a file whose table is
 * not loaded) is sent with a copy of its user stack, so userspace can finish the walk later
 * with the same step code (src/unwind/deferred.c, src/unwind/stack_replay.c).
 *
 * Included by sampler.bpf.c after native_unwind.h, its maps ("events") and count().
 *
 * Contract: a RECORD_STACK is sent only when the sample's RECORD_SAMPLE follows it from the
 * same program run (same CPU, same time_ns); the sample is marked `deferred` only when its
 * first stack record (part 0) went out. Part k (SS_DEFER_STACK_PAGES pages from where part
 * k - 1 ended) follows only when part k - 1 was full, and only while the ring buffer is less
 * than half full; a part refused or lost ends the copy there (counted). Bounded: at most
 * SS_DEFER_STACK_PARTS * SS_DEFER_STACK_PAGES pages per copy, and a token
 * bucket per CPU (sampler_cfg.defer_interval_ns per copy, defer_burst_ns of credit), so a fork
 * storm cannot flood the ring buffer, and none while the ring buffer is more than half
 * full (sampler_cfg.defer_ring_max: the reader is behind); what the budget refuses is counted
 * (COUNTER_DEFER_OVER_BUDGET) and sent as today, with eBPF's own walk.
 */
#ifndef STACKSCOPE_DEFERRED_H
#define STACKSCOPE_DEFERRED_H

#include "abi.h"

/* Theoretical arrival time of the next copy (GCRA): one per CPU, no atomics needed. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} defer_budget SEC(".maps");

/* Each stack record is built here (28 KiB: too large for the program stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_copy_record);
} defer_scratch SEC(".maps");

/* Take one copy from this CPU's budget. */
static __always_inline bool defer_take_token(__u64 now)
{
	__u32 zero = 0;

	return gcra_take(bpf_map_lookup_elem(&defer_budget, &zero), now,
			 sampler_cfg.defer_interval_ns, sampler_cfg.defer_burst_ns);
}

static long vma_has_file(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	*(__u8 *)ctx = vma->vm_file != NULL;
	return 0;
}

/* Is pc in a file-backed mapping of the current task? Anonymous executable memory (JIT code)
 * never gets a table: deferring its samples would only spend the budget. bpf_find_vma() is
 * called at most once per sample (a second call in the same interrupt would find the mmap
 * lock's irq_work busy).
 */
static __always_inline bool pc_in_file(__u64 pc)
{
	__u8 file = 0;

	if (bpf_find_vma(bpf_get_current_task_btf(), pc, vma_has_file, &file, 0))
		return false;
	return file;
}

/* Read part `part` of the copy into sr (from sr->stack_addr, set by the caller), page by page:
 * it ends at the first page that cannot be read (the top of the stack, or a page not present:
 * no faults in this context). Returns the record's size.
 */
static __always_inline __u64 defer_read_part(struct stack_copy_record *sr, __u32 part)
{
	__u32 i, pages = 0;
	__u64 size;

#pragma unroll
	for (i = 0; i < SS_DEFER_STACK_PAGES; i++) {
		if (bpf_probe_read_user(&sr->stack[i * SS_DEFER_PAGE], SS_DEFER_PAGE,
					(const void *)(sr->stack_addr + i * SS_DEFER_PAGE)))
			break;
		pages++;
	}
	sr->part = part;
	sr->stack_len = pages * SS_DEFER_PAGE;
	sr->full = pages == SS_DEFER_STACK_PAGES;
	size = __builtin_offsetof(struct stack_copy_record, stack) + (__u64)sr->stack_len;
	if (size > sizeof(*sr))
		size = sizeof(*sr);
	return size;
}

/* The JIT runtimes: their walks read code (HotSpot's code cache, V8's, LuaJIT's traces, BEAM's
 * modules) to step through frames that have no table, which the replay cannot.
 */
#define DEFER_JIT_RUNTIMES                                            \
	(INTERP_BIT(FRAME_KIND_HOTSPOT) | INTERP_BIT(FRAME_KIND_V8) | \
	 INTERP_BIT(FRAME_KIND_LUAJIT) | INTERP_BIT(FRAME_KIND_BEAM))

/* Can a replay from the defer point give this sample's frames? The interpreters' frames
 * (CPython, Ruby, Perl, PHP) are emitted right before the native frame that runs them and never
 * move the native cursor: the replay walks the native frames and userspace puts eBPF's runtime
 * frames back before their native frames (src/unwind/replay_runtime.h). Not when a JIT
 * runtime took part, or a runtime moved the native cursor past the defer point.
 */
static __always_inline bool defer_replayable(const struct interp_state *is)
{
	return !(is->started & DEFER_JIT_RUNTIMES) && !is->moved_after_defer;
}

/* Decide and send the stack records for the sample in rec, whose walk is st; sets
 * rec->deferred. replayable: defer_replayable() (else the sample keeps eBPF's walk). find_vma:
 * an unmapped pc is checked with bpf_find_vma() (5.17); without it (the tail-call walker's
 * programs) it is deferred all the same, within the budget.
 */
static __always_inline void defer_sample(struct unwind_cursor *st, struct sample_record *rec,
					 bool replayable, bool find_vma)
{
	__u32 zero = 0, kind = sampler_cfg.defer_mode, part;
	struct stack_copy_record *sr;
	__u64 pc, size;

	rec->deferred = DEFER_NONE;
	if (kind == DEFER_NONE || !st->defer_cnt || !replayable)
		return;
	if (find_vma && kind == DEFER_UNKNOWN && st->defer.why == UNWIND_END_UNMAPPED) {
		pc = st->defer.regs[DWARF_RIP] - (st->defer.pc_is_return ? 1 : 0);
		if (!pc_in_file(pc))
			return;
	}
	/* The copies never take the room samples need: only while the reader keeps up. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > sampler_cfg.defer_ring_max ||
	    !defer_take_token(rec->hdr.time_ns)) {
		count(COUNTER_DEFER_OVER_BUDGET, 1);
		return;
	}
	sr = bpf_map_lookup_elem(&defer_scratch, &zero);
	if (!sr)
		return;
	sr->hdr = rec->hdr;
	sr->hdr.kind = RECORD_STACK;
	sr->at = st->defer;
	sr->natural = kind == DEFER_VERIFY && st->defer_cnt > 1;
	sr->stack_addr = st->defer.regs[DWARF_RSP] & ~(__u64)(SS_DEFER_PAGE - 1);
	size = defer_read_part(sr, 0);
	if (bpf_ringbuf_output(&events, sr, size, BPF_RB_NO_WAKEUP)) {
		count(COUNTER_DEFER_LOST, 1);
		return;
	}
	count(COUNTER_DEFERRED, 1);
	rec->deferred = kind;
	/* Deeper stacks: the next parts, each right after the one before, while it was full. */
	for (part = 1; part < SS_DEFER_STACK_PARTS; part++) {
		if (!sr->full)
			break;
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > sampler_cfg.defer_ring_max) {
			count(COUNTER_DEFER_PART_REFUSED, 1);
			break;
		}
		sr->stack_addr += SS_DEFER_STACK_PAGES * SS_DEFER_PAGE;
		/* Sent even empty: says the stack ended right where the part before did. */
		size = defer_read_part(sr, part);
		if (bpf_ringbuf_output(&events, sr, size, BPF_RB_NO_WAKEUP)) {
			count(COUNTER_DEFER_PART_REFUSED, 1);
			break;
		}
		count(COUNTER_DEFER_MORE_PARTS, 1);
	}
}

#endif
