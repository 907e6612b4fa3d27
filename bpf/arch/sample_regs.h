/* How a sample's registers and thread pointer are read in eBPF, per architecture (BPF only;
 * the cursor's slots: bpf/native_unwind.h, bpf/arch/x86_64.h, bpf/arch/arm64.h):
 *   regs_from_pt_regs(): a task's saved user registers (sampled in the kernel);
 *   regs_from_ctx(): the perf context's registers (sampled in user mode);
 *   ss_ctx_user_mode(): whether the perf context interrupted user mode;
 *   ss_task_tls_base(): the thread pointer the runtimes find their thread state by
 *   (x86-64 fs base, arm64 TPIDR_EL0);
 *   ss_pt_regs_in_execve(): whether saved user registers are those of an execve() call.
 */
#ifndef STACKSCOPE_ARCH_SAMPLE_REGS_H
#define STACKSCOPE_ARCH_SAMPLE_REGS_H

#if defined(__TARGET_ARCH_arm64)

/* Besides x29, x30, sp and pc: x27 and x28, PHP's VM registers there (execute_data, opline:
 * Zend/zend_execute.c), in the slots of their x86-64 counterparts r14 and r15
 * (bpf/interp/php/walk.h reads those); x19 and x20, V8's interpreter registers there (the
 * bytecode offset and BytecodeArray: register-arm64.h), in the slots of r9 and r12, theirs
 * on x86-64 (bpf/interp/v8/walk.h); x12 and x22, HotSpot's template interpreter's rmethod
 * and rbcp (Method* and bytecode pointer), in the slots of x86-64's rbx and r13
 * (bpf/interp/hotspot/walk.h); x21, LuaJIT's interpreter PC (vm_arm64.dasc; its BASE is
 * x19), in rsi's slot (bpf/interp/luajit/walk.h)
 */

static __always_inline void regs_from_pt_regs(struct unwind_cursor *st, struct pt_regs *r)
{
	st->regs[DWARF_RBP] = BPF_CORE_READ(r, regs[29]);
	st->regs[SS_ARM64_LR_SLOT] = BPF_CORE_READ(r, regs[30]);
	st->regs[DWARF_RSP] = BPF_CORE_READ(r, sp);
	st->regs[DWARF_RIP] = BPF_CORE_READ(r, pc);
	st->regs[DWARF_R14] = BPF_CORE_READ(r, regs[27]);
	st->regs[DWARF_R15] = BPF_CORE_READ(r, regs[28]);
	st->regs[DWARF_R9] = BPF_CORE_READ(r, regs[19]);
	st->regs[DWARF_R12] = BPF_CORE_READ(r, regs[20]);
	st->regs[DWARF_RBX] = BPF_CORE_READ(r, regs[12]);
	st->regs[DWARF_R13] = BPF_CORE_READ(r, regs[22]);
	st->regs[DWARF_RSI] = BPF_CORE_READ(r, regs[21]);
}

/* The perf context can only be read directly (the verifier rewrites these loads). */
static __always_inline void regs_from_ctx(struct unwind_cursor *st, struct bpf_perf_event_data *ctx)
{
	st->regs[DWARF_RBP] = ctx->regs.regs[29];
	st->regs[SS_ARM64_LR_SLOT] = ctx->regs.regs[30];
	st->regs[DWARF_RSP] = ctx->regs.sp;
	st->regs[DWARF_RIP] = ctx->regs.pc;
	st->regs[DWARF_R14] = ctx->regs.regs[27];
	st->regs[DWARF_R15] = ctx->regs.regs[28];
	st->regs[DWARF_R9] = ctx->regs.regs[19];
	st->regs[DWARF_R12] = ctx->regs.regs[20];
	st->regs[DWARF_RBX] = ctx->regs.regs[12];
	st->regs[DWARF_R13] = ctx->regs.regs[22];
	st->regs[DWARF_RSI] = ctx->regs.regs[21];
}

/* PSTATE.M[3:0] is 0 (EL0t) in user mode. */
static __always_inline int ss_ctx_user_mode(struct bpf_perf_event_data *ctx)
{
	return (ctx->regs.pstate & 0xf) == 0;
}

static __always_inline __u64 ss_task_tls_base(struct task_struct *task)
{
	return BPF_CORE_READ(task, thread.uw.tp_value);
}

/* Whether the saved user registers are those of an execve() or execveat() call (221, 281). */
static __always_inline int ss_pt_regs_in_execve(struct pt_regs *r)
{
	int nr = BPF_CORE_READ(r, syscallno);

	return nr == 221 || nr == 281;
}

#else

static __always_inline void regs_from_pt_regs(struct unwind_cursor *st, struct pt_regs *r)
{
	st->regs[DWARF_RAX] = BPF_CORE_READ(r, ax);
	st->regs[DWARF_RDX] = BPF_CORE_READ(r, dx);
	st->regs[DWARF_RCX] = BPF_CORE_READ(r, cx);
	st->regs[DWARF_RBX] = BPF_CORE_READ(r, bx);
	st->regs[DWARF_RSI] = BPF_CORE_READ(r, si);
	st->regs[DWARF_RDI] = BPF_CORE_READ(r, di);
	st->regs[DWARF_RBP] = BPF_CORE_READ(r, bp);
	st->regs[DWARF_RSP] = BPF_CORE_READ(r, sp);
	st->regs[DWARF_R8] = BPF_CORE_READ(r, r8);
	st->regs[DWARF_R9] = BPF_CORE_READ(r, r9);
	st->regs[DWARF_R10] = BPF_CORE_READ(r, r10);
	st->regs[DWARF_R11] = BPF_CORE_READ(r, r11);
	st->regs[DWARF_R12] = BPF_CORE_READ(r, r12);
	st->regs[DWARF_R13] = BPF_CORE_READ(r, r13);
	st->regs[DWARF_R14] = BPF_CORE_READ(r, r14);
	st->regs[DWARF_R15] = BPF_CORE_READ(r, r15);
	st->regs[DWARF_RIP] = BPF_CORE_READ(r, ip);
}

/* The perf context can only be read directly (the verifier rewrites these loads). */
static __always_inline void regs_from_ctx(struct unwind_cursor *st, struct bpf_perf_event_data *ctx)
{
	st->regs[DWARF_RAX] = ctx->regs.ax;
	st->regs[DWARF_RDX] = ctx->regs.dx;
	st->regs[DWARF_RCX] = ctx->regs.cx;
	st->regs[DWARF_RBX] = ctx->regs.bx;
	st->regs[DWARF_RSI] = ctx->regs.si;
	st->regs[DWARF_RDI] = ctx->regs.di;
	st->regs[DWARF_RBP] = ctx->regs.bp;
	st->regs[DWARF_RSP] = ctx->regs.sp;
	st->regs[DWARF_R8] = ctx->regs.r8;
	st->regs[DWARF_R9] = ctx->regs.r9;
	st->regs[DWARF_R10] = ctx->regs.r10;
	st->regs[DWARF_R11] = ctx->regs.r11;
	st->regs[DWARF_R12] = ctx->regs.r12;
	st->regs[DWARF_R13] = ctx->regs.r13;
	st->regs[DWARF_R14] = ctx->regs.r14;
	st->regs[DWARF_R15] = ctx->regs.r15;
	st->regs[DWARF_RIP] = ctx->regs.ip;
}

/* The context only allows 8-byte loads; cs is the low bits of its slot. */
static __always_inline int ss_ctx_user_mode(struct bpf_perf_event_data *ctx)
{
	return (*(__u64 *)((void *)ctx + __builtin_offsetof(struct pt_regs, cs)) & 3) == 3;
}

static __always_inline __u64 ss_task_tls_base(struct task_struct *task)
{
	return BPF_CORE_READ(task, thread.fsbase);
}

/* Whether the saved user registers are those of an execve() or execveat() call (59, 322). */
static __always_inline int ss_pt_regs_in_execve(struct pt_regs *r)
{
	__u64 nr = BPF_CORE_READ(r, orig_ax);

	return nr == 59 || nr == 322;
}

#endif

#endif
