/* The sampled allocations still live (`--alloc`): what a free must take back out of the
 * in-use view.
 *
 * eBPF (bpf/mem_alloc.h) sends a sampled allocation as a sample with its pointer, and the free
 * of such a pointer as a RECORD_FREE. This table keeps, per (process, pointer), the profile
 * sample the allocation became (its frames, process and thread, unbiased weights), so that its
 * free adds a sample of count 0 to the same stack with the freed bytes and allocations
 * (profile_sample.mem_freed*): inuse = allocated - freed, per stack. Frames are ids of the
 * current profile: alloc_live__clear() when the session takes it. At most ALLOC_LIVE_CAP
 * entries (eBPF's map holds fewer); past it, counted and not kept (that allocation stays in
 * use in the view).
 */
#ifndef STACKSCOPE_PIPELINE_ALLOC_LIVE_H
#define STACKSCOPE_PIPELINE_ALLOC_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALLOC_LIVE_CAP (1u << 17)

struct profile;
struct profile_sample;
struct sample_record;

struct alloc_live_stats {
	uint64_t tracked;  /* allocations remembered */
	uint64_t freed;    /* their frees taken back out */
	uint64_t unknown;  /* frees of pointers not in the table (a profile taken since) */
	uint64_t replaced; /* a pointer sampled again before its free came */
	uint64_t full;     /* not remembered: the table full */
	uint64_t carried;  /* entries carried into a next profile (alloc_live__carry) */
	uint64_t exited;   /* entries dropped at a carry: their process gone */
	uint64_t ended;    /* entries taken out of the in-use view at their process's exit or
			    * exec (alloc_live__process_ended) */
	uint64_t live;     /* entries held now */
};

struct alloc_live;

struct alloc_live *alloc_live__new(void);
void alloc_live__free(struct alloc_live *al);
/* rec (a MEM_SAMPLED_ALLOC sample with its pointer) became s (trace_handler__last_sample()).
 * 0 or -ENOMEM.
 */
int alloc_live__sampled(struct alloc_live *al, const struct sample_record *rec,
			const struct profile_sample *s);
/* A RECORD_FREE of size bytes: its allocation's weights taken back out of prof at wall-clock
 * time time_ns. 0, -EINVAL (malformed) or -ENOMEM.
 */
int alloc_live__freed(struct alloc_live *al, struct profile *prof, const void *rec, size_t size,
		      int64_t mono_to_wall_ns);
/* Process pid exited or exec'd at wall-clock time time_ns: its allocations are no more (no free
 * will come for them), each taken back out of prof's in-use view as if freed, and
 * gone(ctx, pid, addr) told. 0 or -ENOMEM (what was taken out so far stays out).
 */
int alloc_live__process_ended(struct alloc_live *al, struct profile *prof, uint32_t pid,
			      uint64_t time_ns,
			      void (*gone)(void *ctx, uint32_t pid, uint64_t addr), void *ctx);
void alloc_live__clear(struct alloc_live *al);
/* The agent's intervals: every entry's frames moved from profile from to profile to (the next
 * interval's, frames and mappings added to it) and its weights added to to as carried (in use,
 * not allocated: profile_sample.mem_carried) at wall-clock time time_ns, so that to's in-use
 * view is the live set at its end and a later free still finds its entry. Entries of a
 * process alive(ctx, pid) says is gone are dropped, gone(ctx, pid, addr) told of each.
 * 0 or -ENOMEM (entries not carried then dropped: the table stays consistent with to).
 */
int alloc_live__carry(struct alloc_live *al, const struct profile *from, struct profile *to,
		      uint64_t time_ns, bool (*alive)(void *ctx, uint32_t pid),
		      void (*gone)(void *ctx, uint32_t pid, uint64_t addr), void *ctx);
const struct alloc_live_stats *alloc_live__stats(const struct alloc_live *al);

#endif
