/* Erlang frames of the BEAM JIT in the native walk: a code-range walker (included by
 * bpf/interp/dispatch.h, which calls beam_code_step() when the pc about to be emitted lies in
 * the JIT code an emulator process registered in "interp_code"). The layout it relies on is
 * described in bpf/interp/beam/bpf_abi.h.
 *
 * One call emits the frame of that pc and moves the native cursor:
 *  - on the Erlang process's stack (JIT code running: sp is the process's stack pointer), to
 *    the next continuation pointer above sp: a word whose two low bits are 0 that lies in the
 *    process's JIT code (a frame's y registers are terms, never such a word), found within
 *    BEAM_SCAN_READS reads of at most BEAM_SCAN_WORDS words, none across a page (the stack's
 *    bottom may end its mapping); the bottom CP, beam_normal_exit, is not emitted: the walk
 *    goes on in the scheduler's native frames;
 *  - from native code the JIT code called (sp within BEAM_RSTACK_SPAN below rbx: the runtime
 *    stack; a marker unless the caller is the scheduler loop, the JIT's process_main, whose
 *    calls have no Erlang caller), or from the bottom of the process's stack, to the C caller of
 *    process_main: the return address found by value (one of sched_ret) in the window above
 *    the scheduler's registers (rbx), which the JIT code keeps in rbx and native callees
 *    save and restore (the native walk follows it: unwind_cursor.rbx_for).
 * The switch from the process's stack to the scheduler's thread stack may move sp down: it is
 * made once a sample (the runtime is then off for the sample, so the walk cannot loop); every
 * other move goes strictly up.
 *
 * The emulator flavour (no JIT code; bpf_abi.h) is walked from the interpreter loop's native
 * frame instead: beam_activation() emits the current instruction's frame, then beam_emit() one
 * CP a step up the process's stack (the cursor's at/exit/lo/hi kept between the steps).
 *
 * The JIT's walk keeps no state between calls (struct beam_cursor is its scratch for one call).
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count).
 */
#ifndef STACKSCOPE_BEAM_WALK_H
#define STACKSCOPE_BEAM_WALK_H

#include "interp/common.h"
#include "interp/beam/bpf_abi.h"

#define BEAM_SCAN_WORDS 32 /* process-stack words read at once looking for the next CP */
#define BEAM_SCAN_READS \
	3 /* ... reads per frame (y registers of a frame: 64 words at most;
			       * a read stops at a page's end) */
#define BEAM_PAGE 4096
#define BEAM_WIN_WORDS 32      /* scheduler-frame window above the registers, words */
#define BEAM_RSTACK_SPAN 0x100 /* native code called by JIT code runs this close below rbx */

#if defined(__TARGET_ARCH_arm64)
/* arm64 (OTP 25's JIT for AArch64: erts/emulator/beam/jit/arm): the process's stack pointer E
 * is x20 (sampled into r12's slot), the scheduler's registers x19 (r9's slot), which is also sp
 * while Erlang code runs (the JIT's process_main allocated them on its thread's stack: its C
 * callees run below, after a frame record at x19 - 16). Every function's prologue pushes its
 * CP, x30, to E (`str x30, [x20, #-8]!`): the CPs are found above E as x86-64's are above rsp,
 * sp staying x19; a sample at that push, right after the pop before a tail call (`ldr x30,
 * [x20], #8`), at a return, or in the JIT's shared code (fragments module code calls with
 * `bl`) has its caller in x30 (beam_cp_in_lr). The scheduler's frames are entered at the
 * highest copy of the return address in the window, with the x29 the JIT's process_main saved
 * below it (read once the loop found it: an index inside the loop took on_sample's
 * verification past 1M instructions). Not yet: from a native callee (x19 and x20 not carried)
 * the walk ends with a marker.
 */
#define BEAM_REG_E DWARF_R12
#define BEAM_REG_SCHED DWARF_R9
#define BEAM_A64_PUSH_CP 0xf81f8e9e /* str x30, [x20, #-8]! (a function's prologue) */
#define BEAM_A64_POP_CP 0xf840869e  /* ldr x30, [x20], #8 (before a return or tail call) */
#define BEAM_A64_RET 0xd65f03c0     /* ret (x30) */
#endif

/* Scratch for the JIT's code steps; the emulator flavour's walk keeps `at` and `exit` between
 * its steps (is->emitting: FRAME_KIND_BEAM).
 */
struct beam_cursor {
	__u64 w[BEAM_SCAN_WORDS];
	__u64 at;     /* the interpreter walk: the process-stack address scanned next */
	__u64 exit;   /* ... and the CP that ends it (&beam_apply[1]) */
	__u64 lo, hi; /* ... and the span of the loaded code (beam_proc_abi.code_lo/hi) */
	__u32 misses; /* reads since the last CP */
	__u32 pad;
};

static __always_inline void beam_reset(struct beam_cursor *bc)
{
	bc->at = 0;
}

/* 1 when pc lies in one of the process's BEAM code ranges. */
static __always_inline int beam_in_code(const struct interp_state *is, __u64 pc)
{
	int i;

	if (is->code_state != 1) /* is->code holds another sample's */
		return 0;

	for (i = 0; i < INTERP_CODE_RANGES; i++)
		if (is->code.r[i].runtime == FRAME_KIND_BEAM && pc >= is->code.r[i].start &&
		    pc < is->code.r[i].end)
			return 1;
	return 0;
}

/* The stack ends here: the reason counted, with a marker. */
static __always_inline int beam_end(struct unwind_cursor *st, struct interp_state *is,
				    struct user_frame *frames, __u64 marker, __u32 counter)
{
	ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, marker, counter);
	st->done = 1; /* (the native walk's ss_end(), which this file cannot see) */
	st->end = UNWIND_END_BAD_FRAME;
	return 1;
}

/* Leave Erlang code for the scheduler's native frames: the cursor moves to the return address
 * into the C caller of process_main, found above the registers at rbx. Once a sample.
 */
static __always_inline int beam_to_scheduler(struct unwind_cursor *st, struct interp_state *is,
					     struct beam_cursor *bc, const struct beam_proc_abi *p,
					     struct user_frame *frames, __u64 rbx)
{
	__u64 base = rbx + p->sched_win, w = 0;
	int i;

	is->off |= INTERP_BIT(FRAME_KIND_BEAM);
	if (ss_read_user(bc->w, sizeof(bc->w), base) < 0)
		return beam_end(st, is, frames, BEAM_MARKER_NO_SCHEDULER, BEAM_COUNTER_READ_FAILED);
#if defined(__TARGET_ARCH_arm64)
	/* The highest match: the C wrapper process_main, which branches to the JIT's, saved the
	 * same return address in its own frame record, 32 bytes lower, which the window may hold
	 * (searched from the top: a match kept while the loop goes on passed 1M instructions).
	 */
	for (i = BEAM_WIN_WORDS - 1; i >= 0; i--) {
		w = bc->w[i];
		if (w && (w == p->sched_ret[0] || w == p->sched_ret[1]))
			break;
	}
	if (i < 0)
		i = BEAM_WIN_WORDS;
#else
	for (i = 0; i < BEAM_WIN_WORDS; i++) {
		w = bc->w[i];
		if (w && (w == p->sched_ret[0] || w == p->sched_ret[1]))
			break;
	}
#endif
	if (i >= BEAM_WIN_WORDS)
		return beam_end(st, is, frames, BEAM_MARKER_NO_SCHEDULER,
				BEAM_COUNTER_NO_SCHEDULER);
	st->regs[DWARF_RIP] = w;
	st->regs[DWARF_RSP] = base + 8 * (__u64)i + 8;
#if defined(__TARGET_ARCH_arm64)
	/* The JIT's process_main stored its caller's frame record {x29, x30} first
	 * (`stp x29, x30, [sp, #-16]!`): the caller's x29 is the word below the return address
	 * (Debian's sched_thread_func restores it from its own frame; a caller whose CFI is based
	 * on x29 needs it).
	 */
	st->regs[DWARF_RBP] = i > 0 ? bc->w[(i - 1) & (BEAM_WIN_WORDS - 1)] : 0;
#else
	st->regs[DWARF_RBP] = 0; /* the JIT code's rbp is no frame pointer */
#endif
	st->pc_is_return = 1;
	st->regs_valid = 0;
	st->rbx_for = 0;
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_SCHEDULER);
	return 1;
}

/* The next CP above sp on the process's stack: the cursor moves there (1), or the scheduler's
 * frames follow a marker when none was found.
 */
static __always_inline int beam_next_cp(struct unwind_cursor *st, struct interp_state *is,
					struct beam_cursor *bc, const struct beam_proc_abi *p,
					struct user_frame *frames, __u64 rbx)
{
#if defined(__TARGET_ARCH_arm64)
	__u64 at = st->regs[BEAM_REG_E], w;
#else
	__u64 at = st->regs[DWARF_RSP], w;
#endif
	__u32 n;
	int r, i;

	for (r = 0; r < BEAM_SCAN_READS; r++) {
		/* never across a page: the stack's bottom may end its mapping */
		n = BEAM_PAGE - (__u32)(at & (BEAM_PAGE - 1));
		if (n > sizeof(bc->w))
			n = sizeof(bc->w);
		if (n < 8)
			n = 8;
		if (ss_read_user(bc->w, n, at) < 0) {
			ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_READ_FAILED);
			break;
		}
		for (i = 0; i < BEAM_SCAN_WORDS; i++) {
			if ((__u32)i * 8 >= n)
				break;
			w = bc->w[i];
			if ((w & 3) || !beam_in_code(is, w - 1))
				continue;
			st->regs[DWARF_RIP] = w;
#if defined(__TARGET_ARCH_arm64)
			st->regs[BEAM_REG_E] = at + 8 * (__u64)i + 8; /* (sp stays x19) */
			st->regs[BEAM_REG_SCHED] = rbx;
#else
			st->regs[DWARF_RSP] = at + 8 * (__u64)i + 8;
#endif
			st->pc_is_return = 1;
			st->regs_valid = 0;
			st->rbx_for = st->frame_cnt + 1; /* rbx is the same in every JIT frame */
			return 1;
		}
		at += n;
	}
	ss_interp_marker(st, frames, FRAME_KIND_BEAM, BEAM_MARKER_STACK_LOST);
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_STACK_LOST);
	return beam_to_scheduler(st, is, bc, p, frames, rbx);
}

#if defined(__TARGET_ARCH_arm64)
/* The sampled frame's caller in x30, not on the process's stack: in a function at its
 * prologue's push of its CP, right after the pop that precedes a tail call (a self-recursive
 * loop's jump back to the push) or at the return, x30 is its caller's CP; in the shared code
 * (fragments module code calls with `bl`, gamma's multiplication), the return into the calling
 * function. 1 when the cursor moved to it (E unchanged: the scan from E finds the next CP), 0
 * otherwise.
 */
static __always_inline int beam_cp_in_lr(struct unwind_cursor *st, struct interp_state *is,
					 const struct beam_proc_abi *p, __u64 pc)
{
	__u64 lr = st->regs[SS_ARM64_LR_SLOT];
	__u32 insn[2];

	if (!st->regs_valid || (lr & 3) || !beam_in_code(is, lr - 1))
		return 0;
	if (pc < p->shared_lo || pc >= p->shared_hi) {
		if (ss_read_user(insn, sizeof(insn), pc - 4) < 0)
			return 0;
		if (insn[1] != BEAM_A64_PUSH_CP && insn[1] != BEAM_A64_RET &&
		    insn[0] != BEAM_A64_POP_CP)
			return 0;
	}
	st->regs[DWARF_RIP] = lr;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	st->rbx_for = st->frame_cnt + 1; /* (x19 and x20 as they are) */
	return 1;
}
#endif

/* The pc about to be emitted lies in the process's JIT code. 1: this iteration was used (a
 * frame or a marker emitted, the cursor moved or the stack ended), 0: the native step runs now.
 */
static __always_inline int beam_code_step(struct unwind_cursor *st, struct interp_state *is,
					  struct beam_cursor *bc, struct user_frame *frames,
					  int guess)
{
	const struct interp_proc *proc;
	const struct beam_proc_abi *p;
	__u64 pc = st->regs[DWARF_RIP], sp = st->regs[DWARF_RSP], rbx;

	(void)guess;
	if (is->off & INTERP_BIT(FRAME_KIND_BEAM))
		return 0;
	proc = ss_interp_proc(st->pid, FRAME_KIND_BEAM);
	if (!proc) {
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_NO_PROC);
		return 0;
	}
	p = &proc->beam;
	if (!p->supported) {
		/* An emulator refused: its JIT code has no unwind information and keeps no frame
		 * pointer. The marker stands for its Erlang frames and ends the stack.
		 */
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_UNSUPPORTED,
				    BEAM_COUNTER_UNSUPPORTED);
		st->done = 1;
		st->end = UNWIND_END_OK;
		return 1;
	}
	if (!p->ready) {
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_NOT_READY);
		return 0;
	}
	/* A frame before this one waits for a table (a native callee's file): its deferred replay
	 * could not walk this JIT code, so the sample is kept as walked here. A table missing only
	 * after the Erlang frames (beam.smp's, in the scheduler's frames) is replayed: the frames
	 * emitted here need nothing the replay lacks (userspace names them later).
	 */
	if (st->defer_cnt)
		is->started |= INTERP_BIT(FRAME_KIND_BEAM);
	if (!st->regs_valid && st->rbx_for != st->frame_cnt + 1)
		return beam_end(st, is, frames, BEAM_MARKER_NO_SCHEDULER,
				BEAM_COUNTER_NO_REGISTERS);
#if defined(__TARGET_ARCH_arm64)
	rbx = st->regs[BEAM_REG_SCHED];
#else
	rbx = st->regs[DWARF_RBX];
#endif
	if (pc == p->normal_exit)
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	if (st->frame_cnt >= SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE) {
		ss_interp_marker(st, frames, FRAME_KIND_BEAM, BEAM_MARKER_TRUNCATED);
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_TRUNCATED);
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	}
	ss_interp_code_frame(st, frames, FRAME_KIND_BEAM, pc, BEAM_SUB_JIT, INTERP_POS_NONE, 0);
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_FRAMES);
#if defined(__TARGET_ARCH_arm64)
	if (pc >= p->sched_lo && pc < p->sched_hi) {
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_SCHEDULER_CODE);
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	}
	if (sp != rbx) {
		/* JIT code in a frame of its own on the scheduler's stack (a shared fragment
		 * calling C), or reached from its native callee: E not known here
		 */
		ss_interp_marker(st, frames, FRAME_KIND_BEAM, BEAM_MARKER_FROM_NATIVE);
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_FROM_NATIVE);
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	}
	if (beam_cp_in_lr(st, is, p, pc))
		return 1;
	return beam_next_cp(st, is, bc, p, frames, rbx);
#else
	if (sp <= rbx && rbx - sp <= BEAM_RSTACK_SPAN && pc >= p->sched_lo && pc < p->sched_hi) {
		/* The scheduler loop's own calls (erts_schedule, copying a process's registers in
		 * and out): between two processes, no Erlang code is their caller (the emulator's
		 * own frame-pointer layout clears the frame chain there too).
		 */
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_SCHEDULER_CODE);
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	}
	if (sp <= rbx && rbx - sp <= BEAM_RSTACK_SPAN) {
		/* Native code called from here runs on the scheduler's stack: the process's own
		 * stack pointer is in its Process struct, not read here.
		 */
		ss_interp_marker(st, frames, FRAME_KIND_BEAM, BEAM_MARKER_FROM_NATIVE);
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_FROM_NATIVE);
		return beam_to_scheduler(st, is, bc, p, frames, rbx);
	}
	return beam_next_cp(st, is, bc, p, frames, rbx);
#endif
}

/* The emulator flavour's next Erlang frame: the next CP up the process's stack from bc->at
 * (as beam_next_cp, without code ranges: the heap holds the loaded code), a return address.
 * One read a step (a step without a CP moves on and emits nothing, BEAM_SCAN_READS of them at
 * most a frame); the walk ends at the process's first CP (the native step then emits the loop's
 * frame) or with a marker.
 */
static __always_inline void beam_emit(struct unwind_cursor *st, struct interp_state *is,
				      struct beam_cursor *bc, struct user_frame *frames)
{
	__u64 at = bc->at, w, cp = 0;
	__u32 n;
	int i;

	if (st->frame_cnt >= SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE) {
		ss_interp_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_TRUNCATED,
			       BEAM_COUNTER_TRUNCATED);
		return;
	}
	n = BEAM_PAGE - (__u32)(at & (BEAM_PAGE - 1));
	if (n > sizeof(bc->w))
		n = sizeof(bc->w);
	if (n < 8)
		n = 8;
	if (bc->misses >= BEAM_SCAN_READS || ss_read_user(bc->w, n, at) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_STACK_LOST,
			       BEAM_COUNTER_STACK_LOST);
		return;
	}
	for (i = 0; i < BEAM_SCAN_WORDS; i++) {
		if ((__u32)i * 8 >= n)
			break;
		w = bc->w[i];
		if ((w & 3) || ((w < bc->lo || w >= bc->hi) && w != bc->exit))
			continue; /* the exit CP is the emulator's own (.bss), not loaded code */
		cp = w;
		at += 8 * (__u64)i + 8;
		break;
	}
	if (!cp) {
		bc->at = at + n;
		bc->misses++;
		return;
	}
	bc->at = at;
	bc->misses = 0;
	if (cp == bc->exit) {
		ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_EMU_EXIT);
		ss_interp_stop(is, FRAME_KIND_BEAM);
		return;
	}
	ss_interp_frame(st, frames, FRAME_KIND_BEAM, cp,
			(__u64)BEAM_SUB_EMU << 60 | (__u64)INTERP_POS_NONE << 32,
			USER_FRAME_RETURN);
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_FRAMES);
}

/* 1 when v may be the interpreter's instruction pointer: an aligned word of the loaded code
 * [lo, hi) holding an instruction's opcode (the address of its label in the loop, [op_lo,
 * op_hi)). Between two instructions the loop has moved I to the next one's, or to r8 in some.
 */
static __always_inline int beam_emu_ip(__u64 v, __u64 lo, __u64 hi, __u64 op_lo, __u64 op_hi)
{
	__u64 op = 0;

	if ((v & 7) || v < lo || v >= hi || ss_read_user(&op, sizeof(op), v) < 0)
		return 0;
	return op >= op_lo && op < op_hi;
}

/* A native frame in the emulator flavour's interpreter loop (the file range userspace gave:
 * process_main of a build without the JIT). When the sample's registers are the loop's own,
 * its Erlang frames: I (rbx), then emit steps up the stack from E (r13); from a native callee
 * (r13 not known) or in an emulator not checked, a counted marker. Then the native step emits
 * the loop's frame and the walk goes on. 1: this iteration was used.
 */
static __always_inline int beam_activation(struct unwind_cursor *st, struct interp_state *is,
					   struct beam_cursor *bc, struct user_frame *frames)
{
	const struct interp_proc *proc;
	__u64 in, e, lo, hi, op_lo, op_hi;

	if (st->frame_cnt >= SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE)
		return 0;
	proc = ss_interp_proc(st->pid, FRAME_KIND_BEAM);
	if (!proc || !proc->beam.emu) { /* the process not read (counted as such), or refused */
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_INTERPRETER,
				    proc ? BEAM_COUNTER_INTERPRETER : BEAM_COUNTER_NO_PROC);
		return 1;
	}
	if (!proc->beam.ready) { /* the code's span not read yet */
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_INTERPRETER,
				    BEAM_COUNTER_NOT_READY);
		return 1;
	}
	if (st->frame_cnt || !st->regs_valid) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_FROM_NATIVE,
				    BEAM_COUNTER_FROM_NATIVE);
		return 1;
	}
	lo = proc->beam.code_lo;
	hi = proc->beam.code_hi;
	op_lo = is->file.range_start[0] + st->last_map.bias;
	op_hi = is->file.range_end[0] + st->last_map.bias;
	in = st->regs[DWARF_RBX];
	if (!beam_emu_ip(in, lo, hi, op_lo, op_hi))
		in = st->regs[DWARF_RBP];
	if (!beam_emu_ip(in, lo, hi, op_lo, op_hi))
		in = st->regs[DWARF_R8];
	if (!beam_emu_ip(in, lo, hi, op_lo, op_hi)) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_NO_IP,
				    BEAM_COUNTER_EMU_NO_IP);
		return 1;
	}
	e = st->regs[DWARF_R13];
	if ((e & 7) || e < 0x1000 || e > SS_USER_ADDR_MAX) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_BEAM, BEAM_MARKER_STACK_LOST,
				    BEAM_COUNTER_STACK_LOST);
		return 1;
	}
	is->started |= INTERP_BIT(FRAME_KIND_BEAM); /* its frames need the heap: no replay */
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_EMU_WALKS);
	ss_interp_frame(st, frames, FRAME_KIND_BEAM, in,
			(__u64)BEAM_SUB_EMU << 60 | (__u64)INTERP_POS_NONE << 32, 0);
	ss_interp_count(FRAME_KIND_BEAM, BEAM_COUNTER_FRAMES);
	bc->at = e;
	bc->exit = proc->beam.normal_exit;
	bc->misses = 0;
	bc->lo = lo;
	bc->hi = hi;
	is->emitting = FRAME_KIND_BEAM;
	return 1;
}

#endif
