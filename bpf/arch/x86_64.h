/* x86-64 part of the native unwinder (included by bpf/native_unwind.h after struct
 * unwind_cursor): the cursor's regs[] are the DWARF registers rax..r15 and rip.
 */
#ifndef STACKSCOPE_ARCH_X86_64_H
#define STACKSCOPE_ARCH_X86_64_H

#define SS_USER_ADDR_MAX 0x00007fffffffffffULL
/* Offset of uc_mcontext in the rt_sigframe, from the sp seen in __restore_rt (pretcode has
 * been popped): uc_flags (8) + uc_link (8) + uc_stack (24).
 */
#define SS_SIGFRAME_MCONTEXT 40

/* struct sigcontext_64 order: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip. */
enum sigcontext_slot {
	SC_R8,
	SC_R9,
	SC_R10,
	SC_R11,
	SC_R12,
	SC_R13,
	SC_R14,
	SC_R15,
	SC_RDI,
	SC_RSI,
	SC_RBP,
	SC_RBX,
	SC_RDX,
	SC_RAX,
	SC_RCX,
	SC_RSP,
	SC_RIP,
	SC_CNT,
};

/* Move to the caller through the frame pointer chain: [rbp] = caller's rbp, [rbp+8] = ra. */
/* may_switch: rbp may point below rsp (another stack, e.g. a goroutine's below a thread's);
 * otherwise each step must move up the stack, so a corrupt chain cannot loop.
 */
static __always_inline void ss_step_fp(struct unwind_cursor *st, enum unwind_end why_failed,
				       int may_switch)
{
	__u64 bp = st->regs[DWARF_RBP], pair[2];

	if (bp == 0) {
		/* The ABI's end of the frame chain (_start and thread roots clear rbp) — but in
		 * the interrupted frame rbp may be any register value in code without frame
		 * pointers, so a zero there proves nothing.
		 */
		ss_end(st, st->frame_cnt > 1 ? UNWIND_END_OK : why_failed);
		return;
	}
	if ((bp < st->regs[DWARF_RSP] && !may_switch) || bp > SS_USER_ADDR_MAX - 16 ||
	    ss_read_user(pair, sizeof(pair), bp) < 0) {
		ss_end(st, why_failed);
		return;
	}
	st->regs[DWARF_RBP] = pair[0];
	st->regs[DWARF_RSP] = bp + 16;
	st->regs[DWARF_RIP] = pair[1];
	st->pc_is_return = 1;
	st->regs_valid = 0;
	st->fp_frame_cnt++;
}

static __always_inline void ss_step_signal(struct unwind_cursor *st)
{
	__u64 sc[SC_CNT];

	if (ss_read_user(sc, sizeof(sc), st->regs[DWARF_RSP] + SS_SIGFRAME_MCONTEXT) < 0) {
		ss_end(st, UNWIND_END_READ_FAILED);
		return;
	}
	st->regs[DWARF_R8] = sc[SC_R8];
	st->regs[DWARF_R9] = sc[SC_R9];
	st->regs[DWARF_R10] = sc[SC_R10];
	st->regs[DWARF_R11] = sc[SC_R11];
	st->regs[DWARF_R12] = sc[SC_R12];
	st->regs[DWARF_R13] = sc[SC_R13];
	st->regs[DWARF_R14] = sc[SC_R14];
	st->regs[DWARF_R15] = sc[SC_R15];
	st->regs[DWARF_RDI] = sc[SC_RDI];
	st->regs[DWARF_RSI] = sc[SC_RSI];
	st->regs[DWARF_RBP] = sc[SC_RBP];
	st->regs[DWARF_RBX] = sc[SC_RBX];
	st->regs[DWARF_RDX] = sc[SC_RDX];
	st->regs[DWARF_RAX] = sc[SC_RAX];
	st->regs[DWARF_RCX] = sc[SC_RCX];
	st->regs[DWARF_RSP] = sc[SC_RSP];
	st->regs[DWARF_RIP] = sc[SC_RIP];
	st->regs_valid = 1;
	st->pc_is_return = 0;
	st->after_signal = 1;
}

/* Apply a CFA rule; 0 on success (state moved to the caller). */
static __always_inline int ss_step_cfa(struct unwind_cursor *st, const struct unwind_rule *r)
{
	__u64 cfa, base, ra, old_sp = st->regs[DWARF_RSP];
	__u8 reg = r->cfa_reg;
	/* rbx of this frame (frames[frame_cnt - 1]): the interrupted one's, or followed here */
	int rbx_known = st->regs_valid || st->rbx_for == st->frame_cnt;

	if (r->kind == UNWIND_RULE_PLT) {
		__u64 threshold = r->cfa_off > 0 ? (__u64)r->cfa_off : 11;

		cfa = old_sp + 8 + ((st->regs[DWARF_RIP] & 15) >= threshold ? 8 : 0);
	} else {
		if (reg > DWARF_R15)
			return -1;
		if (reg != DWARF_RSP && reg != DWARF_RBP && !st->regs_valid &&
		    !(reg == DWARF_RBX && rbx_known))
			return -1;
		base = st->regs[reg & 15];
		cfa = base + (__s64)r->cfa_off;
		if (r->kind == UNWIND_RULE_CFA_DEREF) {
			__u64 v;

			if (ss_read_user(&v, sizeof(v), cfa) < 0)
				return -2;
			cfa = v + (__s64)r->deref_add;
		}
	}
	if (r->ra_rule == UNWIND_RA_REG) {
		/* The return address popped into a register: the caller's sp is the CFA, which
		 * may equal ours; only in the interrupted frame, so once a walk.
		 */
		if (!st->regs_valid)
			return -1;
		if (cfa < old_sp || cfa > SS_USER_ADDR_MAX)
			return -3;
		ra = st->regs[r->ra_off & 15];
		st->win_len = 0;
	} else {
		if (cfa <= old_sp || cfa > SS_USER_ADDR_MAX)
			return -3;
		ss_frame_window(st, old_sp, cfa);
		if (ss_frame_word(st, cfa - 8, &ra) < 0)
			return -2;
	}
	if (r->rbp_rule == UNWIND_RBP_CFA_OFF) {
		__u64 bp;

		if (ss_frame_word(st, cfa + (__s64)r->rbp_off, &bp) < 0)
			return -2;
		st->regs[DWARF_RBP] = bp;
	} else if (r->rbp_rule == UNWIND_RBP_RBP_OFF) {
		__u64 bp;

		if (ss_frame_word(st, st->regs[DWARF_RBP] + (__s64)r->rbp_off, &bp) < 0)
			return -2;
		st->regs[DWARF_RBP] = bp;
	} else if (r->rbp_rule == UNWIND_RBP_UNDEFINED) {
		st->regs[DWARF_RBP] = 0;
	}
	if (r->rbx_rule == UNWIND_RBX_CFA_OFF) {
		__u64 bx = 0;

		rbx_known = ss_frame_word(st, cfa + (__s64)r->rbx_off, &bx) == 0;
		st->regs[DWARF_RBX] = bx;
	} else if (r->rbx_rule != UNWIND_RBX_SAME) {
		rbx_known = 0;
	}
	st->rbx_for = rbx_known ? st->frame_cnt + 1 : 0;
	st->regs[DWARF_RSP] = cfa;
	st->regs[DWARF_RIP] = ra;
	st->pc_is_return = 1;
	st->regs_valid = 0;
	return 0;
}

/* After the CFA step of Go's runtime.asyncPreempt (UNWIND_RULE_GO_PREEMPT): the signal handler
 * pushed the interrupted pc as asyncPreempt's return address (sigctxt.pushCall), so the
 * caller's sp and registers are as a CFA rule leaves them. 0.
 */
static __always_inline int ss_step_go_preempt(struct unwind_cursor *st)
{
	(void)st;
	return 0;
}

#endif
