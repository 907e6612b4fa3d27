/* HotSpot's x86-64 code shapes for the code-range walk (included by bpf/interp/hotspot/walk.h
 * when not built for arm64; bpf/interp/hotspot/shapes_arm64.h has the same three steps): where
 * the caller of a code blob is when the sampled pc stands where the frame size alone does not
 * place it (a leaf stub without a frame, a prologue, an epilogue), read from the code at pc.
 * Each step: 1 when it moved the cursor to the caller (or ended the stack), 0 when the frame
 * is whole (or not that case) and hs_blob() places the caller by the frame size.
 */
#ifndef STACKSCOPE_HOTSPOT_SHAPES_X86_64_H
#define STACKSCOPE_HOTSPOT_SHAPES_X86_64_H

#if !defined(__TARGET_ARCH_arm64) && !defined(SS_ARCH_ARM64) /* (empty on the other architecture) */

#include "interp/hotspot/frame_move.h"

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
	       hs_code_byte(c, b + 2) == 0x02 &&
	       hs_code_byte(c, b + 3) == 0xc3; /* test %eax,(%r10) */
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

/* A stub without a frame size, sampled where it runs (not a return address). */
static __always_inline int hs_leaf_stub_step(struct unwind_cursor *st, const struct hs_proc_abi *p)
{
	__u64 ra = 0, sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP];

	if (ss_read_user(&ra, sizeof(ra), sp) == 0 && hs_in_code_heap(p, ra)) {
		/* A leaf stub that built no frame (array copies, checks): the word at sp is a
		 * return address into Java code, where the fp chain would follow the caller's rbp,
		 * a scratch register in compiled code.
		 */
		if (hs_move(st, ra, sp + 8, fp) < 0)
			return hs_bad_frame(st);
		return 1;
	}
	return 0;
}

/* A frame sampled before its frame-complete offset (or frameless) where it runs. */
static __always_inline int hs_unbuilt_step(struct unwind_cursor *st, __s32 frame_size)
{
	/* Not built yet (prologue) or frameless: the return address is still at sp, unless
	 * the code at pc says how far the frame has come (hs_prologue()).
	 */
	__u64 ra = 0, sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP];
	__s64 ra_off = 0;
	int where = 0;

	if (frame_size > 0)
		where = hs_prologue(st->regs[DWARF_RIP], &ra_off);
	if (where == HS_PROLOGUE_BUILT)
		return 0;
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

/* A built nmethod frame sampled where it runs: in its epilogue? */
static __always_inline int hs_epilogue_step(struct unwind_cursor *st)
{
	__u64 c[HS_EPILOGUE_BYTES / 8] = { 0 };
	__u64 link[2] = { 0 }, sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP];
	int where = 0;

	if (ss_read_user(c, sizeof(c), st->regs[DWARF_RIP]) == 0)
		where = hs_epilogue(c);
	if (!where)
		return 0;
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

#endif /* x86-64 */

#endif
