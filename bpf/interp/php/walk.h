/* PHP (Zend engine) frames in the native walk (included by bpf/interp/dispatch.h, which calls
 * it when the native frame about to be emitted is in a PHP binary's execute_ex).
 *
 * The chain: executor_globals.current_execute_data -> prev_execute_data -> ... Every PHP call
 * from PHP code runs in the same execute_ex activation (the VM switches execute_data in place);
 * C code entering PHP (zend_execute_ex: the script, callbacks of usort / array_map,
 * destructors) starts a new activation whose first frame has ZEND_CALL_TOP. So one activation
 * runs the frames from the cursor up to and including the next user-code frame with
 * ZEND_CALL_TOP; internal functions (zif_*) have frames in the chain too and are emitted with
 * the activation that called them, except one that C called through zend_call_function (the
 * second range: array_map's callback strlen, with ZEND_CALL_TOP): it is emitted at that
 * zend_call_function frame, leaf side of the C that called it, where no execute_ex would.
 *
 * Lines: zend_op.lineno of the frame's opline. The VM (HYBRID or CALL with GCC global
 * registers) keeps the running frame's execute_data in r14 and its opline in r15 and stores
 * the opline into execute_data only before calls (SAVE_OPLINE), so for the frame r14 names the
 * register is used when it points into that frame's opcodes (registers as the native walk
 * last knew them: the interrupted frame's, or a signal frame's); other frames read EX(opline).
 *
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count),
 * so this walk also runs in the kernel-free replay tests. Every reason for missing PHP frames
 * is counted (enum php_counter).
 */
#ifndef STACKSCOPE_PHP_WALK_H
#define STACKSCOPE_PHP_WALK_H

#include "interp/common.h"
#include "interp/php/bpf_abi.h"

/* The interpreters whose cursors share php_cursor's memory (dispatch.h's union): once one
 * of them started in a sample, PHP's cursor is not used (a marker), nor written.
 */
#define PHP_SHARED_CURSOR ((1 << FRAME_KIND_CPYTHON) | (1 << FRAME_KIND_RUBY))
/* Read buffers, powers of two so offsets can be masked into them for the verifier. */
#define PHP_EX_BUF 64
#define PHP_FN_BUF 128
#define PHP_MASK64(buf) (sizeof(buf) - 8)
#define PHP_MASK32(buf) (sizeof(buf) - 4)

struct php_cursor {
	__u64 ex;               /* next zend_execute_data to emit */
	__u64 reg_ex;           /* r14 and r15 where the native walk last knew all registers */
	__u64 reg_opline;       /* (the VM's execute_data and opline when the VM ran there) */
	__u8 exbuf[PHP_EX_BUF]; /* 8-byte aligned: read as __u64 */
	__u8 fnbuf[PHP_FN_BUF];
	__u8 c_call;  /* this run is a zend_call_function frame's: at most its internal callee */
	__u8 jit_reg; /* JIT code ran before php_start: r15 is the JIT's scratch, not an opline */
	/* The activation php_code_step() led to runs JIT code, which saves its opline only
	 * before calls through a frame (internal functions: EX(opline) as the VM's SAVE_OPLINE):
	 * its first user frame's line is unknown when the sample hit the JIT code itself
	 * (PHP_JIT_LEAF) or a native callee without such a frame (a helper: efree).
	 */
	__u8 jit;
	__u8 jit_icall; /* an internal function's frame came first in that activation */
};

#define PHP_JIT_LEAF 1
#define PHP_JIT_CALL 2

static __always_inline void php_reset(struct php_cursor *php)
{
	php->ex = 0;
	php->jit_reg = 0;
	php->jit = 0;
}

static __always_inline __u64 php_u64(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u64 *)(buf + (off & mask));
}

static __always_inline __u32 php_u32(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u32 *)(buf + (off & mask));
}

/* Is op an opline of the op_array whose opcodes start at base and number last? */
static __always_inline int php_opline_in(const struct php_offsets *o, __u64 op, __u64 base,
					 __u32 last)
{
	__u64 size = o->zop_size;

	return size && op >= base && op - base < (__u64)last * size && (op - base) % size == 0;
}

/* Find the sampled thread's newest PHP frame; 0, or < 0 with the reason counted. */
static __always_inline int php_start(struct unwind_cursor *st, struct interp_state *is,
				     struct php_cursor *php)
{
	const struct php_offsets *o = &is->file.php.off;
	struct interp_proc *proc;
	__u64 ex;

	proc = ss_interp_proc(st->pid, FRAME_KIND_PHP);
	if (!proc || proc->file_id != is->file_id)
		return ss_interp_miss(FRAME_KIND_PHP, PHP_COUNTER_NO_PROC);
	if (ss_read_user(&ex, sizeof(ex), proc->php.executor_globals + o->eg_current_execute_data) <
	    0)
		return ss_interp_miss(FRAME_KIND_PHP, PHP_COUNTER_READ_FAILED);
	php->ex = ex;
	php->reg_ex = st->regs[DWARF_R14];
	php->reg_opline = php->jit_reg ? 0 : st->regs[DWARF_R15];
	return 0;
}

/* Emit the next PHP frame of the current run (or skip a frame without a function). */
static __always_inline void php_emit(struct unwind_cursor *st, struct interp_state *is,
				     struct php_cursor *php, struct user_frame *frames)
{
	const struct php_offsets *o = &is->file.php.off;
	__u32 idx = st->frame_cnt, call, last, cookie, line = 0, flags = 0;
	__u64 ex = php->ex, func, prev, opline, opcodes, file;
	__u8 type, jit;

	if (!ex) {
		is->emitting = 0;
		return;
	}
	if (ss_interp_full(st, is, frames, FRAME_KIND_PHP, PHP_MARKER_TRUNCATED,
			   PHP_COUNTER_TRUNCATED))
		return;
	if (ss_read_user(php->exbuf, PHP_EX_READ_SZ, ex) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PHP, PHP_MARKER_READ_FAILED,
			       PHP_COUNTER_READ_FAILED);
		return;
	}
	opline = php_u64(php->exbuf, o->ex_opline, PHP_MASK64(php->exbuf));
	func = php_u64(php->exbuf, o->ex_func, PHP_MASK64(php->exbuf));
	call = php_u32(php->exbuf, o->ex_type_info, PHP_MASK32(php->exbuf));
	prev = php_u64(php->exbuf, o->ex_prev, PHP_MASK64(php->exbuf));
	if (php->c_call && (!func || !(call & PHP_ZEND_CALL_TOP))) {
		is->emitting = 0; /* not C calling C: the frame is an execute_ex's */
		return;
	}
	php->ex = prev;
	if (call & PHP_ZEND_CALL_CODE)
		flags |= PHP_FRAME_CODE;
	if (call & PHP_ZEND_CALL_TOP)
		flags |= PHP_FRAME_TOP;
	if (!func) {
		ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_NO_FUNC);
		if ((flags & PHP_FRAME_TOP) || !prev)
			is->emitting = 0;
		return;
	}
	if (ss_read_user(php->fnbuf, PHP_FN_READ_SZ, func) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PHP, PHP_MARKER_READ_FAILED,
			       PHP_COUNTER_READ_FAILED);
		return;
	}
	type = php->fnbuf[o->fn_type & (PHP_FN_BUF - 1)];
	if (php->c_call && type != PHP_ZEND_INTERNAL_FUNCTION) {
		php->ex = ex;
		is->emitting = 0;
		return;
	}
	if (type == PHP_ZEND_INTERNAL_FUNCTION) {
		cookie = (__u32)php_u64(php->fnbuf, o->fn_name, PHP_MASK64(php->fnbuf));
		php->jit_icall = 1;
	} else if (type == PHP_ZEND_USER_FUNCTION || type == PHP_ZEND_EVAL_CODE) {
		opcodes = php_u64(php->fnbuf, o->op_opcodes, PHP_MASK64(php->fnbuf));
		last = php_u32(php->fnbuf, o->op_last, PHP_MASK32(php->fnbuf));
		cookie = (__u32)opcodes;
		if (o->vm_regs && php->reg_ex == ex &&
		    php_opline_in(o, php->reg_opline, opcodes, last)) {
			opline = php->reg_opline;
			flags |= PHP_FRAME_REG;
			ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_LINE_REG);
		}
		jit = php->jit == PHP_JIT_LEAF || (php->jit && !php->jit_icall);
		php->jit = 0;
		if (jit) {
			/* the saved opline may be any earlier line of the function */
			opline = 0;
			ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_LINE_JIT);
		} else if (php_opline_in(o, opline, opcodes, last) &&
			   ss_read_user(&line, sizeof(line), opline + o->zop_lineno) == 0) {
			if (line > PHP_FRAME_LINE_MAX)
				line = 0;
		} else {
			line = 0;
			ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_LINE_NONE);
		}
		if (!php_u64(php->fnbuf, o->fn_name, PHP_MASK64(php->fnbuf)) &&
		    ss_read_user(&file, sizeof(file), func + o->op_filename) == 0 && file) {
			func = file;
			flags |= PHP_FRAME_FILE;
			if (type == PHP_ZEND_EVAL_CODE)
				flags |= PHP_FRAME_EVAL;
		}
	} else {
		ss_interp_fail(st, is, frames, FRAME_KIND_PHP, PHP_MARKER_BAD_FRAME,
			       PHP_COUNTER_BAD_FRAME);
		return;
	}
	ss_interp_put(st, frames, idx, FRAME_KIND_PHP, func,
		      (__u64)line << PHP_FRAME_LINE_SHIFT | (__u64)flags << PHP_FRAME_FLAGS_SHIFT |
			      cookie,
		      0);
	ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_FRAMES);

	/* The run ends with the user code C entered (an internal function never runs in an
	 * execute_ex of its own).
	 */
	if (((flags & PHP_FRAME_TOP) && type != PHP_ZEND_INTERNAL_FUNCTION) || !prev || php->c_call)
		is->emitting = 0;
}

#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
/* Does the return address ra follow a call of execute_ex (vm_entry)? On arm64 `bl` to it, or
 * `blr xN` from the PHP binary itself (zend_execute through the zend_execute_ex pointer).
 */
static __always_inline int php_calls_vm(const struct unwind_cursor *st,
					const struct interp_proc *proc, __u64 ra)
{
	struct mapping_info *m;
	__u32 insn = 0;
	__s32 imm26;

	ra = ss_strip_pac(ra);
	if (ra < 0x1000 || ra & 3 || ss_read_user(&insn, sizeof(insn), ra - 4) < 0)
		return 0;
	if ((insn & 0xfc000000u) == 0x94000000u) { /* bl imm26 */
		imm26 = (__s32)(insn << 6) >> 6;
		return ra - 4 + (__s64)imm26 * 4 == proc->php.vm_entry;
	}
	if ((insn & 0xfffffc1fu) != 0xd63f0000u) /* blr xN */
		return 0;
	m = ss_lookup_mapping(st->pid, ra - 4);
	return m && m->file_id == proc->file_id;
}
#else
/* Does the return address ra follow a call of execute_ex (vm_entry)? `call rel32` to it,
 * `call *disp32(%rip)` through a pointer holding it (zend_execute_ex), or a call through a
 * register (`call *(%rax)`, `call *%rax`, `call *d8(%rax)`: PIC code loading zend_execute_ex's
 * address) from the PHP binary itself.
 */
static __always_inline int php_calls_vm(const struct unwind_cursor *st,
					const struct interp_proc *proc, __u64 ra)
{
	struct mapping_info *m;
	__u64 target = 0;
	__u8 site[8];
	__s32 rel;

	if (ra < 0x1000 || ss_read_user(site, sizeof(site), ra - sizeof(site)) < 0)
		return 0;
	rel = (__s32)((__u32)site[4] | (__u32)site[5] << 8 | (__u32)site[6] << 16 |
		      (__u32)site[7] << 24);
	if (site[3] == 0xe8)
		return ra + (__s64)rel == proc->php.vm_entry;
	if (site[2] == 0xff && site[3] == 0x15)
		return ss_read_user(&target, sizeof(target), ra + (__s64)rel) == 0 &&
		       target == proc->php.vm_entry;
	if (!(site[6] == 0xff && ((site[7] & 0xf8) == 0x10 || (site[7] & 0xf8) == 0xd0) &&
	      site[7] != 0x14 && site[7] != 0x15) &&
	    !(site[5] == 0xff && (site[6] & 0xf8) == 0x50 && site[6] != 0x54))
		return 0;
	m = ss_lookup_mapping(st->pid, ra - 1);
	return m && m->file_id == proc->file_id;
}
#endif

/* Is sp execute_ex's at its dispatch: does the return address at sp + vm_ra follow a call of
 * execute_ex?
 */
static __always_inline int php_vm_frame_at(const struct unwind_cursor *st,
					   const struct interp_proc *proc, __u64 sp)
{
	__u64 ra = 0;

	return ss_read_user(&ra, sizeof(ra), sp + proc->php.vm_ra) == 0 &&
	       php_calls_vm(st, proc, ra);
}

/* A pc in opcache's JIT code (the process's PHP code range): JIT code runs on the frame of
 * the execute_ex activation that dispatched to it (bpf_abi.h), so the pc is moved to
 * execute_ex's dispatch jump, at execute_ex's sp, and the walk goes on there: that
 * activation's PHP frames, then the native step through execute_ex's CFI. The pc leaves the
 * code range for a mapped file, so this runs once per JIT frame.
 *
 * Checked first: the return address at sp + vm_ra must follow a call of execute_ex
 * (php_calls_vm); else (arm64) jit_spad bytes higher, inside a trace or function; else, in a
 * trace exit, jit_exit_save bytes higher still (sp moves up past the stub's saves); else the
 * pc is in code that moved sp otherwise and the stack ends with a marker. 1: this iteration
 * was used.
 */
static __always_inline int php_code_step(struct unwind_cursor *st, struct interp_state *is,
					 struct php_cursor *php, struct user_frame *frames,
					 int guess)
{
	const struct interp_proc *proc;
	__u64 sp = st->regs[DWARF_RSP];

	proc = ss_interp_proc(st->pid, FRAME_KIND_PHP);
	if (!proc || !proc->php.vm_dispatch) {
		ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_NO_PROC);
		return 0;
	}
	if (php_vm_frame_at(st, proc, sp))
		goto placed;
#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
	sp += proc->php.jit_spad;
	if (proc->php.jit_spad && php_vm_frame_at(st, proc, sp))
		goto placed;
#endif
	if (proc->php.jit_exit_save && php_vm_frame_at(st, proc, sp + proc->php.jit_exit_save)) {
		sp += proc->php.jit_exit_save;
		ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_JIT_EXIT);
		goto placed;
	}
	ss_interp_marker(st, frames, FRAME_KIND_PHP, PHP_MARKER_JIT_FRAME);
	ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_JIT_LOST);
	ss_end(st, UNWIND_END_BAD_FRAME);
	return 1;
placed:
	st->regs[DWARF_RSP] = sp;
	if (!(is->started & PHP_SHARED_CURSOR)) {
		if (!(is->started & INTERP_BIT(FRAME_KIND_PHP)))
			php->jit_reg = 1;
		php->jit = st->pc_is_return ? PHP_JIT_CALL : PHP_JIT_LEAF;
		php->jit_icall = 0;
	}
	st->regs[DWARF_RIP] = proc->php.vm_dispatch;
	st->pc_is_return = 0;
	ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_JIT_FRAMES);
	return 1;
}

/* Is the native frame about to be emitted zend_call_function (interp_file's second range)? */
static __always_inline int php_in_call_function(const struct unwind_cursor *st,
						const struct interp_state *is)
{
	__u64 addr = st->regs[DWARF_RIP] - (st->pc_is_return ? 1 : 0) - st->last_map.bias;

	return addr >= is->file.range_start[1] && addr < is->file.range_end[1];
}

/* The native frame about to be emitted is an execute_ex activation. 1: this iteration emitted
 * (or marked) something, 0: the native step runs now.
 */
static __always_inline int php_activation(struct unwind_cursor *st, struct interp_state *is,
					  struct php_cursor *php, struct user_frame *frames)
{
	if (ss_interp_unsupported(st, is, frames, FRAME_KIND_PHP, PHP_COUNTER_STACKS,
				  PHP_MARKER_VERSION(is->file.major, is->file.minor,
						     is->file.php.zts),
				  PHP_COUNTER_UNSUPPORTED))
		return 1;
	if (is->started & PHP_SHARED_CURSOR) {
		ss_interp_refuse(st, is, frames, FRAME_KIND_PHP, PHP_MARKER_MIXED,
				 PHP_COUNTER_MIXED);
		return 1;
	}
	if (ss_interp_first(is, FRAME_KIND_PHP) && php_start(st, is, php) < 0) {
		ss_interp_stop(is, FRAME_KIND_PHP);
		return 0;
	}
	php->c_call = php_in_call_function(st, is);
	if (!php->ex) {
		if (!php->c_call)
			ss_interp_count(FRAME_KIND_PHP, PHP_COUNTER_RUN_EMPTY);
		return 0;
	}
	is->emitting = FRAME_KIND_PHP;
	php_emit(st, is, php, frames);
	return 1;
}

#endif
