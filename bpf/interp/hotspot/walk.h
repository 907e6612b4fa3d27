/* HotSpot (Java) frames in the native walk: the first code-range walker (included by
 * bpf/interp/dispatch.h, which calls hs_code_step() when the pc about to be emitted lies in
 * a JVM's code cache, a range the process registered in "interp_code").
 *
 * One call emits the frame of that pc and moves the native cursor (pc, sp, fp) to its caller:
 *  - the template interpreter's code ([interp_lo, interp_hi)): an interpreted frame, laid out
 *    from fp (frame_x86.hpp, frame_aarch64.hpp: saved fp at fp, return address at fp+8, sender
 *    sp, Method* and bytecode pointer in fixed slots below fp; the slots come from the
 *    exported frame constants). The innermost frame's bytecode pointer is r13 (arm64: x22, in
 *    r13's slot) when registers are known;
 *  - a code blob found through its CodeHeap's segment map (segment of pc -> walk back to the
 *    block start -> HeapBlock header -> CodeBlob):
 *      nmethod (C1/C2 code, no frame pointer): the caller's sp is sp + frame_size words,
 *        return address and saved fp just below it; before the frame is complete (prologue),
 *        in its epilogue and in a leaf stub the code at pc says where the caller is (per
 *        architecture: shapes_x86_64.h, shapes_arm64.h); a caller deoptimised while its callee runs
 *        returns to its deopt handler, its original return address saved at sp +
 *        _orig_pc_offset (emitted instead, so that its line and inlined frames are found);
 *      other blobs (stubs, adapters, runtime blobs): by frame_size when they have one, else
 *        through the frame pointer.
 * The caller's sp must lie above this frame's sp, so the walk cannot loop; a frame whose
 * caller cannot be found ends the stack (UNWIND_END_BAD_FRAME, counted).
 *
 * The walk keeps no state between calls (struct hs_cursor is scratch for one call only).
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count).
 */
#ifndef STACKSCOPE_HOTSPOT_WALK_H
#define STACKSCOPE_HOTSPOT_WALK_H

#include "interp/common.h"
#include "interp/hotspot/bpf_abi.h"
#include "interp/hotspot/frame_move.h"
#include "interp/hotspot/shapes_x86_64.h"
#include "interp/hotspot/shapes_arm64.h"

#define HS_SEGMAP_STEPS 16              /* hops back through a segment map (blocks of ~4 MiB) */
#define HS_SLOT_BASE 10                 /* window of interpreter slots: fp - 80 .. fp + 16 */
#define HS_ENTRY_BARRIER_COOKIE (~0ULL) /* see hs_blob() */

struct hs_cursor {
	__u64 slots[HS_SLOT_BASE + 2]; /* interpreter frame: words fp-80 .. fp+8 */
};

static __always_inline int hs_interpreted(struct unwind_cursor *st, struct hs_cursor *hc,
					  const struct hs_proc_abi *p, struct user_frame *frames)
{
	__u64 sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP], method, bcp, slot_bcp, cm = 0;
	__u64 sender;
	__u64 bci = HS_BCI_NONE;
	__s32 ms = p->slot_method + HS_SLOT_BASE, bs = p->slot_bcp + HS_SLOT_BASE;
	__s32 ss = p->slot_sender_sp + HS_SLOT_BASE;

	if (fp < sp || fp - sp > HS_FRAME_MAX || ms < 0 || ms >= HS_SLOT_BASE || bs < 0 ||
	    bs >= HS_SLOT_BASE || ss < 0 || ss >= HS_SLOT_BASE) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_BAD_FRAME);
		return 0;
	}
	if (ss_read_user(hc->slots, sizeof(hc->slots), fp - HS_SLOT_BASE * 8) < 0) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_READ_FAILED);
		return 0;
	}
	method = hc->slots[ms & 15];
	slot_bcp = bcp = hc->slots[bs & 15];
	if (!st->pc_is_return && st->regs_valid) {
		/* rbcp (x86-64 r13, arm64 x22, in r13's slot): the slot is only saved at calls */
		bcp = st->regs[DWARF_R13];
		/* Method entry, frame linked but its Method* not pushed yet: still in rbx (x86-64;
		 * arm64 stores it with the frame, before x29 points at it).
		 */
		if (sp > fp + (__s64)p->slot_method * 8)
			method = st->regs[DWARF_RBX];
	}
	if (ss_read_user(&cm, sizeof(cm), method + p->method_const) < 0) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_READ_FAILED);
		cm = 0;
	}
	if (cm && bcp >= cm + p->const_size && bcp - cm - p->const_size < 0x10000)
		bci = bcp - cm - p->const_size;
	else if (cm && slot_bcp >= cm + p->const_size && slot_bcp - cm - p->const_size < 0x10000)
		bci = slot_bcp - cm - p->const_size; /* r13 was not the bcp (a callee's entry) */
	ss_interp_code_frame(st, frames, FRAME_KIND_HOTSPOT, method, HS_SUB_INTERPRETED, bci,
			     (__u32)(cm >> 3));
	ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_INTERPRETED);
	sender = hc->slots[ss & 15];
	if (sender < fp + 16 || sender - fp > HS_FRAME_MAX)
		sender = fp + 16;
	if (hs_move(st, hc->slots[HS_SLOT_BASE + 1], sender, hc->slots[HS_SLOT_BASE]) < 0)
		return hs_bad_frame(st);
	return 1;
}

/* The pc offset a compiled frame is emitted with: pc - code, or, when pc is the nmethod's
 * deopt handler (the frame was deoptimised while its callee ran), the offset of the return
 * address HotSpot saved in the frame.
 */
static __always_inline __u64 hs_compiled_pos(struct unwind_cursor *st, const struct hs_proc_abi *p,
					     __u64 blob, __u64 code, __s32 frame_size)
{
	__u64 pc = st->regs[DWARF_RIP], handler = 0, orig = 0;
	__s32 off = 0;

	if (!st->pc_is_return || p->nm_deopt == HS_NO_OFFSET)
		return pc - code;
	if (p->deopt_is_offset) {
		if (ss_read_user(&off, sizeof(off), blob + p->nm_deopt) < 0 || off <= 0)
			return pc - code;
		handler = blob + (__u64)off;
	} else if (ss_read_user(&handler, sizeof(handler), blob + p->nm_deopt) < 0) {
		return pc - code;
	}
	if (pc != handler)
		return pc - code;
	off = 0;
	if (ss_read_user(&off, sizeof(off), blob + p->nm_orig_pc) < 0 || off <= 0 ||
	    off >= frame_size * 8 ||
	    ss_read_user(&orig, sizeof(orig), st->regs[DWARF_RSP] + (__u64)off) < 0 ||
	    orig < code || orig - code >= (1u << 28))
		return pc - code;
	ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_DEOPT);
	return orig - code;
}

/* The CodeBlob holding pc, found through its heap's segment map; 0 when none. */
static __always_inline __u64 hs_find_blob(const struct hs_proc_abi *p, __u64 pc)
{
	__u64 low = 0, segmap = 0, idx;
	__u8 shift = 0, b = 0;
	int i;

	for (i = 0; i < HS_MAX_HEAPS; i++) {
		if (i < p->heap_cnt && pc >= p->heap[i].low && pc < p->heap[i].high) {
			low = p->heap[i].low;
			segmap = p->heap[i].segmap;
			shift = p->log2_seg[i] & 31;
		}
	}
	if (!low || !segmap)
		return 0;
	idx = (pc - low) >> shift;
	for (i = 0; i < HS_SEGMAP_STEPS; i++) {
		if (ss_read_user(&b, 1, segmap + idx) < 0 || b == 0xff)
			return 0;
		if (b == 0)
			return low + (idx << shift) + p->block_hdr;
		if (b > idx)
			return 0;
		idx -= b;
	}
	return 0;
}

static __always_inline int hs_blob(struct unwind_cursor *st, const struct hs_proc_abi *p,
				   struct user_frame *frames, __u64 blob)
{
	__u64 pc = st->regs[DWARF_RIP], sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP];
	__u64 code = 0, name = 0, word = 0, method = 0, sender, ra = 0, saved_fp = 0;
	__s32 frame_size = 0, complete = 0, compile_id = 0, off = 0;
	__u8 kind = 0, nm;

	if (p->code_is_offset) {
		if (ss_read_user(&off, sizeof(off), blob + p->blob_code) < 0)
			goto read_failed;
		code = blob + (__s64)off;
	} else if (ss_read_user(&code, sizeof(code), blob + p->blob_code) < 0) {
		goto read_failed;
	}
	if (ss_read_user(&frame_size, sizeof(frame_size), blob + p->blob_frame_size) < 0 ||
	    ss_read_user(&complete, p->frame_complete_16 ? 2 : 4, blob + p->blob_frame_complete) <
		    0)
		goto read_failed;
	if (p->frame_complete_16)
		complete = (__s16)complete;
	if (p->blob_kind != HS_NO_OFFSET) {
		if (ss_read_user(&kind, 1, blob + p->blob_kind) < 0)
			goto read_failed;
		nm = kind == p->kind_nmethod;
	} else {
		if (ss_read_user(&name, sizeof(name), blob + p->blob_name) < 0 ||
		    ss_read_user(&word, sizeof(word), name) < 0)
			goto read_failed;
		/* "nmethod\0", or "native n(method)": JDK 17 names native wrappers so. */
		nm = word == 0x646f6874656d6eULL || word == 0x6e2065766974616eULL;
	}
	if (pc < code || pc - code >= (1u << 28)) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_NO_BLOB);
		return 0;
	}
	if (nm) {
		if (ss_read_user(&method, sizeof(method), blob + p->nm_method) < 0 ||
		    ss_read_user(&compile_id, sizeof(compile_id), blob + p->nm_compile_id) < 0)
			goto read_failed;
		ss_interp_code_frame(st, frames, FRAME_KIND_HOTSPOT, blob, HS_SUB_COMPILED,
				     hs_compiled_pos(st, p, blob, code, frame_size),
				     (__u32)compile_id);
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_COMPILED);
	} else {
		ss_interp_code_frame(st, frames, FRAME_KIND_HOTSPOT, blob, HS_SUB_STUB, pc - code,
				     0);
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_STUB);
	}
	if (frame_size <= 0 && !nm && !st->pc_is_return && hs_leaf_stub_step(st, p))
		return 1;
	if (frame_size <= 0 && !nm && fp > sp && fp - sp < HS_FRAME_MAX) {
		/* A stub with no frame size of its own keeps the frame-pointer chain: saved fp,
		 * return address. The nmethod entry barrier's stub (x86-64: push -1, then enter)
		 * has its cookie between the two, -1 unless it deoptimises: the return address is
		 * one word higher.
		 */
		__u64 link[3] = { 0 };

		if (ss_read_user(link, sizeof(link), fp) < 0)
			return hs_bad_frame(st);
		if (link[1] == HS_ENTRY_BARRIER_COOKIE) {
			ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_BARRIER);
			if (hs_move(st, link[2], fp + 24, link[0]) < 0)
				return hs_bad_frame(st);
			return 1;
		}
		if (hs_move(st, link[1], fp + 16, link[0]) < 0)
			return hs_bad_frame(st);
		return 1;
	}
	if (frame_size < 0 || frame_size > (1 << 16))
		return hs_bad_frame(st);
	if (!st->pc_is_return && (frame_size == 0 || (__s64)(pc - code) < complete)) {
		/* Not built yet (prologue) or frameless: the code at pc says how far it came. */
		if (hs_unbuilt_step(st, frame_size))
			return 1;
		goto built;
	}
	if (frame_size == 0)
		return hs_bad_frame(st);
built:
	if (nm && !st->pc_is_return && hs_epilogue_step(st))
		return 1;
	sender = sp + (__u64)frame_size * 8;
	if (ss_read_user(&ra, 8, sender - 8) < 0 || ss_read_user(&saved_fp, 8, sender - 16) < 0 ||
	    hs_move(st, ra, sender, saved_fp) < 0)
		return hs_bad_frame(st);
	return 1;
read_failed:
	ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_READ_FAILED);
	return 0;
}

/* The pc about to be emitted lies in a JVM's code cache. 1: this iteration emitted something
 * (and, for a Java frame, moved the cursor to its caller), 0: the native step runs now.
 */
static __always_inline int hs_code_step(struct unwind_cursor *st, struct interp_state *is,
					struct hs_cursor *hc, struct user_frame *frames, int guess)
{
	const struct interp_proc *proc;
	const struct hs_proc_abi *p;
	__u64 pc = st->regs[DWARF_RIP], lookup_pc = st->pc_is_return ? pc - 1 : pc, blob;

	if (is->off & INTERP_BIT(FRAME_KIND_HOTSPOT))
		return 0;
	proc = ss_interp_proc(st->pid, FRAME_KIND_HOTSPOT);
	if (!proc) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_NO_PROC);
		return 0;
	}
	p = &proc->hs;
	if (!p->supported) {
		/* A JVM refused (its tables lack what the walk needs): its code has neither
		 * unwind information nor, in compiled code, a frame pointer to follow. The marker
		 * stands for its Java frames and ends the stack (not as an unwind error: the
		 * frames below it, the native ones the JVM called, are whole).
		 */
		ss_interp_code_fail(st, is, frames, FRAME_KIND_HOTSPOT, HS_MARKER_UNSUPPORTED,
				    HS_COUNTER_UNSUPPORTED);
		st->done = 1; /* (the native walk's ss_end(), which this file cannot see) */
		st->end = UNWIND_END_OK;
		return 1;
	}
	if (!p->ready) {
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_NOT_READY);
		return 0;
	}
	is->started |= INTERP_BIT(
		FRAME_KIND_HOTSPOT); /* its frames need the JVM's code cache: no deferred replay */
	if (st->frame_cnt >= SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_HOTSPOT, HS_MARKER_TRUNCATED,
				    HS_COUNTER_TRUNCATED);
		return 1;
	}
	if (lookup_pc >= p->interp_lo && lookup_pc < p->interp_hi)
		return hs_interpreted(st, hc, p, frames);
	blob = hs_find_blob(p, lookup_pc);
	if (!blob) {
		ss_interp_marker(st, frames, FRAME_KIND_HOTSPOT, HS_MARKER_NO_BLOB);
		ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_NO_BLOB);
		return 1;
	}
	return hs_blob(st, p, frames, blob);
}

#endif
