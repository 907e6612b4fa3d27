/* LuaJIT 2.1 in the native walk (included by bpf/interp/dispatch.h, which calls
 * luajit_activation() when the pc about to be emitted lies in the VM's code, the file range of
 * luajit or libluajit-5.1, and luajit_code_step() when it lies in JIT trace code, a code range
 * of the process).
 *
 * (x86-64 here; arm64's differences: the LUAJIT_ARM64 block below.)
 * The VM's one FDE says CFA = rsp + 80 for all of its code. That holds for the interpreter (its
 * C frame) and is wrong for the leaf helpers it calls (CFA = rsp + 8) and for trace code (no
 * CFI at all: rsp is the interpreter frame's, lowered by the trace's spill area). So a pc there
 * is classified by the VM frame's own link (bpf_abi.h): a verified C frame of the VM gets the
 * Lua marker and is then left to the FDE's rule (the dispatch does not look at the same pc and
 * sp twice); a leaf that is not one is a helper when its return address lies in the VM or in
 * trace code (emitted as the native frame it is, the cursor moved to that address); trace code
 * gets the trace's frame and the cursor moves to the VM frame found above it (at the VM's first
 * address, whose rule is the frame's). Anything else is counted and left to the native step.
 *
 * A verified VM frame's Lua frames (bpf_abi.h) are emitted one per step, innermost first, just
 * above it (leaf side), each with its Lua caller (whose call instruction names it); the cursor
 * is kept across steps: the next VM frame of the same lua_State goes on where the last run
 * stopped (the frame entered from C). A process not attached yet gets no Lua frames, but its
 * leaf helpers are still told apart (by the file's VM range), so its native walk stays exact.
 *
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count,
 * ss_interp_code). Invariants: one frame per call; the cursor moves only up the stack (a trace's
 * VM frame is at or above its sp, at the same sp only to a pc in a mapped file).
 */
#ifndef STACKSCOPE_LUAJIT_WALK_H
#define STACKSCOPE_LUAJIT_WALK_H

#include "interp/common.h"
#include "interp/luajit/bpf_abi.h"

#if defined(__TARGET_ARCH_arm64) || defined(SS_ARCH_ARM64)
/* arm64 (vm_arm64.dasc, lj_frame.h): the C frame is CFRAME_SIZE 208 bytes with sp at its
 * bottom and the frame record {x29, x30} at sp + 192, which x29 points at in the interpreter
 * and in trace code alike (traces keep x29), so a trace's VM frame is x29 - 192, no search;
 * SAVE_CFRAME at sp + 0, SAVE_PC at sp + 8. BASE is x19 and PC x21 (bpf/arch/sample_regs.h:
 * the cursor's r9 and rsi slots). Leaf helpers (lj_vm_modi, ...) return through x30. Traces
 * do not store their number in vmstate (it reads 0 there): the running trace is the one whose
 * machine code holds the pc, among J->trace's first LUAJIT_TRACE_SCAN slots.
 */
#define LUAJIT_ARM64 1
#define LUAJIT_ARM64_FP_AT 192 /* the frame record, x29's target, above the C frame's sp */
#define LUAJIT_CF_PREV_AT 0
#define LUAJIT_CF_PC_AT 8
#define LUAJIT_REG_BASE DWARF_R9
#define LUAJIT_REG_PC DWARF_RSI
#else
#define LUAJIT_ARM64 0
#define LUAJIT_CF_PREV_AT LUAJIT_CF_PREV
#define LUAJIT_CF_PC_AT 24
#define LUAJIT_REG_BASE DWARF_RDX
#define LUAJIT_REG_PC DWARF_RBX
#endif

struct luajit_cursor {
	__u64 l;      /* the lua_State whose frames are emitted (0: none yet) */
	__u64 base;   /* the next frame's base */
	__u64 pc;     /* its pc: the instruction after the current one (0: unknown) */
	__u64 run_sp; /* the VM frame whose run was started (by a trace: skip its activation) */
	__u8 sub;     /* the next frame's enum luajit_sub; a trace's pc is its start itself */
	__u8 pad[7];
};

static __always_inline void luajit_reset(struct luajit_cursor *lc)
{
	lc->l = lc->run_sp = 0;
}

/* 1 when a C frame of the VM has its rsp at c: the lua_State in its SAVE_L slot has c in its
 * chain of C frames within `hops` links (1: c must be that L's innermost).
 */
static __always_inline int luajit_vm_frame(const struct luajit_proc_abi *p, __u64 c, int hops,
					   __u64 *lp)
{
	__u64 l = 0, cf;
	int i;

	if (ss_read_user(&l, p->l_size == 4 ? 4 : 8, c + p->l_slot) < 0 || l < 0x1000 ||
	    l > SS_USER_ADDR_MAX || (l & 7))
		return 0;
	if (ss_read_user(&cf, sizeof(cf), l + p->l_cframe) < 0)
		return 0;
	for (i = 0; i < LUAJIT_CHAIN_MAX; i++) {
		cf &= ~3ull;
		if (cf == c) {
			*lp = l;
			return 1;
		}
		if (i + 1 >= hops || cf < 0x1000 || cf > c ||
		    ss_read_user(&cf, sizeof(cf), cf + LUAJIT_CF_PREV_AT) < 0)
			return 0;
	}
	return 0;
}

/* a lies in the VM's code or in one of the process's LuaJIT code ranges (traces) */
static __always_inline int luajit_code_at(struct unwind_cursor *st, struct interp_state *is,
					  const struct luajit_proc_abi *p, __u64 a)
{
	int i, in = 0;

	if (a >= p->vm_lo && a < p->vm_hi)
		return 1;
	if (!ss_interp_code_ranges(st, is))
		return 0;
	for (i = 0; i < INTERP_CODE_RANGES; i++)
		if (a >= is->code.r[i].start && a < is->code.r[i].end &&
		    is->code.r[i].runtime == FRAME_KIND_LUAJIT)
			in = 1;
	return in;
}

/* The process's VM description, or NULL (counted, or a marker for an unsupported one: then
 * *used says the iteration was used).
 */
static __always_inline const struct luajit_proc_abi *
luajit_proc(struct unwind_cursor *st, struct interp_state *is, struct user_frame *frames, int *used)
{
	const struct interp_proc *proc;

	*used = 0;
	if (is->off & INTERP_BIT(FRAME_KIND_LUAJIT))
		return 0;
	proc = ss_interp_proc(st->pid, FRAME_KIND_LUAJIT);
	if (!proc) {
		ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_NO_PROC);
		return 0;
	}
	if (!proc->luajit.supported) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_UNSUPPORTED,
				    LUAJIT_COUNTER_UNSUPPORTED);
		*used = 1;
		return 0;
	}
	return &proc->luajit;
}

/* A pointer-sized reference of the VM's layout (8 bytes, or 4 with 32-bit references). */
static __always_inline int luajit_ref(const struct luajit_proc_abi *p, __u64 addr, __u64 *out)
{
	*out = 0;
	return ss_read_user(out, p->gc64 ? 8 : 4, addr);
}

/* The caller's function's bytecode (its GCfuncL's pc) from the caller's base, or 0. */
static __always_inline __u64 luajit_caller_bc(const struct luajit_proc_abi *p, __u64 cbase)
{
	__u64 cfn = 0, cbc = 0;

	if (cbase < 0x1000 + 16 || luajit_ref(p, cbase - (p->gc64 ? 16 : 8), &cfn) < 0)
		return 0;
	if (p->gc64)
		cfn &= (1ull << 47) - 1;
	if (cfn < 0x1000 || luajit_ref(p, cfn + p->fn_pc, &cbc) < 0)
		return 0;
	return cbc;
}

/* Emit the frame at lc->base and move to its caller; the run ends at the frame entered from
 * C (the next VM frame goes on below it) or at a frame that does not check out (a marker).
 * A Lua frame's caller (a Lua frame that called it or whose instruction ran it as a
 * metamethod) goes with it (bpf_abi.h: its name is the caller's to tell).
 */
static __always_inline void luajit_emit(struct unwind_cursor *st, struct interp_state *is,
					struct luajit_cursor *lc, struct user_frame *frames)
{
	const struct interp_proc *proc;
	const struct luajit_proc_abi *p;
	__u64 base = lc->base, w[2] = { 0, 0 }, fn, link, bc = 0, pt = 0, pos = 0, delta, cbc;
	__u8 fnb[LUAJIT_FN_READ];
	__u32 sizebc = 0, firstline = 0, ins = 0, cookie = 0, caller = 0;
	__s64 d;
	int lua;

	if (ss_interp_full(st, is, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_TRUNCATED,
			   LUAJIT_COUNTER_TRUNCATED))
		return;
	proc = ss_interp_proc(st->pid, FRAME_KIND_LUAJIT);
	if (!proc)
		goto bad;
	p = &proc->luajit;
	if (base < 0x1000 + 16 || base > SS_USER_ADDR_MAX)
		goto bad;
	if (p->gc64) { /* base[-2]: the function (tagged), base[-1]: the link */
		if (ss_read_user(w, sizeof(w), base - 16) < 0)
			goto bad;
		fn = w[0] & ((1ull << 47) - 1);
		link = w[1];
	} else { /* base[-1]: the function (low half), the link (high half) */
		if (ss_read_user(w, 8, base - 8) < 0)
			goto bad;
		fn = w[0] & 0xffffffffull;
		link = (__u64)(__s64)(__s32)(w[0] >> 32);
	}
	if ((link & 7) == 3) { /* FRAME_VARG: the function's own frame is below, same pc */
		delta = link & ~7ull;
		if (!delta || delta >= base)
			goto bad;
		lc->base = base - delta;
		return;
	}
	if (fn < 0x1000 || ss_read_user(fnb, sizeof(fnb), fn) < 0)
		goto bad;
	lua = fnb[p->fn_ffid & (LUAJIT_FN_READ - 1)] == 0;
	if (lua) {
		/* the bytecode follows the GCproto; chunkname and firstline are adjacent */
		if (luajit_ref(p, fn + p->fn_pc, &bc) < 0)
			goto bad;
		pt = bc - p->pt_size;
		/* chunkname and firstline (12 bytes) into w, done with: runtime_step's stack is
		 * at the 320 bytes the tail-call variant can afford on 5.10-6.1 (544 refused) */
		if (ss_read_user(&sizebc, 4, pt + p->pt_sizebc) < 0 ||
		    ss_read_user(w, 12, pt + p->pt_chunkname) < 0)
			goto bad;
		firstline = p->gc64 ? (__u32)w[1] : (__u32)(w[0] >> 32);
		cookie = luajit_cookie(p->gc64 ? w[0] : w[0] & 0xffffffffull, firstline);
		pos = LUAJIT_POS_NONE;
		if (lc->pc > bc && lc->pc <= bc + 4 * (__u64)sizebc)
			pos = (lc->pc - bc) / 4 - (lc->sub == LUAJIT_SUB_TRACE ? 0 : 1);
		else if (lc->sub == LUAJIT_SUB_TRACE && lc->pc == bc)
			pos = 0;
		else
			ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_NO_PC);
		pos = (__u64)lc->sub << 60 | (pos & LUAJIT_POS_NONE) << 32 | cookie;
	}
	/* C functions and fast functions called from Lua are native frames (or none) */
	lc->sub = LUAJIT_SUB_INTERPRETED;
	lc->pc = 0;
	switch (link & 3) {
	case 0: /* FRAME_LUA: a return pc into the caller, whose call instruction's A gives the
		 * caller's base */
		if (!p->gc64)
			link &= 0xffffffffull;
		if (link < 0x1004 || ss_read_user(&ins, 4, link - 4) < 0)
			goto bad;
		lc->pc = link;
		lc->base = base - 8 * ((p->gc64 ? 2 : 1) + ((ins >> 8) & 0xff));
		break;
	case 1: /* FRAME_C, FRAME_CP: entered from C, the end of this VM frame's run */
		lc->base = base - (link & ~7ull);
		is->emitting = 0;
		break;
	default: /* FRAME_CONT, FRAME_PCALL(H): a delta below */
		delta = link & ~7ull;
		if (!delta || delta >= base)
			goto bad;
		lc->base = base - delta;
		/* a continuation keeps its caller's pc in the slot below the function's (the
		 * high half of it without GC64); pcall's caller is pcall's own frame's link */
		if ((link & 7) == 2) {
			if (p->gc64)
				ss_read_user(&lc->pc, 8, base - 24);
			else
				ss_read_user(&lc->pc, 4, base - 12);
		}
		break;
	}
	if (!lua)
		return;
	/* the caller: its GCproto's distance (8-byte units) and its instruction's index */
	if (lc->pc && is->emitting && (cbc = luajit_caller_bc(p, lc->base)) && lc->pc > cbc) {
		d = (__s64)(cbc - bc);
		delta = (lc->pc - cbc) / 4; /* the caller's instruction's index + 1 */
		if (!(d & 7) && d >= -(8ll << 31) && d < (8ll << 31) &&
		    delta < LUAJIT_CALLER_POS_MAX) {
			caller = (__u32)((__u64)d >> 3); /* d is a multiple of 8 */
			pt |= delta << 47;
		}
	}
	ss_interp_frame(st, frames, FRAME_KIND_LUAJIT, pt, pos, caller);
	ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_FRAMES);
	return;
bad:
	ss_interp_fail(st, is, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_BAD_STACK,
		       LUAJIT_COUNTER_BAD_STACK);
}

/* Begin the run of the VM frame at c (its lua_State l): the frames from base (pc: the
 * instruction after the current one, or a trace's start).
 */
static __always_inline void luajit_run(struct unwind_cursor *st, struct interp_state *is,
				       struct luajit_cursor *lc, struct user_frame *frames, __u64 l,
				       __u64 c, __u64 base, __u64 pc, __u8 sub)
{
	is->started |= INTERP_BIT(FRAME_KIND_LUAJIT); /* its frames need the heap: no replay */
	lc->l = l;
	lc->base = base;
	lc->pc = pc;
	lc->sub = sub;
	lc->run_sp = c;
	is->emitting = FRAME_KIND_LUAJIT;
	luajit_emit(st, is, lc, frames);
}

/* A pc in the VM's code (the file range). 1: this iteration emitted a frame, 0: the native
 * step (the FDE's rule) runs now.
 */
static __always_inline int luajit_activation(struct unwind_cursor *st, struct interp_state *is,
					     struct luajit_cursor *lc, struct user_frame *frames)
{
	const struct luajit_proc_abi *p;
	__u64 sp = st->regs[DWARF_RSP], pc = st->regs[DWARF_RIP], ra = 0, ra_sp, l = 0, base = 0;
	__u64 vpc = 0;
	__u32 idx = st->frame_cnt;
	int used;

	p = luajit_proc(st, is, frames, &used);
	if (used)
		return 1;
	if (p && lc->l && lc->run_sp == sp)
		return 0; /* a trace's VM frame: its run is done */
	if (p && luajit_vm_frame(p, sp, st->pc_is_return ? LUAJIT_CHAIN_MAX : 1, &l)) {
		ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_VM_FRAMES);
		if (l == lc->l) { /* an outer VM frame of the same lua_State */
			luajit_run(st, is, lc, frames, l, sp, lc->base, 0, LUAJIT_SUB_INTERPRETED);
			return 1;
		}
		if (st->regs_valid) { /* the interpreter's own registers */
			base = st->regs[LUAJIT_REG_BASE];
			vpc = st->regs[LUAJIT_REG_PC];
		} else if (luajit_ref(p, l + p->l_base, &base) < 0 ||
			   ss_read_user(&vpc, 8, sp + LUAJIT_CF_PC_AT) < 0) { /* L->base, SAVE_PC */
			ss_interp_fail(st, is, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_BAD_STACK,
				       LUAJIT_COUNTER_BAD_STACK);
			return 1;
		}
		luajit_run(st, is, lc, frames, l, sp, base, vpc, LUAJIT_SUB_INTERPRETED);
		return 1;
	}
#if LUAJIT_ARM64
	/* (a helper's return address is x30, sp unchanged: it has no frame) */
	ra = st->regs_valid ? ss_strip_pac(st->regs[SS_ARM64_LR_SLOT]) : 0;
	ra_sp = sp;
#else
	if (st->pc_is_return || ss_read_user(&ra, sizeof(ra), sp) < 0)
		ra = 0;
	ra_sp = sp + 8;
#endif
	if (!st->pc_is_return && idx < SS_MAX_USER_FRAMES && ra > 0x1000 &&
	    (p ? luajit_code_at(st, is, p, ra - 1)
	       : ra - 1 >= st->last_map.start && ra - 1 < st->last_map.end &&
			     ra - 1 - st->last_map.bias >= is->file.range_start[0] &&
			     ra - 1 - st->last_map.bias < is->file.range_end[0])) {
		/* a leaf helper called by the VM or a trace: it leaves BASE and PC alone, so the
		 * registers stay the interpreter's; without the process's VM (not attached yet),
		 * one called by the VM as the file range says, so that the native walk goes on
		 */
		ss_interp_put(st, frames, idx, FRAME_KIND_NATIVE, pc - st->last_map.bias,
			      st->last_map.file_id, 0);
		st->regs[DWARF_RIP] = ra;
		st->regs[DWARF_RSP] = ra_sp;
		st->pc_is_return = 1;
		st->rbx_for = 0;
		ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_HELPERS);
		return 1;
	}
	if (p)
		ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_VM_UNKNOWN);
	return 0;
}

#if LUAJIT_ARM64
#define LUAJIT_TRACE_SCAN 32 /* J->trace slots searched for the running trace */

/* arm64: the start pc of the trace whose machine code holds pc (g: the global_State), or 0.
 * J->trace is followed by freetrace and sizetrace (lj_jit.h: sizetrace 12 bytes after it);
 * GCtrace's startpc, startins, szmcode, mcode are adjacent (GC64).
 */
static __always_inline __u64 luajit_trace_start(const struct luajit_proc_abi *p, __u64 g, __u64 pc)
{
	__u64 arr = 0, tr = 0, t[3];
	__u32 size = 0;
	int k;

	if (ss_read_user(&arr, sizeof(arr), g + p->g_trace) < 0 ||
	    ss_read_user(&size, sizeof(size), g + p->g_trace + 12) < 0 || arr < 0x1000)
		return 0;
	for (k = 1; k < LUAJIT_TRACE_SCAN && (__u32)k < size; k++) {
		if (ss_read_user(&tr, sizeof(tr), arr + 8 * (__u64)k) < 0)
			return 0;
		if (tr < 0x1000 || ss_read_user(t, sizeof(t), tr + p->tr_startpc) < 0)
			continue;
		if (pc >= t[2] && pc - t[2] < (t[1] >> 32)) /* mcode .. + szmcode */
			return t[0];
	}
	return 0;
}
#endif

/* A pc in trace code (a LuaJIT code range): the frame the trace started in, and the cursor to
 * its VM frame; the rest of that frame's run follows.
 */
static __always_inline int luajit_code_step(struct unwind_cursor *st, struct interp_state *is,
					    struct luajit_cursor *lc, struct user_frame *frames,
					    int guess)
{
	const struct luajit_proc_abi *p;
	__u64 sp = st->regs[DWARF_RSP], c = 0, l = 0, g = 0, base = 0, arr = 0, tr = 0, spc = 0;
	__s32 vmstate = 0;
	int used, k, found = 0;

	(void)guess;
	p = luajit_proc(st, is, frames, &used);
	if (!p)
		return used;
#if LUAJIT_ARM64
	(void)k;
	c = st->regs[DWARF_RBP] - LUAJIT_ARM64_FP_AT;
	found = st->regs[DWARF_RBP] >= sp + LUAJIT_ARM64_FP_AT && luajit_vm_frame(p, c, 1, &l);
#else
	for (k = 0; k < LUAJIT_SPADJ_SLOTS && !found; k++) {
		c = sp + 16 * (__u64)k;
		found = luajit_vm_frame(p, c, 1, &l);
	}
#endif
	if (!found) {
		ss_interp_code_fail(st, is, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_NO_FRAME,
				    LUAJIT_COUNTER_NO_FRAME);
		st->done = 1;
		st->end = UNWIND_END_BAD_FRAME;
		return 1;
	}
	ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_TRACES);
	ss_interp_count(FRAME_KIND_LUAJIT, LUAJIT_COUNTER_VM_FRAMES);
	/* jit_base, J->trace, its slots and startpc are references (4 bytes without GC64) */
	found = p->g_jit_base && luajit_ref(p, l + p->l_glref, &g) == 0 && g > 0x1000 &&
		luajit_ref(p, g + p->g_jit_base, &base) == 0 && base;
#if LUAJIT_ARM64
	/* (a trace not found among the first slots: its frame without a line) */
	(void)vmstate, (void)arr, (void)tr;
	if (found)
		spc = luajit_trace_start(p, g, st->regs[DWARF_RIP]);
#else
	found = found && ss_read_user(&vmstate, 4, g + p->g_vmstate) == 0 && vmstate > 0 &&
		vmstate < 65536 && luajit_ref(p, g + p->g_trace, &arr) == 0 &&
		luajit_ref(p, arr + (p->gc64 ? 8 : 4) * (__u64)vmstate, &tr) == 0 &&
		luajit_ref(p, tr + p->tr_startpc, &spc) == 0;
#endif
	if (found) {
		luajit_run(st, is, lc, frames, l, c, base, spc, LUAJIT_SUB_TRACE);
	} else {
		/* the trace's marker; the lua_State's outer VM frames cannot go on from it */
		is->started |= INTERP_BIT(FRAME_KIND_LUAJIT);
		ss_interp_marker(st, frames, FRAME_KIND_LUAJIT, LUAJIT_MARKER_TRACE);
		lc->l = l;
		lc->base = 0;
		lc->run_sp = c;
	}
	st->regs[DWARF_RIP] = p->vm_lo;
	st->regs[DWARF_RSP] = c;
	st->pc_is_return = 0;
	st->regs_valid = 0;
	st->rbx_for = 0;
	return 1;
}

#endif
