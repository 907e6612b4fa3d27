/* HotSpot's arm64 code shapes for the code-range walk (included by bpf/interp/hotspot/walk.h
 * when built for arm64: __TARGET_ARCH_arm64, or SS_ARCH_ARM64 for the replay tests; the x86-64
 * ones are in shapes_x86_64.h). Where the caller of a code blob is when the sampled pc stands
 * where the frame size alone does not place it, read from the instructions around pc. Each
 * step: 1 when it moved the cursor to the caller (or ended the stack), 0 when the frame is
 * whole (or not that case) and hs_blob() places the caller by the frame size.
 *
 * AArch64 facts (OpenJDK 17, frame_aarch64.hpp, macroAssembler_aarch64.cpp): a call leaves its
 * return address in x30 (lr), not on the stack; a frame keeps {x29, x30} at its top, so the
 * caller's sp is sp + frame size and the return address the word below it, as on x86-64.
 * C1 and C2 build a frame (MacroAssembler::build_frame) with
 *     sub sp, sp, #N ; stp x29, x30, [sp, #N-16]         (N < 528)
 *     stp x29, x30, [sp, #-16]! ; sub sp, sp, #N-16      (larger)
 * and take it down (remove_frame) with
 *     ldp x29, x30, [sp, #N-16] ; add sp, sp, #N         (N < 528)
 *     add sp, sp, #N-16 ; ldp x29, x30, [sp], #16        (larger)
 * then the return poll (ldr, cmp sp, b.hi to its stub) and `ret`. Until the stp the return
 * address is in x30; after the add it is in x30 again and sp is the caller's. Stubs without a
 * frame (leaf stubs) keep it in x30 throughout.
 * The leaf's x30 is known only in the interrupted frame (regs_valid): elsewhere these shapes
 * cannot arise (a caller's pc is a return address, at a call, in a built frame).
 */
#ifndef STACKSCOPE_HOTSPOT_SHAPES_ARM64_H
#define STACKSCOPE_HOTSPOT_SHAPES_ARM64_H

#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64) /* (empty on the other architecture) */

#include "interp/hotspot/frame_move.h"

#define HS_A64_STP_FP_LR_PRE 0xa9bf7bfdu  /* stp x29, x30, [sp, #-16]! */
#define HS_A64_LDP_FP_LR_POST 0xa8c17bfdu /* ldp x29, x30, [sp], #16 */
#define HS_A64_RET 0xd65f03c0u            /* ret (x30) */
#define HS_A64_PAIR_MASK 0xffc07fffu      /* stp/ldp x29, x30, [sp, #imm7 * 8] */
#define HS_A64_STP_FP_LR 0xa9007bfdu
#define HS_A64_LDP_FP_LR 0xa9407bfdu
#define HS_A64_SP_IMM_MASK 0xff8003ffu /* add/sub sp, sp, #imm12 (lsl 12) */
#define HS_A64_SUB_SP 0xd10003ffu
#define HS_A64_ADD_SP 0x910003ffu
#define HS_A64_PROLOGUE_INSNS 4 /* instructions before pc looked at */

/* The caller is in x30 and sp + sp_add, x29 untouched: only where the sample interrupted. The
 * caller's sp may equal this frame's (a frame not built): the next step has a return address,
 * so the walk still moves up.
 */
static __always_inline int hs_move_lr(struct unwind_cursor *st, __u64 sp_add)
{
	__u64 sp = st->regs[DWARF_RSP] + sp_add;

	if (!st->regs_valid || st->pc_is_return || sp < st->regs[DWARF_RSP] ||
	    sp > SS_USER_ADDR_MAX)
		return hs_bad_frame(st);
	st->regs[DWARF_RIP] = HS_CODE_ADDR(st->regs[SS_ARM64_LR_SLOT]);
	st->regs[DWARF_RSP] = sp;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	return 1;
}

/* The frame record {x29, x30} at sp, the caller's sp above it. */
static __always_inline int hs_move_record_at_sp(struct unwind_cursor *st)
{
	__u64 link[2] = { 0 }, sp = st->regs[DWARF_RSP];

	if (ss_read_user(link, sizeof(link), sp) < 0 || hs_move(st, link[1], sp + 16, link[0]) < 0)
		return hs_bad_frame(st);
	return 1;
}

/* A stub without a frame size, sampled where it runs: one that built a frame record keeps
 * x29 on it ({x29, x30} there, x30 still the same return address): hs_blob() follows x29;
 * else, when x30 returns into Java code, a leaf stub that built nothing (x29 is any register
 * in compiled code, not a frame pointer).
 */
static __always_inline int hs_leaf_stub_step(struct unwind_cursor *st, const struct hs_proc_abi *p)
{
	__u64 lr = HS_CODE_ADDR(st->regs[SS_ARM64_LR_SLOT]), sp = st->regs[DWARF_RSP];
	__u64 fp = st->regs[DWARF_RBP], link[2] = { 0 };

	if (!st->regs_valid || !hs_in_code_heap(p, lr))
		return 0;
	if (fp > sp && fp - sp < HS_FRAME_MAX && ss_read_user(link, sizeof(link), fp) == 0 &&
	    HS_CODE_ADDR(link[1]) == lr)
		return 0;
	return hs_move_lr(st, 0);
}

/* A frame sampled before its frame-complete offset (or frameless) where it runs: the
 * instructions before pc say how far build_frame came.
 */
static __always_inline int hs_unbuilt_step(struct unwind_cursor *st, __s32 frame_size)
{
	__u32 w[HS_A64_PROLOGUE_INSNS + 1] = { 0 }; /* w[HS_A64_PROLOGUE_INSNS]: at pc */
	int k, sub_after = 0;

	if (frame_size <= 0 ||
	    ss_read_user(w, sizeof(w), st->regs[DWARF_RIP] - HS_A64_PROLOGUE_INSNS * 4) < 0)
		return hs_move_lr(st, 0);
	/* at the small frame's stp: sp lowered by the frame size, {x29, x30} not stored yet */
	if ((w[HS_A64_PROLOGUE_INSNS] & HS_A64_PAIR_MASK) == HS_A64_STP_FP_LR)
		return hs_move_lr(st, (__u64)frame_size * 8);
	for (k = HS_A64_PROLOGUE_INSNS - 1; k >= 0; k--) {
		if ((w[k] & HS_A64_PAIR_MASK) == HS_A64_STP_FP_LR)
			return 0; /* the small frame's stp done: whole */
		if (w[k] == HS_A64_STP_FP_LR_PRE)
			return sub_after ? 0 : hs_move_record_at_sp(st);
		if ((w[k] & HS_A64_SP_IMM_MASK) == HS_A64_SUB_SP)
			sub_after = 1;
	}
	/* Before build_frame (the entry's nop, inline-cache check, stack bang): nothing moved. */
	return hs_move_lr(st, 0);
}

/* A built nmethod frame sampled where it runs: past the add that freed it (sp the caller's,
 * the return address in x30: only the return poll and `ret` ahead), or at the larger frame's
 * post-indexed ldp (its record at sp). At the small frame's ldp and add, the frame's memory is
 * still whole.
 */
static __always_inline int hs_epilogue_step(struct unwind_cursor *st)
{
	__u32 w[4] = { 0 };
	int k;

	if (ss_read_user(w, sizeof(w), st->regs[DWARF_RIP]) < 0)
		return 0;
	if (w[0] == HS_A64_LDP_FP_LR_POST) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_EPILOGUE);
		return hs_move_record_at_sp(st);
	}
	for (k = 0; k < 4; k++) {
		if (w[k] == HS_A64_RET) {
			ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_EPILOGUE);
			return hs_move_lr(st, 0);
		}
		if ((w[k] & HS_A64_PAIR_MASK) == HS_A64_LDP_FP_LR ||
		    w[k] == HS_A64_LDP_FP_LR_POST || (w[k] & HS_A64_SP_IMM_MASK) == HS_A64_ADD_SP)
			return 0;
	}
	return 0;
}

#endif /* arm64 */

#endif
