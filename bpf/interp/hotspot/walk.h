/* HotSpot (Java) frames in the native walk: the first code-range walker (included by
 * bpf/interp/dispatch.h, which calls hs_code_step() when the pc about to be emitted lies in
 * a JVM's code cache, a range the process registered in "interp_code").
 *
 * One call emits the frame of that pc and moves the native cursor (pc, sp, fp) to its caller:
 *  - the template interpreter's code ([interp_lo, interp_hi)): an interpreted frame, laid out
 *    from fp (x86-64 frame_x86.hpp: saved fp at fp, return address at fp+8, sender sp, Method*
 *    and bytecode pointer in fixed slots below fp; the slots come from the exported frame
 *    constants). The innermost frame's bytecode pointer is r13 when registers are known;
 *  - a code blob found through its CodeHeap's segment map (segment of pc -> walk back to the
 *    block start -> HeapBlock header -> CodeBlob):
 *      nmethod (C1/C2 code, no frame pointer): the caller's sp is sp + frame_size words,
 *        return address and saved fp just below it; before the frame is complete (prologue)
 *        the return address is still at sp; a caller deoptimised while its callee runs
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

#define HS_SEGMAP_STEPS 16              /* hops back through a segment map (blocks of ~4 MiB) */
#define HS_FRAME_MAX (1ULL << 20)       /* fp or a frame may be at most this far above sp */
#define HS_SLOT_BASE 10                 /* window of interpreter slots: fp - 80 .. fp + 16 */
#define HS_ENTRY_BARRIER_COOKIE (~0ULL) /* see hs_blob() */

struct hs_cursor {
	__u64 slots[HS_SLOT_BASE + 2]; /* interpreter frame: words fp-80 .. fp+8 */
};

/* Move the native cursor to the caller; 0, or -1 when the caller's sp does not lie above. */
static __always_inline int hs_move(struct unwind_cursor *st, __u64 pc, __u64 sp, __u64 fp)
{
	if (sp <= st->regs[DWARF_RSP] || sp > SS_USER_ADDR_MAX)
		return -1;
	st->regs[DWARF_RIP] = pc;
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
		bcp = st->regs[DWARF_R13]; /* rbcp: the slot is only saved at calls */
		/* Method entry, frame linked but its Method* not pushed yet: still in rbx. */
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

/* Where a sampled compiled frame stands in its epilogue, from the code at pc (x86-64: C1's and
 * C2's return is `add rsp, N` (the frame intact until it runs), `pop rbp`, the return poll,
 * then `ret`; the poll is `cmp rsp, [r15 + d]` with `ja` to its stub from JDK 16 on, JDK 11's
 * `mov r10, [r15 + d]; test eax, [r10]`, the polling page): HS_EPILOGUE_AT_POP with pc at the
 * `pop rbp` (sp at the saved fp, the return address above it), HS_EPILOGUE_POPPED past it
 * (the return address at sp, rbp the caller's already), else 0 (the frame is whole). A tiny
 * method spends a third of its samples there; by frame size they ended at "[unwind: bad pc]".
 */
#define HS_EPILOGUE_AT_POP 1
#define HS_EPILOGUE_POPPED 2
#define HS_EPILOGUE_BYTES 16

/* The code's bytes are two words, c[0] = bytes 0-7 and c[1] = 8-15 (little-endian), taken apart
 * with shifts: clang merges the shapes' paths into one with an offset that differs per path,
 * which on a byte array is pointer arithmetic the verifier refuses; on words it is a shift.
 */
static __always_inline __u32 hs_code_byte(const __u64 *c, const int i)
{
	return (__u32)((i < 8 ? c[0] >> (i * 8) : c[1] >> ((i - 8) * 8)) & 0xff);
}

static __always_inline int hs_ret_after_ja(const __u64 *c, const int b)
{
	if (hs_code_byte(c, b) == 0x0f && hs_code_byte(c, b + 1) == 0x87) /* ja rel32 */
		return hs_code_byte(c, b + 6) == 0xc3;
	if (hs_code_byte(c, b) == 0x77) /* ja rel8 */
		return hs_code_byte(c, b + 2) == 0xc3;
	return hs_code_byte(c, b) == 0xc3; /* ret */
}

/* JDK 11: the polling page's test, then `ret`. */
static __always_inline int hs_ret_after_test(const __u64 *c, const int b)
{
	return hs_code_byte(c, b) == 0x41 && hs_code_byte(c, b + 1) == 0x85 &&
	       hs_code_byte(c, b + 2) == 0x02 && hs_code_byte(c, b + 3) == 0xc3; /* test %eax,(%r10) */
}

static __always_inline int hs_ret_after_poll(const __u64 *c, const int b)
{
	__u32 b0 = hs_code_byte(c, b), b1 = hs_code_byte(c, b + 1), b2 = hs_code_byte(c, b + 2);

	if (b0 == 0x49 && b1 == 0x3b && b2 == 0xa7) /* cmp d32(%r15),%rsp */
		return hs_ret_after_ja(c, b + 7);
	if (b0 == 0x49 && b1 == 0x3b && b2 == 0x67) /* cmp d8(%r15),%rsp */
		return hs_ret_after_ja(c, b + 4);
	if (b0 == 0x4d && b1 == 0x8b && b2 == 0x97) /* mov d32(%r15),%r10 */
		return hs_ret_after_test(c, b + 7);
	if (b0 == 0x4d && b1 == 0x8b && b2 == 0x57) /* mov d8(%r15),%r10 */
		return hs_ret_after_test(c, b + 4);
	return hs_ret_after_test(c, b) || hs_ret_after_ja(c, b);
}

static __always_inline int hs_epilogue(const __u64 *c)
{
	if (hs_code_byte(c, 0) == 0x5d) /* pop %rbp */
		return hs_ret_after_poll(c, 1) ? HS_EPILOGUE_AT_POP : 0;
	return hs_ret_after_poll(c, 0) ? HS_EPILOGUE_POPPED : 0;
}

/* How far a frame's prologue has come at a sampled pc before its frame-complete offset, from
 * the code around pc (x86-64). C1 and C2 of JDK 17 build a frame with `push rbp; sub rsp, N`;
 * C2 of JDK 25 with `sub rsp, N; mov rbp, N-8(rsp)`, then the nmethod entry barrier
 * `cmpl $v, d(r15); jne` before its frame-complete offset:
 *   HS_PROLOGUE_RA_AT (*ra_off set): at the mov, the return address at sp + d + 8, rbp the
 *     caller's; 0 elsewhere before the frame (its first instruction, a stack bang, the
 *     inline-cache check, the push): the return address at sp;
 *   HS_PROLOGUE_PUSHED: at the sub after a push, saved fp at sp, the return address above;
 *   HS_PROLOGUE_BUILT: at the entry barrier, the frame is whole.
 */
#define HS_PROLOGUE_RA_AT 0
#define HS_PROLOGUE_PUSHED 1
#define HS_PROLOGUE_BUILT 2

static __always_inline int hs_prologue(__u64 pc, __s64 *ra_off)
{
	__u8 c[16] = { 0 }; /* c[8] is the byte at pc */

	*ra_off = 0;
	if (ss_read_user(c, sizeof(c), pc - 8) < 0)
		return HS_PROLOGUE_RA_AT;
	if (c[8] == 0x48 && c[9] == 0x89 && c[10] == 0x6c && c[11] == 0x24) {
		*ra_off = (__s64)c[12] + 8; /* mov %rbp,d8(%rsp) */
		return HS_PROLOGUE_RA_AT;
	}
	if (c[7] == 0x55 && c[8] == 0x48 && (c[9] == 0x83 || c[9] == 0x81) && c[10] == 0xec)
		return HS_PROLOGUE_PUSHED; /* push %rbp, then sub $N,%rsp */
	if (c[8] == 0x41 && c[9] == 0x81 && c[10] == 0x7f)
		return HS_PROLOGUE_BUILT; /* cmpl $v,d8(%r15) */
	if (c[0] == 0x41 && c[1] == 0x81 && c[2] == 0x7f && c[8] == 0x0f && c[9] == 0x85)
		return HS_PROLOGUE_BUILT; /* its jne */
	return HS_PROLOGUE_RA_AT;
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
	if (frame_size <= 0 && !nm && !st->pc_is_return && ss_read_user(&ra, sizeof(ra), sp) == 0 &&
	    hs_in_code_heap(p, ra)) {
		/* A leaf stub that built no frame (array copies, checks): the word at sp is a
		 * return address into Java code, where the fp chain would follow the caller's rbp,
		 * a scratch register in compiled code.
		 */
		if (hs_move(st, ra, sp + 8, fp) < 0)
			return hs_bad_frame(st);
		return 1;
	}
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
		/* Not built yet (prologue) or frameless: the return address is still at sp, unless
		 * the code at pc says how far the frame has come (hs_prologue()).
		 */
		__s64 ra_off = 0;
		int where = 0;

		if (frame_size > 0)
			where = hs_prologue(pc, &ra_off);
		if (where == HS_PROLOGUE_BUILT)
			goto built;
		if (where == HS_PROLOGUE_PUSHED) {
			__u64 link[2] = { 0 };

			if (ss_read_user(link, sizeof(link), sp) < 0 ||
			    hs_move(st, link[1], sp + 16, link[0]) < 0)
				return hs_bad_frame(st);
			return 1;
		}
		if (ss_read_user(&ra, 8, sp + (__u64)ra_off) < 0 ||
		    hs_move(st, ra, sp + (__u64)ra_off + 8, fp) < 0)
			return hs_bad_frame(st);
		return 1;
	}
	if (frame_size == 0)
		return hs_bad_frame(st);
built:
	if (nm && !st->pc_is_return) {
		__u64 c[HS_EPILOGUE_BYTES / 8] = { 0 };
		__u64 link[2] = { 0 };
		int where = 0;

		if (ss_read_user(c, sizeof(c), pc) == 0)
			where = hs_epilogue(c);
		if (where) {
			ss_interp_count(FRAME_KIND_HOTSPOT, HS_COUNTER_EPILOGUE);
			if (ss_read_user(link, sizeof(link), sp) < 0)
				return hs_bad_frame(st);
			if (where == HS_EPILOGUE_AT_POP) {
				if (hs_move(st, link[1], sp + 16, link[0]) < 0)
					return hs_bad_frame(st);
			} else if (hs_move(st, link[0], sp + 8, fp) < 0) {
				return hs_bad_frame(st);
			}
			return 1;
		}
	}
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
