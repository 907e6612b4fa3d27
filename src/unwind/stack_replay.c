/* The eBPF unwinder step over a stack copy. See stack_replay.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "unwind/stack_replay.h"

/* The replay running now: what the step's hooks answer from (see "Not thread-safe"). */
static struct {
	const struct replay_world *w;
	const struct stack_copy_record *sr;
	uint64_t stack_len;
	bool wait;         /* a lookup said "not known yet" */
	bool read_outside; /* the last failed read was outside the copy, where eBPF could have
			    * read */
	/* The hooks hand out pointers; the step reads them before the next call of the same one. */
	struct mapping_info mapping;
	struct file_info file;
	struct unwind_page page;
	struct unwind_entry entry;
	struct unwind_rule rule;
	__u32 segment; /* the entry pool's segment a page search reads (one at a time) */
} cur;

/* ---- the world as native_unwind.h sees it ---- */

/* A lookup's answer (NULL: none) copied into its slot of cur, and the slot handed out. */
#define SS_KEEP(slot, found) ((found) ? (cur.slot = *(found), &cur.slot) : NULL)

static int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	uint64_t off = addr - cur.sr->stack_addr;

	if (addr < cur.sr->stack_addr || off > cur.stack_len || size > cur.stack_len - off) {
		/* Into the page right after a copy that stopped early (not full): eBPF could not
		 * read that page either (the top of the stack): the same failure, not a short copy.
		 */
		uint64_t unreadable = cur.sr->stack_addr + cur.stack_len;

		cur.read_outside = cur.sr->full || addr < unreadable ||
				   addr >= unreadable + SS_DEFER_PAGE;
		return -EFAULT;
	}
	/* The joined parts of a copy run on past sr->stack[] (stack_replay.h). */
	memcpy(dst, (const uint8_t *)cur.sr + offsetof(struct stack_copy_record, stack) + off,
	       size);
	return 0;
}

static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	const struct mapping_info *m = cur.w->mapping(cur.w->ctx, pid, pc, &cur.wait);

	return SS_KEEP(mapping, m);
}

static struct file_info *ss_lookup_file(__u64 file_id)
{
	const struct file_info *f = cur.w->file(cur.w->ctx, file_id, &cur.wait);

	return SS_KEEP(file, f);
}

static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	const struct unwind_page *p = cur.w->page(cur.w->ctx, file_id, page);

	return SS_KEEP(page, p);
}

static void *ss_lookup_segment(__u32 segment)
{
	if (!cur.w->segment(cur.w->ctx, segment))
		return NULL;
	cur.segment = segment;
	return &cur.segment;
}

static struct unwind_entry *ss_lookup_entry(void *segment, __u32 index)
{
	const struct unwind_entry *e = cur.w->entry(cur.w->ctx, *(const __u32 *)segment, index);

	return SS_KEEP(entry, e);
}

static struct unwind_rule *ss_lookup_rule(__u32 index)
{
	const struct unwind_rule *r = cur.w->rule(cur.w->ctx, index);

	return SS_KEEP(rule, r);
}

/* The goroutine behind a switch to Go's g0 needs the runtime's g, which is in no stack copy: the
 * walk ends there, as eBPF's does for a process it has no Go entry for.
 */
struct unwind_cursor;
static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx)
{
	(void)st, (void)which, (void)ctx;
	return -1;
}

/* The step of the architecture this build runs on: native_unwind.h picks x86-64's unless told
 * otherwise (the BPF build by __TARGET_ARCH_arm64, the arm64 replay tests by defining this).
 * Without it the arm64 build replayed every deferred sample with x86-64's step, which ended it
 * at once: arm64's user pcs (0xaaaa..., 0xffff...) lie above x86-64's user addresses (the
 * kernel matrix's arm64 php column: 66 of 290 samples `[unwind: bad pc];{main};...`).
 */
#if defined(__aarch64__) && !defined(SS_ARCH_ARM64)
#define SS_ARCH_ARM64 1
#endif
#include "native_unwind.h"

int stack_replay__run(const struct replay_world *w, const struct stack_copy_record *sr,
		      size_t stack_len, uint32_t pid, struct user_frame *frames,
		      uint32_t *frame_cnt, uint32_t *end)
{
	struct unwind_cursor st;
	int i;

	if (sr->at.frame_idx >= SS_MAX_USER_FRAMES ||
	    stack_len > SS_DEFER_STACK_PARTS * sizeof(sr->stack))
		return -EINVAL;
	memset(&cur, 0, sizeof(cur));
	cur.w = w;
	cur.sr = sr;
	cur.stack_len = stack_len;
	ss_defer_resume(&st, pid, &sr->at);
	/* As on_sample() drives it: bpf_loop(2 * SS_MAX_USER_FRAMES + 1) steps at most. */
	for (i = 0; i < SS_MAX_USER_FRAMES * 2 + 1 && !st.done; i++) {
		cur.read_outside = false;
		ss_unwind_step(&st, frames);
		if (cur.wait)
			return REPLAY_WAIT;
	}
	if (!st.done)
		ss_end(&st, UNWIND_END_TRUNCATED);
	if (st.end != UNWIND_END_OK && cur.read_outside)
		st.end = UNWIND_END_STACK_COPY;
	*frame_cnt = st.frame_cnt;
	*end = st.end;
	return REPLAY_DONE;
}
