/* The HotSpot walk's moves of the native cursor (bpf/interp/hotspot/walk.h and its code
 * shapes, shapes_x86_64.h and shapes_arm64.h): to a caller found above the frame, or to the end
 * of the stack when none is.
 */
#ifndef STACKSCOPE_HOTSPOT_FRAME_MOVE_H
#define STACKSCOPE_HOTSPOT_FRAME_MOVE_H

#include "interp/common.h"
#include "interp/hotspot/bpf_abi.h"

#define HS_FRAME_MAX (1ULL << 20) /* fp or a frame may be at most this far above sp */

/* A return address as code: arm64's may carry a pointer-authentication code above the
 * address bits (bpf/arch/arm64.h); x86-64's is the address.
 */
#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
#define HS_CODE_ADDR(a) ((a)&SS_USER_ADDR_MAX)
#else
#define HS_CODE_ADDR(a) (a)
#endif

/* Move the native cursor to the caller; 0, or -1 when the caller's sp does not lie above. */
static __always_inline int hs_move(struct unwind_cursor *st, __u64 pc, __u64 sp, __u64 fp)
{
	if (sp <= st->regs[DWARF_RSP] || sp > SS_USER_ADDR_MAX)
		return -1;
	st->regs[DWARF_RIP] = HS_CODE_ADDR(pc);
	st->regs[DWARF_RSP] = sp;
	st->regs[DWARF_RBP] = fp;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	return 0;
}

/* The caller could not be found: the stack ends after the frame just emitted. */
static __always_inline int hs_bad_frame(struct unwind_cursor *st)
{
	ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_BAD_FRAME);
	st->done = 1;
	st->end = UNWIND_END_BAD_FRAME;
	return 1;
}

/* Does addr lie in one of the JVM's code heaps? */
static __always_inline int hs_in_code_heap(const struct hs_proc_abi *p, __u64 addr)
{
	int i;

	for (i = 0; i < HS_MAX_HEAPS; i++)
		if (i < p->heap_cnt && addr >= p->heap[i].low && addr < p->heap[i].high)
			return 1;
	return 0;
}

#endif
