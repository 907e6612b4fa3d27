/* arm64 part of the native unwinder (included by bpf/native_unwind.h after struct
 * unwind_cursor when built for arm64: __TARGET_ARCH_arm64, or SS_ARCH_ARM64 for the replay
 * tests). The cursor's slots keep their x86-64 names as roles: regs[DWARF_RIP] is pc,
 * regs[DWARF_RSP] sp, regs[DWARF_RBP] x29 (the frame pointer) and regs[SS_ARM64_LR_SLOT] x30
 * (the link register); rules use AArch64 DWARF numbers (bpf/abi.h enum dwarf_reg_arm64).
 *
 * - The interrupted frame (and the one a signal interrupted) may not have saved its return
 *   address yet: UNWIND_RA_LINK_REG takes it from x30, valid only there (regs_valid). Such a
 *   frame's CFA may equal sp (a leaf without a stack frame); every other step must move sp up.
 * - Return addresses signed by pointer authentication (paciasp) carry the PAC in the bits
 *   above the virtual-address width: they are masked with SS_USER_ADDR_MAX (48-bit user
 *   addresses, Linux's arm64 default; the top byte is ignored by TBI anyway).
 * - PLT stubs (UNWIND_RULE_PLT) leave sp and x30 alone: the caller is x30.
 * - Signal frames: at the restorer (the vDSO's __kernel_rt_sigreturn) sp points at
 *   struct rt_sigframe { siginfo (128 bytes); ucontext }, whose uc_mcontext (struct
 *   sigcontext: fault_address, regs[31], sp, pc, pstate) starts 176 bytes into the ucontext.
 */
#ifndef STACKSCOPE_ARCH_ARM64_H
#define STACKSCOPE_ARCH_ARM64_H

#define SS_USER_ADDR_MAX 0x0000ffffffffffffULL
#define SS_ARM64_LR_SLOT 0 /* regs[] slot of x30 */
/* sigcontext.regs[0] from the rt_sigframe: siginfo 128 + ucontext header 176 + fault_address */
#define SS_ARM64_SIGFRAME_REGS (128 + 176 + 8)

static __always_inline __u64 ss_strip_pac(__u64 ra)
{
	return ra & SS_USER_ADDR_MAX;
}

/* Move to the caller through the frame record [x29] = {caller's x29, x30}. */
static __always_inline void ss_step_fp(struct unwind_cursor *st, enum unwind_end why_failed,
				       int may_switch)
{
	__u64 fp = st->regs[DWARF_RBP], rec[2];

	if (fp == 0) {
		ss_end(st, st->frame_cnt > 1 ? UNWIND_END_OK : why_failed);
		return;
	}
	if ((fp < st->regs[DWARF_RSP] && !may_switch) || fp > SS_USER_ADDR_MAX - 16 ||
	    ss_read_user(rec, sizeof(rec), fp) < 0) {
		ss_end(st, why_failed);
		return;
	}
	st->regs[DWARF_RBP] = rec[0];
	st->regs[DWARF_RSP] = fp + 16;
	st->regs[DWARF_RIP] = ss_strip_pac(rec[1]);
	st->pc_is_return = 1;
	st->regs_valid = 0;
	st->fp_frame_cnt++;
}

static __always_inline void ss_step_signal(struct unwind_cursor *st)
{
	__u64 fp_lr[2], sp_pc[2], frame = st->regs[DWARF_RSP] + SS_ARM64_SIGFRAME_REGS;
	__u64 x12 = 0, x22 = 0;

	if (ss_read_user(fp_lr, sizeof(fp_lr), frame + DWARF_ARM64_X29 * 8) < 0 ||
	    ss_read_user(sp_pc, sizeof(sp_pc), frame + DWARF_ARM64_SP * 8) < 0) {
		ss_end(st, UNWIND_END_READ_FAILED);
		return;
	}
	st->regs[DWARF_RBP] = fp_lr[0];
	st->regs[SS_ARM64_LR_SLOT] = fp_lr[1];
	st->regs[DWARF_RSP] = sp_pc[0];
	st->regs[DWARF_RIP] = sp_pc[1];
	/* (the registers sample_regs.h keeps besides: HotSpot's interpreter's x12 and x22) */
	if (ss_read_user(&x12, sizeof(x12), frame + 12 * 8) < 0 ||
	    ss_read_user(&x22, sizeof(x22), frame + 22 * 8) < 0)
		x12 = x22 = 0;
	st->regs[DWARF_RBX] = x12;
	st->regs[DWARF_R13] = x22;
	st->regs_valid = 1;
	st->pc_is_return = 0;
	st->after_signal = 1;
}

/* Apply a CFA rule; 0 on success (state moved to the caller), -1 unsupported here, -2 a read
 * failed, -3 a frame that does not move up the stack.
 */
static __always_inline int ss_step_cfa(struct unwind_cursor *st, const struct unwind_rule *r)
{
	__u64 cfa, ra, old_sp = st->regs[DWARF_RSP];
	__u8 ra_rule = r->ra_rule;

	if (r->kind == UNWIND_RULE_PLT) {
		cfa = old_sp;
		ra_rule = UNWIND_RA_LINK_REG;
	} else if (r->cfa_reg == DWARF_ARM64_SP) {
		cfa = old_sp + (__s64)r->cfa_off;
	} else if (r->cfa_reg == DWARF_ARM64_X29) {
		cfa = st->regs[DWARF_RBP] + (__s64)r->cfa_off;
	} else {
		return -1;
	}
	if (ra_rule == UNWIND_RA_LINK_REG) {
		if (!st->regs_valid)
			return -1;
		ra = st->regs[SS_ARM64_LR_SLOT];
		if (cfa < old_sp || cfa > SS_USER_ADDR_MAX)
			return -3;
	} else if (ra_rule == UNWIND_RA_CFA_OFF) {
		if (cfa <= old_sp || cfa > SS_USER_ADDR_MAX)
			return -3;
		if (ss_read_user(&ra, sizeof(ra), cfa + (__s64)r->ra_off) < 0)
			return -2;
	} else {
		return -1;
	}
	if (r->rbp_rule == UNWIND_RBP_CFA_OFF) {
		__u64 fp;

		if (ss_read_user(&fp, sizeof(fp), cfa + (__s64)r->rbp_off) < 0)
			return -2;
		st->regs[DWARF_RBP] = fp;
	} else if (r->rbp_rule == UNWIND_RBP_RBP_OFF) {
		__u64 fp;

		if (ss_read_user(&fp, sizeof(fp), st->regs[DWARF_RBP] + (__s64)r->rbp_off) < 0)
			return -2;
		st->regs[DWARF_RBP] = fp;
	} else if (r->rbp_rule == UNWIND_RBP_UNDEFINED) {
		st->regs[DWARF_RBP] = 0;
	}
	st->regs[DWARF_RSP] = cfa;
	st->regs[DWARF_RIP] = ss_strip_pac(ra);
	st->pc_is_return = 1;
	st->regs_valid = 0;
	return 0;
}

/* After the CFA step of Go's runtime.asyncPreempt (UNWIND_RULE_GO_PREEMPT): the signal handler
 * moved the interrupted frame's sp 16 bytes down, stored its x30 there and entered
 * asyncPreempt with x30 = the interrupted pc (sigctxt.pushCall), so sp and x30 of that frame
 * are CFA + 16 and [CFA]. 0, or -2 when the read fails.
 */
static __always_inline int ss_step_go_preempt(struct unwind_cursor *st)
{
	__u64 lr, cfa = st->regs[DWARF_RSP];

	if (ss_read_user(&lr, sizeof(lr), cfa) < 0)
		return -2;
	st->regs[SS_ARM64_LR_SLOT] = lr;
	st->regs[DWARF_RSP] = cfa + 16;
	st->regs_valid = 1;
	return 0;
}

#endif
