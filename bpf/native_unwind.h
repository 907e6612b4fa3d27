/* The native user-stack unwinder (x86-64: bpf/arch/x86_64.h, arm64: bpf/arch/arm64.h): one step per frame, driven by bpf_loop.
 *
 * This file is included by bpf/sampler.bpf.c and, unchanged, by the replay tests
 * (tests/unit/test_replay.c), which compile it as ordinary C. It touches the world only
 * through functions the includer defines:
 *
 *   static int ss_read_user(void *dst, __u32 size, __u64 addr);            0 or < 0
 *   static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc);     NULL: unknown
 *   static struct file_info *ss_lookup_file(__u64 file_id);                 NULL: unknown
 *   static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page);   NULL: none
 *   static void *ss_lookup_segment(__u32 segment);                          NULL: none
 *   static struct unwind_entry *ss_lookup_entry(void *segment, __u32 index); (in the segment)
 *   static struct unwind_rule *ss_lookup_rule(__u32 index);
 *   static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx);
 *     (UNWIND_RULE_GO_G0 / GO_CGO: where the goroutine of this thread, now on g0's stack at
 *     st's sp, switched to it, enum go_context; 0, or < 0: none)
 *
 * Invariants: a step either appends exactly one frame and moves the state to the caller,
 * or appends one frame and ends the stack with an enum unwind_end reason. The first frame
 * whose pc is in no known mapping, or in a file whose table is not loaded, saves the cursor
 * as it was before that step (the "defer point", bpf/abi.h) before the frame-pointer
 * fallback goes on: running the step again from ss_defer_resume() gives that frame and its
 * callers once the mapping and table exist (deferred unwinding, src/unwind/stack_replay.c). The sp of each
 * caller is strictly above the sp of its callee (stacks grow down), so a corrupt table
 * cannot loop (the two stack switches, UNWIND_RULE_FP_SWITCH and UNWIND_RULE_GO_G0, are
 * allowed once each per walk). Registers other than rip/rsp/rbp are known only in the interrupted frame and
 * right after a signal frame (regs_valid).
 */
#ifndef STACKSCOPE_NATIVE_UNWIND_H
#define STACKSCOPE_NATIVE_UNWIND_H

#include "abi.h"

/* The hooks above, declared (each includer defines them, before or after this file). */
struct unwind_cursor;
static int ss_read_user(void *dst, __u32 size, __u64 addr);
static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc);
static struct file_info *ss_lookup_file(__u64 file_id);
static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page);
static void *ss_lookup_segment(__u32 segment);
static struct unwind_entry *ss_lookup_entry(void *segment, __u32 index);
static struct unwind_rule *ss_lookup_rule(__u32 index);
static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx);

#define SS_PAGE_ENTRY_SEARCH_STEPS 17 /* log2(65536) + 1 */
#define SS_FRAME_NEED 64    /* bytes below a CFA a frame's step may read (ss_frame_window) */
#define SS_FRAME_WINDOW 512 /* bytes of stack read at once, from the lowest a frame needs up */

/* The architecture's part: SS_USER_ADDR_MAX and the steps by frame pointer, signal frame and
 * CFA rule (ss_step_fp, ss_step_signal, ss_step_cfa), after struct unwind_cursor below.
 */

struct unwind_cursor {
	__u64 regs[DWARF_RIP + 1]; /* DWARF numbering; rip, rsp, rbp always valid */
	__u32 pid;
	__u8 regs_valid;   /* all of regs[] valid (leaf, or after a signal frame) */
	__u8 pc_is_return; /* regs[RIP] is a return address */
	__u8 after_signal; /* the next frame was interrupted by a signal */
	__u8 done;
	__u8 end;         /* enum unwind_end once done */
	__u8 switched;    /* an UNWIND_RULE_FP_SWITCH step moved to another stack */
	__u8 go_switched; /* an UNWIND_RULE_GO_G0 step moved to the goroutine's stack */
	__u32 frame_cnt;
	__u32 fp_frame_cnt;
	__u32 rbx_for; /* x86-64: regs[RBX] holds rbx of frame rbx_for - 1 (0: of none; a CFA step
			* sets it for its caller, every other step leaves it behind) */
	struct mapping_info last_map;   /* the last mapping looked up (frames cluster in files) */
	__u32 last_file_flags;          /* its file's flags, FILE_FLAGS_UNREAD until needed */
	struct unwind_page page;        /* the last table page found (callers cluster in pages) */
	__u64 page_file_id;             /* ... its file (0: none yet) */
	__u64 page_no;                  /* ... and its number */
	__u64 win[SS_FRAME_WINDOW / 8]; /* stack words [win_start, +win_len) read (arch step) */
	__u64 win_start;
	__u32 win_len;   /* bytes of win[] read (0: none) */
	__u32 lookups;   /* LPM lookups done */
	__u32 defer_cnt; /* frames that needed what is not loaded yet; defer: the first one */
	__u32 memo_hits; /* frames the frame memo answered */
	struct defer_point defer;
	/* The frame memo (the includer's SS_FRAME_MEMO hooks; sampler.bpf.c): this sample's tag,
	 * whose address space as of when (0: no memo), and the last answer fetched or kept: the
	 * rule at memo_pc under memo_for_tag (the mapping is last_map's). Not reset per sample:
	 * memo_for_tag says whose the answer is.
	 */
	__u64 memo_tag;
	__u64 memo_for_tag;
	__u64 memo_pc;
	struct unwind_rule memo_rule;
};

_Static_assert(sizeof(((struct defer_point *)0)->regs) == sizeof(((struct unwind_cursor *)0)->regs),
	       "a defer point holds every register of the cursor");

/* Save the cursor at the frame about to be emitted as frames[idx] (after_signal: that frame was
 * interrupted by a signal). Only the first call of a sample saves; every call is counted.
 */
static __always_inline void ss_defer_save(struct unwind_cursor *st, __u32 idx, __u8 after_signal,
					  __u8 why)
{
	if (st->defer_cnt++)
		return;
	__builtin_memcpy(st->defer.regs, st->regs, sizeof(st->regs));
	st->defer.frame_idx = idx;
	st->defer.regs_valid = st->regs_valid;
	st->defer.pc_is_return = st->pc_is_return;
	st->defer.after_signal = after_signal;
	st->defer.why = why;
}

/* A fresh cursor (pid: whose mappings to use) positioned at a saved defer point: the next step
 * emits frames[dp->frame_idx].
 */
static __always_inline void ss_defer_resume(struct unwind_cursor *st, __u32 pid,
					    const struct defer_point *dp)
{
	__builtin_memset(st, 0, sizeof(*st));
	__builtin_memcpy(st->regs, dp->regs, sizeof(st->regs));
	st->pid = pid;
	st->frame_cnt = dp->frame_idx;
	st->regs_valid = dp->regs_valid;
	st->pc_is_return = dp->pc_is_return;
	st->after_signal = dp->after_signal;
}

/* The linkage of ss_page_entry_rule(): ordinary inline C for the replay tests; sampler.bpf.c
 * makes it a global function (__noinline, not static), which the verifier checks once, on its
 * own, with unknown arguments. Inlined into the bpf_loop callback, the search's 17 steps were
 * verified per path: 6.18.44's verifier merged none of its 2^17 paths there and refused
 * on_sample ("BPF program is too large. Processed 1000001 insn").
 */
#ifndef SS_ENTRY_SEARCH_LINKAGE
#define SS_ENTRY_SEARCH_LINKAGE static __always_inline
#endif

/* The rule index of the last of the cnt entries from first whose page_off <= off (entry
 * first has page_off 0), or -1 (no entry, or one unreadable). The cnt entries lie in first's
 * segment (a page's entries never cross one: bpf/abi.h), looked up once.
 */
SS_ENTRY_SEARCH_LINKAGE int ss_page_entry_rule(__u32 first, __u32 cnt, __u32 off)
{
	struct unwind_entry *e;
	__u32 lo = first & UNWIND_SEGMENT_INDEX_MASK, hi = lo + cnt;
	void *segment;
	int i;

	if (!cnt)
		return -1;
	segment = ss_lookup_segment(first >> UNWIND_SEGMENT_SHIFT);
	if (!segment)
		return -1;
	for (i = 0; i < SS_PAGE_ENTRY_SEARCH_STEPS && hi - lo > 1; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		e = ss_lookup_entry(segment, mid);
		if (!e)
			return -1;
		if (e->page_off <= off)
			lo = mid;
		else
			hi = mid;
	}
	e = ss_lookup_entry(segment, lo);
	return e ? e->rule : -1;
}

/* The rule index at off in page: the entry search, unless the includer defines SS_PAGE_RULE to
 * answer it another way with the same result (sampler.bpf.c: the answers it remembers).
 */
#ifndef SS_PAGE_RULE
#define SS_PAGE_RULE(page, off) ss_page_entry_rule((page)->first, (page)->cnt, off)
#endif

/* The frame memo: a pc's mapping and rule remembered across samples of the same address space
 * (sampler.bpf.c). SS_FRAME_MEMO(st, lookup_pc): true when it answers, with st->last_map and
 * st->memo_rule set; SS_FRAME_MEMO_KEEP(st, lookup_pc, r): remember the answer last_map and
 * the rule r gave. Without the hooks (the replay tests) nothing is remembered.
 */
#ifndef SS_FRAME_MEMO
#define SS_FRAME_MEMO(st, lookup_pc) false
#define SS_FRAME_MEMO_KEEP(st, lookup_pc, r) ((void)0)
#endif

/* Rule in force at elf_addr, in its table page. */
static __always_inline struct unwind_rule *ss_find_rule_in(const struct unwind_page *page,
							   __u64 elf_addr)
{
	int rule = SS_PAGE_RULE(page, elf_addr & ((1u << UNWIND_PAGE_SHIFT) - 1));

	return rule < 0 ? NULL : ss_lookup_rule((__u32)rule);
}

/* Rule in force at elf_addr, or NULL when the file has no table page there. */
static __always_inline struct unwind_rule *ss_find_rule(__u64 file_id, __u64 elf_addr)
{
	struct unwind_page *page = ss_lookup_page(file_id, elf_addr >> UNWIND_PAGE_SHIFT);

	return page ? ss_find_rule_in(page, elf_addr) : NULL;
}

/* The table page of file_id holding elf_addr, or NULL: the cursor's last one when it is the
 * same (a sample touches few pages: each lookup of the page map is a cache miss at a low
 * sampling rate).
 */
static __always_inline const struct unwind_page *ss_cursor_page(struct unwind_cursor *st,
								__u64 file_id, __u64 elf_addr)
{
	__u64 no = elf_addr >> UNWIND_PAGE_SHIFT;
	struct unwind_page *p;

	if (st->page_file_id == file_id && st->page_no == no)
		return &st->page;
	p = ss_lookup_page(file_id, no);
	if (!p)
		return NULL;
	st->page = *p;
	st->page_file_id = file_id;
	st->page_no = no;
	return &st->page;
}

/* The flags of the last mapping's file, read from "files" the first time they are needed: a
 * file whose table page is found needs none.
 */
static __always_inline __u32 ss_last_file_flags(struct unwind_cursor *st)
{
	struct file_info *f;

	if (st->last_file_flags & FILE_FLAGS_UNREAD) {
		f = ss_lookup_file(st->last_map.file_id);
		st->last_file_flags = f ? f->flags : 0;
	}
	return st->last_file_flags;
}

/* The words of a frame's save area, [max(cfa - SS_FRAME_NEED, sp), cfa), in the window: the
 * return address and the registers a prologue pushes are there. Each read of user memory costs
 * about as much for 512 bytes as for 8 (a helper call, the fault guard: ~100 ns a frame at a low
 * load, docs/BENCHMARKS.md 55-cost), and callers' frames lie above: one read from the lowest
 * word needed upward serves the next frames too, until a frame needs words past it. The stack
 * does not change while it is walked (the thread is stopped). A read past the stack's end fails
 * whole: then what this frame needs alone. Nothing below sp is read.
 */
static __always_inline void ss_frame_window(struct unwind_cursor *st, __u64 sp, __u64 cfa)
{
	__u64 start = cfa - SS_FRAME_NEED >= sp ? cfa - SS_FRAME_NEED : sp;
	__u32 len = (__u32)(cfa - start);

	if (cfa <= sp || !len || len > SS_FRAME_NEED || (len & 7)) {
		st->win_len = 0;
		return;
	}
	if (st->win_len && start >= st->win_start && cfa - st->win_start <= st->win_len)
		return;
	st->win_len = 0;
	if (ss_read_user(st->win, SS_FRAME_WINDOW, start) == 0) {
		st->win_start = start;
		st->win_len = SS_FRAME_WINDOW;
		return;
	}
	barrier_var(len); /* the mask stays: the verifier wants the size's bound on the register */
	len &= SS_FRAME_NEED * 2 - 1;
	if (ss_read_user(st->win, len, start) < 0)
		return;
	st->win_start = start;
	st->win_len = len;
}

/* The word at addr: from the frame window when it holds it, else read. 0 or < 0. */
static __always_inline int ss_frame_word(struct unwind_cursor *st, __u64 addr, __u64 *out)
{
	__u64 off = addr - st->win_start;

	if (st->win_len && addr >= st->win_start && off + 8 <= st->win_len && !(off & 7)) {
		*out = st->win[(off / 8) & (SS_FRAME_WINDOW / 8 - 1)];
		return 0;
	}
	return ss_read_user(out, sizeof(*out), addr);
}

static __always_inline void ss_end(struct unwind_cursor *st, enum unwind_end why)
{
	st->done = 1;
	st->end = why;
}

#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
#include "arch/arm64.h"
#else
#include "arch/x86_64.h"
#endif

/* One frame: record the pc into frames[st->frame_cnt] (an array of SS_MAX_USER_FRAMES),
 * then move to the caller.
 */
static __always_inline void ss_unwind_step(struct unwind_cursor *st, struct user_frame *frames)
{
	__u64 pc = st->regs[DWARF_RIP], lookup_pc, elf_addr;
	const struct unwind_page *page;
	struct mapping_info *m;
	__u32 file_flags;
	struct unwind_rule *r;
	struct user_frame *fr;
	__u32 idx = st->frame_cnt;
	enum unwind_end fallback_why;
	__u32 flags = st->pc_is_return ? USER_FRAME_RETURN : 0;
	bool memo;
	int err;

	if (st->after_signal) {
		flags |= USER_FRAME_SIGNAL;
		st->after_signal = 0;
	}
	if (pc < 0x1000 || pc > SS_USER_ADDR_MAX) {
		/* A zero return address also ends some hand-written thread roots. */
		ss_end(st, pc == 0 && idx > 0 ? UNWIND_END_OK : UNWIND_END_BAD_PC);
		return;
	}
	if (idx >= SS_MAX_USER_FRAMES) {
		ss_end(st, UNWIND_END_TRUNCATED);
		return;
	}
	barrier_var(idx); /* the mask stays (abi.h) */
	fr = &frames[idx & (SS_MAX_USER_FRAMES - 1)];
	lookup_pc = st->pc_is_return ? pc - 1 : pc;
	memo = SS_FRAME_MEMO(st, lookup_pc);
	if (!memo && (lookup_pc < st->last_map.start || lookup_pc >= st->last_map.end)) {
		m = ss_lookup_mapping(st->pid, lookup_pc);
		st->lookups++;
		if (!m || !m->file_id) {
			ss_defer_save(st, idx, !!(flags & USER_FRAME_SIGNAL), UNWIND_END_UNMAPPED);
			fr->addr = pc;
			fr->file_id = 0;
			fr->flags = flags | USER_FRAME_UNMAPPED | USER_FRAME_FP;
			fr->kind = FRAME_KIND_NATIVE;
			st->frame_cnt = idx + 1;
			ss_step_fp(st, UNWIND_END_UNMAPPED, 0);
			return;
		}
		st->last_map = *m;
		st->last_file_flags = FILE_FLAGS_UNREAD;
	}
	elf_addr = pc - st->last_map.bias;
	fr->addr = elf_addr;
	fr->file_id = st->last_map.file_id;
	fr->flags = flags;
	fr->kind = FRAME_KIND_NATIVE;
	st->frame_cnt = idx + 1;
	if (memo) {
		st->memo_hits++;
		r = &st->memo_rule;
		goto rule;
	}

	/* A page found means a table (its entries are written before its page); without one,
	 * the file's flags say whether it has no table yet or no CFI here.
	 */
	page = ss_cursor_page(st, st->last_map.file_id, lookup_pc - st->last_map.bias);
	if (!page) {
		file_flags = ss_last_file_flags(st);
		if (!(file_flags & FILE_HAS_TABLE)) {
			fallback_why = (file_flags & FILE_NO_CFI) ? UNWIND_END_NO_CFI
								  : UNWIND_END_UNKNOWN_FILE;
			if (fallback_why == UNWIND_END_UNKNOWN_FILE &&
			    !(file_flags & FILE_NO_TABLE))
				ss_defer_save(st, idx, !!(flags & USER_FRAME_SIGNAL),
					      UNWIND_END_UNKNOWN_FILE);
			goto frame_pointer;
		}
	}
	r = page ? ss_find_rule_in(page, lookup_pc - st->last_map.bias) : NULL;
	if (!r) {
		fallback_why = UNWIND_END_NO_CFI;
		goto frame_pointer;
	}
	SS_FRAME_MEMO_KEEP(st, lookup_pc, r);
rule:
	switch (r->kind) {
	case UNWIND_RULE_STOP:
		ss_end(st, UNWIND_END_OK);
		return;
	case UNWIND_RULE_SIGNAL:
		ss_step_signal(st);
		return;
	case UNWIND_RULE_CFA:
	case UNWIND_RULE_CFA_DEREF:
	case UNWIND_RULE_PLT:
	case UNWIND_RULE_GO_PREEMPT:
		err = ss_step_cfa(st, r);
		if (!err && r->kind == UNWIND_RULE_GO_PREEMPT) {
			/* the caller was interrupted at its pc, which is no return address */
			err = ss_step_go_preempt(st);
			st->pc_is_return = 0;
			st->after_signal = 1;
		}
		if (err == -1)
			ss_end(st, UNWIND_END_UNSUPPORTED);
		else if (err == -2)
			ss_end(st, UNWIND_END_READ_FAILED);
		else if (err == -3)
			ss_end(st, UNWIND_END_BAD_FRAME);
		return;
	case UNWIND_RULE_FP:
		fallback_why = UNWIND_END_READ_FAILED;
		goto frame_pointer;
	case UNWIND_RULE_FP_SWITCH:
		fr->flags |= USER_FRAME_FP;
		ss_step_fp(st, UNWIND_END_READ_FAILED, !st->switched);
		st->switched = 1;
		return;
	case UNWIND_RULE_GO_G0:
	case UNWIND_RULE_GO_CGO: {
		struct go_sched ctx;
		__u32 which = r->kind == UNWIND_RULE_GO_CGO ? GO_CONTEXT_SYSCALL : GO_CONTEXT_SCHED;

		/* once a walk, so the stack change cannot loop */
		if (st->go_switched || ss_go_goroutine(st, which, &ctx) < 0) {
			if (r->kind == UNWIND_RULE_GO_G0) {
				ss_end(st, UNWIND_END_OK);
				return;
			}
			/* asmcgocall without the goroutine: its frame pointer (cgocall's) */
			fr->flags |= USER_FRAME_FP;
			ss_step_fp(st, UNWIND_END_READ_FAILED, !st->switched);
			st->switched = 1;
			return;
		}
		st->go_switched = 1;
		st->regs[DWARF_RIP] = ctx.pc;
		st->regs[DWARF_RSP] = ctx.sp;
		st->regs[DWARF_RBP] = ctx.bp;
		/* as the runtime's tracebacks read them: morestack saves the pc after its call
		 * (f's prologue, the line of f's entry either way), systemstack the entry of (1.19)
		 * or a pc inside (1.21+) runtime.systemstack_switch: exact; cgocall the return
		 * address of its call to entersyscall: that call's line
		 */
		st->pc_is_return = which == GO_CONTEXT_SYSCALL;
		st->regs_valid = 0;
		return;
	}
	case UNWIND_RULE_UNSUPPORTED:
		ss_end(st, UNWIND_END_UNSUPPORTED);
		return;
	default: /* UNWIND_RULE_INVALID: a gap without CFI */
		fallback_why = UNWIND_END_NO_CFI;
		goto frame_pointer;
	}

frame_pointer:
	fr->flags |= USER_FRAME_FP;
	ss_step_fp(st, fallback_why, 0);
}

#endif
