/* V8 (Node.js) JavaScript frames in the native walk (included by bpf/interp/dispatch.h,
 * which calls v8_activation() when the pc about to be emitted lies in node's embedded builtins,
 * the file range of the node binary, or v8_code_step() in V8's JIT code, a range the process
 * registered in "interp_code").
 *
 * V8 code keeps the frame pointer, and every V8 frame has the same head (frames.h,
 * StandardFrameConstants): saved fp at fp, return address at fp+8, and at fp-8 either a
 * context (a tagged pointer: a JavaScript frame) or a frame-type marker (a small integer with
 * the Smi tag bit clear: entry, exit, stub frames). A JavaScript frame holds its JSFunction
 * at fp-16; interpreted frames (and baseline ones, which share the layout) also hold their
 * BytecodeArray at fp-32 and, interpreted only, the current bytecode offset as a Smi at
 * fp-40, saved by the bytecode handlers before every call. The slots come from the binary's
 * v8dbg_off_fp_* symbols.
 *
 * One call looks at the frame whose frame pointer is rbp:
 *  - a JavaScript frame (the function slot holds an object whose map says JSFunction):
 *    emits (SharedFunctionInfo, bytecode offset or none, cookie), or (Code, pc offset,
 *    instruction start) when the function's own optimised code holds the pc, and moves the
 *    cursor to the caller: pc = [fp+8], sp = fp+16, fp = [fp]. Its kind comes from the code
 *    its pc lies in, never from its slots alone: a pc in JIT code is the function's own
 *    baseline or optimised Code, or else code userspace finds by the pc (OSR code runs in
 *    the interpreter frame it replaced, whose BytecodeArray and bytecode offset stay in their
 *    slots, stale); only a pc in node's builtins can be the interpreter's;
 *  - a marker frame, or no JSFunction: in the builtins (file range) the native step runs
 *    instead (the builtin is named by its ELF symbol); in JIT code a marker frame is emitted
 *    and the cursor moves by the fp chain the same way.
 * The innermost frame, interrupted in a bytecode handler, takes its bytecode offset from the
 * handler's register (r9, V8's kInterpreterBytecodeOffsetRegister) when r12
 * (kInterpreterBytecodeArrayRegister; r14 in V8 7.8) holds the frame's BytecodeArray: the
 * slot is only saved at calls. A function interrupted before its frame is built (prologue)
 * is missing from the sample (before `mov rbp, rsp` its caller is shown as the innermost
 * frame; after it, until the function slot is pushed, sp lies above that slot and the frame
 * is skipped, counted): missing, never misnamed.
 *
 * arm64 (__TARGET_ARCH_arm64, SS_ARCH_ARM64 in the replay tests): the same frames (V8 10.2's
 * frame-constants-arm64.h: the frame record {caller's fp, lr} at fp, the slots below it as
 * on x86-64, rbp's role is x29's), return addresses stripped of a pointer-authentication
 * code (V8's control-flow integrity build signs them), the handlers' registers x19 (offset)
 * and x20 (BytecodeArray) sampled into the r9 and r12 slots (bpf/arch/sample_regs.h), and a
 * builtin without a frame (or before its `stp x29, x30`, after its `ldp`) has its return
 * address still in x30, not at sp.
 *
 * The caller's sp must lie above this frame's sp, so the walk cannot loop; a frame whose
 * caller cannot be found ends the stack (UNWIND_END_BAD_FRAME, counted). The walk keeps no
 * state between calls, so it cannot corrupt another runtime's cursor when stacks interleave
 * (V8 embedded in a process that also runs Python). Only the includer's hooks touch the world.
 */
#ifndef STACKSCOPE_V8_WALK_H
#define STACKSCOPE_V8_WALK_H

#include "interp/common.h"
#include "interp/v8/bpf_abi.h"

#define V8_FRAME_MAX (1ULL << 20) /* fp may be at most this far above sp */

#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
#define V8_RA(raw) ss_strip_pac(raw) /* a return address as stored in a frame */
#define V8_LR_RA 1                   /* a frameless builtin's return address is in x30 */
#define V8_LR_SLOT SS_ARM64_LR_SLOT
#else
#define V8_RA(raw) (raw)
#define V8_LR_RA 0
#define V8_LR_SLOT 0
#endif
#define V8_SLOT_BASE 6 /* window of frame slots: fp - 48 .. fp + 16 */

struct v8_cursor {
	__u64 slots[V8_SLOT_BASE + 2]; /* words fp-48 .. fp+8 */
	__u64 sfi[4];                  /* SharedFunctionInfo words from name_or_scope_info */
	__u64 code[4];     /* Code words from code_start (then [0]: instruction start) */
	__u64 code_cookie; /* the optimised frame's cookie (bpf_abi.h) */
};

/* The slot `off` bytes from fp (a v8dbg_off_fp_* value), from the window read. */
static __always_inline __u64 v8_slot(const struct v8_cursor *vc, __s8 off)
{
	__s32 b = off + V8_SLOT_BASE * 8; /* bytes from the window's start (no signed division) */

	if (b < 0 || b >= (V8_SLOT_BASE + 2) * 8)
		return 0;
	return vc->slots[((__u32)b >> 3) & 7];
}

/* The instance type of the heap object at tagged pointer obj; 0 when unreadable or not an
 * object.
 */
static __always_inline __u16 v8_type(const struct v8_proc_abi *p, __u64 obj)
{
	__u64 map = 0;
	__u16 type = 0;

	if ((obj & 3) != 1 || ss_read_user(&map, sizeof(map), obj - 1) < 0 || (map & 3) != 1 ||
	    ss_read_user(&type, sizeof(type), map - 1 + p->map_type) < 0)
		return 0;
	return type;
}

/* Move the native cursor to the caller of the frame at fp; 1, or ends the stack. */
static __always_inline int v8_to_caller(struct unwind_cursor *st, const struct v8_cursor *vc,
					__u64 fp)
{
	__u64 ra = V8_RA(vc->slots[V8_SLOT_BASE + 1]), saved_fp = vc->slots[V8_SLOT_BASE];

	if (fp + 16 <= st->regs[DWARF_RSP] || fp + 16 > SS_USER_ADDR_MAX || ra < 0x1000) {
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_NO_CALLER);
		st->done = 1;
		st->end = UNWIND_END_BAD_FRAME;
		return 1;
	}
	st->regs[DWARF_RIP] = ra;
	st->regs[DWARF_RSP] = fp + 16;
	st->regs[DWARF_RBP] = saved_fp;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	return 1;
}

/* arm64: the frame at fp, returned to in one of node's builtins, is an entry frame (JSEntry
 * and its construct and microtask variants: the marker of an entry type at the context slot),
 * whose builtin pushed the C++ caller's callee-saved registers before its frame record: the
 * builtin is emitted as the native frame it is and the cursor moves to that caller with sp
 * above those registers (the native step's fp + 16 would give its CFI a wrong CFA). 1, or 0:
 * not such a frame.
 */
static __always_inline int v8_entry_frame(struct unwind_cursor *st, const struct v8_proc_abi *p,
					  const struct v8_cursor *vc, struct user_frame *frames,
					  __u64 fp)
{
	__u64 marker = v8_slot(vc, p->fp_context), ra = V8_RA(vc->slots[V8_SLOT_BASE + 1]);
	__u32 idx = st->frame_cnt;

	if (!p->entry_sp || !st->pc_is_return || (marker & 1) || marker >= 16 ||
	    !(p->entry_types & 1u << (marker >> 1)) || idx >= SS_MAX_USER_FRAMES ||
	    fp + p->entry_sp > SS_USER_ADDR_MAX || ra < 0x1000)
		return 0;
	ss_interp_put(st, frames, idx, FRAME_KIND_NATIVE, st->regs[DWARF_RIP] - st->last_map.bias,
		      st->last_map.file_id, 0);
	st->regs[DWARF_RIP] = ra;
	st->regs[DWARF_RSP] = fp + p->entry_sp;
	st->regs[DWARF_RBP] = vc->slots[V8_SLOT_BASE];
	st->regs_valid = 0;
	ss_interp_count(FRAME_KIND_V8, V8_COUNTER_STUB);
	return 1;
}

/* The bytecode offset of an interpreted frame (V8_POS_NONE: unknown). */
static __always_inline __u64 v8_bytecode_pos(struct unwind_cursor *st, const struct v8_proc_abi *p,
					     const struct v8_cursor *vc, __u64 lookup_pc, __u64 fp)
{
	__u64 raw = v8_slot(vc, p->fp_bytecode_offset), array = v8_slot(vc, p->fp_bytecode_array);

	/* The innermost frame still being built: its offset slot is not pushed yet (what is
	 * there is an older frame's).
	 */
	if (raw & 1 || (!st->pc_is_return && st->regs[DWARF_RSP] > fp + p->fp_bytecode_offset))
		return V8_POS_NONE;
	raw = (__s64)raw >> 32; /* a Smi: the value in the upper half (no pointer compression) */
	if (!st->pc_is_return && lookup_pc >= p->handlers_lo && lookup_pc < p->handlers_hi) {
		/* The slot is stale inside a handler: the live offset is in r9 when r12 proves the
		 * registers are the handler's.
		 */
		if (!st->regs_valid || st->regs[p->bc_reg_r14 ? DWARF_R14 : DWARF_R12] != array)
			return V8_POS_NONE;
		raw = st->regs[DWARF_R9];
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_LEAF_OFFSET);
	}
	if (raw < (__u64)p->bc_data - 1 || raw - (p->bc_data - 1) >= V8_POS_NONE)
		return V8_POS_NONE;
	return raw - (p->bc_data - 1);
}

/* A JS frame running its function's own code, when that is baseline (Sparkplug) or
 * optimised (Maglev, TurboFan) code holding pc: its v8_sub with *pos = the pc offset (for
 * baseline code with the code check, bpf_abi.h) and *code the Code; V8_SUB_INTERPRETED when
 * its own Code holds pc but is of another kind: the function's copy of the interpreter's
 * entry trampoline (--interpreted-frames-native-stack); 0 when the function's Code does not
 * hold pc (interpreted, OSR code, code replaced on stack).
 */
static __always_inline __u64 v8_code_pos(const struct v8_proc_abi *p, struct v8_cursor *vc,
					 __u64 fn, __u64 pc, __u64 *pos, __u64 *code)
{
	__u64 start, off;
	__u32 flags, kind;
	__s32 size;

	/* fn_code 0: the function keeps no Code (V8 13.6's dispatch handle): found by pc */
	if (!p->code_ok || !p->fn_code ||
	    ss_read_user(code, sizeof(*code), fn - 1 + p->fn_code) < 0 || (*code & 3) != 1 ||
	    ss_read_user(vc->code, sizeof(vc->code), *code - 1 + p->code_start) < 0)
		return 0;
	flags = (__u32)(vc->code[(p->code_flags >> 3) & 3] >> ((p->code_flags & 7) * 8));
	size = (__s32)(vc->code[(p->code_size >> 3) & 3] >> ((p->code_size & 7) * 8));
	/* V8 10: the instructions follow the Code's header; vc->code[0] is the start from now */
	if (p->code_inline)
		vc->code[0] = *code - 1 + p->code_inline;
	start = vc->code[0];
	vc->code_cookie = (__u32)(p->code_inline ? start ^ (__u64)size << 16 : start);
	kind = (flags & p->kind_mask) ^ p->kind_xor;
	if (size <= 0 || pc < start || pc - start >= (__u64)size)
		return 0;
	off = pc - start;
	if (kind == p->kind_baseline) {
		*pos = (*code >> 3 & 0xff) << V8_BASELINE_CHECK_SHIFT | off;
		return off < V8_BASELINE_PC_MAX ? V8_SUB_BASELINE : 0;
	}
	if (p->kind_opt_lo && kind >= p->kind_opt_lo && kind <= p->kind_opt_hi) {
		*pos = off;
		return off < V8_POS_NONE ? V8_SUB_OPTIMIZED : 0;
	}
	return V8_SUB_INTERPRETED;
}

/* pc lies in one of the process's V8 code ranges ("interp_code", looked up once a sample). */
static __always_inline int v8_in_jit(struct unwind_cursor *st, struct interp_state *is, __u64 pc)
{
	int i, in = 0;

	if (!ss_interp_code_ranges(st, is))
		return 0;
	for (i = 0; i < INTERP_CODE_RANGES; i++)
		if (pc >= is->code.r[i].start && pc < is->code.r[i].end &&
		    is->code.r[i].runtime == FRAME_KIND_V8)
			in = 1;
	return in;
}

/* The innermost frame is in one of node's builtins (pc, not a bytecode handler) while rbp
 * still is the JavaScript frame fn runs in: a builtin that its caller called without a frame
 * of its own (baseline code's Builtins_ModulusSmi_Baseline, ...), or one in its prologue.
 * Its return address is at sp (at sp + 8 after `push rbp`; arm64: in x30, sp unchanged by
 * the step); when that address lies in the
 * function's own code, in a bytecode handler (an interpreted caller) or in V8's JIT code, the
 * builtin is emitted as the native frame it is and the cursor moves to that return address
 * (the JavaScript frame follows with the line of its call). 1, or 0: not such a frame.
 */
static __always_inline int v8_frameless(struct unwind_cursor *st, struct interp_state *is,
					const struct v8_proc_abi *p, struct v8_cursor *vc,
					struct user_frame *frames, __u64 fn, __u64 fp)
{
	__u64 sp = st->regs[DWARF_RSP], pc = st->regs[DWARF_RIP], w[2], ra, pos, code;
	__u32 idx = st->frame_cnt, skip = 8;

	if (st->pc_is_return || (pc >= p->handlers_lo && pc < p->handlers_hi) ||
	    idx >= SS_MAX_USER_FRAMES)
		return 0;
	if (V8_LR_RA) {
		/* x30 holds it until the builtin calls something: sampled registers only. A
		 * builtin whose frame is built has saved that same x30 at fp + 8 (fp is its
		 * own frame, not its caller's): not frameless.
		 */
		if (!st->regs_valid)
			return 0;
		ra = V8_RA(st->regs[V8_LR_SLOT]);
		if (ra == V8_RA(vc->slots[V8_SLOT_BASE + 1]))
			return 0;
		skip = 0;
	} else {
		if (ss_read_user(w, sizeof(w), sp) < 0)
			return 0;
		ra = w[0];
		if (ra == fp) { /* `push rbp` done, `mov rbp, rsp` not yet */
			ra = w[1];
			skip = 16;
		}
	}
	if (ra < 0x1000 || ra > SS_USER_ADDR_MAX || sp + skip > fp + 16)
		return 0;
	if (!v8_code_pos(p, vc, fn, ra - 1, &pos, &code) &&
	    !(ra - 1 >= p->handlers_lo && ra - 1 < p->handlers_hi) && !v8_in_jit(st, is, ra - 1))
		return 0;
	/* the builtin, in node's file (its ELF symbol) */
	ss_interp_put(st, frames, idx, FRAME_KIND_NATIVE, pc - st->last_map.bias,
		      st->last_map.file_id, 0);
	st->regs[DWARF_RIP] = ra;
	st->regs[DWARF_RSP] = sp + skip;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	ss_interp_count(FRAME_KIND_V8, V8_COUNTER_FRAMELESS);
	return 1;
}

/* The pc about to be emitted is V8 code (in_file: node's builtins, else JIT code; guess: a
 * pc in no mapping and no code range, which in a V8 process is its code space before
 * userspace has read the process's maps: taken only for a JavaScript frame whose own code
 * holds the pc, or code of no function's own; anything else is left to the native step). 1:
 * this iteration emitted a frame and moved the cursor to its caller, 0: the native step runs
 * now.
 */
static __always_inline int v8_step(struct unwind_cursor *st, struct interp_state *is,
				   struct v8_cursor *vc, struct user_frame *frames, int in_file,
				   int guess)
{
	const struct interp_proc *proc;
	const struct v8_proc_abi *p;
	__u64 sp = st->regs[DWARF_RSP], fp = st->regs[DWARF_RBP];
	__u64 pc = st->regs[DWARF_RIP], lookup_pc = st->pc_is_return ? pc - 1 : pc;
	__u64 fn, sfi, code = 0, pos = V8_POS_NONE, sub = V8_SUB_COMPILED;
	int have = 0; /* the slots were read */
	__u16 type;

	if (is->off & INTERP_BIT(FRAME_KIND_V8))
		return 0;
	proc = ss_interp_proc(st->pid, FRAME_KIND_V8);
	if (!proc) {
		if (!guess)
			ss_interp_count(FRAME_KIND_V8, V8_COUNTER_NO_PROC);
		return 0;
	}
	p = &proc->v8;
	if (guess && !p->supported)
		return 0;
	if (!p->supported) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_V8, V8_MARKER_UNSUPPORTED,
				    V8_COUNTER_UNSUPPORTED);
		return 1;
	}
	if (st->frame_cnt >= SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_V8, V8_MARKER_TRUNCATED,
				    V8_COUNTER_TRUNCATED);
		return 1;
	}
	if (fp < sp || fp - sp > V8_FRAME_MAX || fp > SS_USER_ADDR_MAX)
		goto not_js;
	if (ss_read_user(vc->slots, sizeof(vc->slots), fp - V8_SLOT_BASE * 8) < 0) {
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_READ_FAILED);
		goto not_js;
	}
	have = 1;
	if (((v8_slot(vc, p->fp_context) & 1) == 0 || sp > fp + p->fp_function) &&
	    !st->pc_is_return && st->regs_valid && lookup_pc >= p->handlers_lo &&
	    lookup_pc < p->handlers_hi) {
		/* A bytecode handler interrupted in a frame of its own (or one being built): the
		 * interpreted frame is the next one (its offset slot is stale: r9 has the offset,
		 * below).
		 */
		fp = vc->slots[V8_SLOT_BASE];
		if (fp < sp || fp - sp > V8_FRAME_MAX || fp > SS_USER_ADDR_MAX ||
		    ss_read_user(vc->slots, sizeof(vc->slots), fp - V8_SLOT_BASE * 8) < 0)
			goto not_js;
	}
	if (!st->pc_is_return && sp > fp + p->fp_function) {
		/* The innermost frame, linked but its context and function not pushed yet (a
		 * prologue): those slots hold an older frame's values. Missing, not misnamed.
		 */
		if (in_file || guess)
			return 0;
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_PROLOGUE);
		return v8_to_caller(st, vc, fp);
	}
	fn = v8_slot(vc, p->fp_function);
	if ((v8_slot(vc, p->fp_context) & 1) == 0) /* a frame-type marker: entry, exit, stub */
		goto not_js;
	type = v8_type(p, fn);
	if (type < p->type_fn_lo || type > p->type_fn_hi || !type)
		goto not_js;
	if (ss_read_user(&sfi, sizeof(sfi), fn - 1 + p->fn_shared) < 0 || (sfi & 3) != 1 ||
	    ss_read_user(vc->sfi, sizeof(vc->sfi), sfi - 1 + p->sfi_name) < 0) {
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_READ_FAILED);
		goto not_js;
	}
	if (in_file && v8_frameless(st, is, p, vc, frames, fn, fp))
		return 1;
	/* The frame is what the code its pc lies in is, not what its slots look like: OSR code
	 * keeps the interpreter frame it replaced (a BytecodeArray and a stale Smi offset in
	 * their slots). JIT code: the function's own baseline or optimised Code when it holds
	 * the pc, else code of no function's own (OSR code, code replaced on the stack) that
	 * userspace finds by the pc. Node's builtins, or the function's own copy of the
	 * interpreter's entry: the interpreter when the slots say so (a BytecodeArray and a Smi
	 * offset; baseline frames hold the feedback vector there instead), else a JS builtin.
	 */
	if (!in_file)
		sub = v8_code_pos(p, vc, fn, lookup_pc, &pos, &code);
	if (!in_file && (sub == V8_SUB_BASELINE || sub == V8_SUB_OPTIMIZED)) {
		ss_interp_count(FRAME_KIND_V8, sub == V8_SUB_BASELINE ? V8_COUNTER_BASELINE
								      : V8_COUNTER_OPTIMIZED);
	} else if (!in_file && sub != V8_SUB_INTERPRETED) {
		sub = V8_SUB_JIT;
		pos = lookup_pc & V8_POS_NONE;
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_JIT);
	} else if ((v8_slot(vc, p->fp_bytecode_offset) & 1) == 0 &&
		   v8_type(p, v8_slot(vc, p->fp_bytecode_array)) == p->type_bytecode) {
		sub = V8_SUB_INTERPRETED;
		pos = v8_bytecode_pos(st, p, vc, lookup_pc, fp);
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_INTERPRETED);
	} else {
		sub = V8_SUB_COMPILED;
		pos = V8_POS_NONE;
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_COMPILED);
	}
	is->started |= INTERP_BIT(
		FRAME_KIND_V8); /* its frames need the process's heap: no deferred replay */
	if (sub == V8_SUB_OPTIMIZED)
		ss_interp_code_frame(st, frames, FRAME_KIND_V8, code, sub, pos,
				     (__u32)vc->code_cookie);
	else
		ss_interp_code_frame(st, frames, FRAME_KIND_V8, sfi, sub, pos,
				     (__u32)(vc->sfi[0] ^ vc->sfi[p->sfi_script_word & 3] >> 3));
	return v8_to_caller(st, vc, fp);
not_js:
	if (in_file && have && v8_entry_frame(st, p, vc, frames, fp))
		return 1;
	if (in_file || guess)
		return 0;
	/* JIT code of no JS function: a marker, then the fp chain (V8 code keeps it). */
	if (!have) {
		ss_interp_marker(st, frames, FRAME_KIND_V8, V8_MARKER_BAD_FRAME);
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_BAD_FRAME);
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_NO_CALLER);
		st->done = 1;
		st->end = UNWIND_END_BAD_FRAME;
		return 1;
	}
	is->started |= INTERP_BIT(FRAME_KIND_V8);
	if ((v8_slot(vc, p->fp_context) & 1) == 0) {
		/* with the frame's type marker (StackFrame::Type << 1) for userspace to name */
		ss_interp_marker(st, frames, FRAME_KIND_V8,
				 V8_MARKER_STUB | (v8_slot(vc, p->fp_context) & 0xff) << 8);
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_STUB);
	} else {
		ss_interp_marker(st, frames, FRAME_KIND_V8, V8_MARKER_BAD_FRAME);
		ss_interp_count(FRAME_KIND_V8, V8_COUNTER_BAD_FRAME);
	}
	return v8_to_caller(st, vc, fp);
}

/* A native frame in node's builtins (interp_file's range): the dispatch's file entry. */
static __always_inline int v8_activation(struct unwind_cursor *st, struct interp_state *is,
					 struct v8_cursor *vc, struct user_frame *frames)
{
	return v8_step(st, is, vc, frames, 1, 0);
}

/* A pc in V8's code ranges, or (guess) in no mapping and no range: the code-range entry. */
static __always_inline int v8_code_step(struct unwind_cursor *st, struct interp_state *is,
					struct v8_cursor *vc, struct user_frame *frames, int guess)
{
	return v8_step(st, is, vc, frames, 0, guess);
}

#endif
