/* DWARF call-frame interpreter (DWARF 5 section 6.4.2) and rule conversion; see cfi.h.
 *
 * Invariants: `loc` only moves forward; rows are emitted when the location advances past
 * code that the current rules describe, and never at or beyond pc_end. The state that
 * DW_CFA_restore* returns to is the state after the CIE's initial instructions.
 * remember_state saves the CFA rule too (as GCC's unwinder and binutils do).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "unwind/cfi.h"

enum dw_cfa {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_window_save = 0x2d,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	/* high two bits */
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

enum dw_op {
	DW_OP_deref = 0x06,
	DW_OP_and = 0x1a,
	DW_OP_plus = 0x22,
	DW_OP_plus_uconst = 0x23,
	DW_OP_shl = 0x24,
	DW_OP_ge = 0x2a,
	DW_OP_lit0 = 0x30,
	DW_OP_breg0 = 0x70,
};

struct cfi_interp {
	struct cfi_state *stack;
	size_t depth, cap;
	struct cfi_stats stats;
};

struct cfi_interp *cfi_interp__new(void)
{
	return calloc(1, sizeof(struct cfi_interp));
}

void cfi_interp__free(struct cfi_interp *ci)
{
	if (!ci)
		return;
	free(ci->stack);
	free(ci);
}

const struct cfi_stats *cfi_interp__stats(const struct cfi_interp *ci)
{
	return &ci->stats;
}

static int push_state(struct cfi_interp *ci, const struct cfi_state *st)
{
	int err = array__reserve_bounded((void **)&ci->stack, &ci->cap, ci->depth + 1,
					 sizeof(*ci->stack), 8, CFI_REMEMBER_MAX);

	if (err)
		return err;
	ci->stack[ci->depth++] = *st;
	if (ci->depth > ci->stats.max_depth)
		ci->stats.max_depth = ci->depth;
	return 0;
}

/* Register rule slot for DWARF register r, or NULL for untracked registers. */
static struct cfi_reg_rule *reg_slot(struct cfi_interp *ci, struct cfi_state *st, uint64_t r)
{
	if (r >= CFI_REG_CNT) {
		ci->stats.untracked_reg_cnt++;
		return NULL;
	}
	return &st->regs[r];
}

static void set_reg(struct cfi_interp *ci, struct cfi_state *st, uint64_t r, uint8_t kind,
		    int64_t off, uint64_t reg2, const uint8_t *expr, uint64_t expr_sz)
{
	struct cfi_reg_rule *rr = reg_slot(ci, st, r);

	if (!rr)
		return;
	rr->kind = kind;
	rr->off = off;
	rr->reg = reg2 > 0xffff ? 0xffff : (uint16_t)reg2;
	rr->expr = expr;
	rr->expr_sz = (uint32_t)expr_sz;
}

static void set_cfa_reg(struct cfi_state *st, uint64_t reg)
{
	st->cfa.reg = reg > 0xffff ? 0xffff : (uint16_t)reg;
}

/* Multiply a factored operand by the alignment factor, failing on overflow. */
static int factor(int64_t v, int64_t f, int64_t *out)
{
	return __builtin_mul_overflow(v, f, out) ? -EINVAL : 0;
}

static int ufactor(uint64_t v, int64_t f, int64_t *out)
{
	if (v > INT64_MAX)
		return -EINVAL;
	return factor((int64_t)v, f, out);
}

struct run {
	struct cfi_interp *ci;
	const struct cfi_section *sec;
	const struct cfi_fde *fde;
	const struct cfi_cie *cie;
	struct cfi_state st;
	struct cfi_state init;
	uint64_t loc;
	bool in_cie;
	bool done;
	cfi_row_fn fn;
	void *ctx;
};

/* Move the location to `to`: emit the row that ends there. */
static int advance(struct run *r, uint64_t to)
{
	int err;

	if (r->in_cie)
		return 0; /* locations mean nothing in a CIE's initial instructions */
	if (to < r->loc)
		return -EINVAL;
	if (to == r->loc)
		return 0;
	err = r->fn(r->ctx, r->loc, &r->st);
	if (err)
		return err;
	r->loc = to;
	if (to >= r->fde->pc_end)
		r->done = true;
	return 0;
}

static int advance_by(struct run *r, uint64_t delta)
{
	uint64_t d, to;

	if (__builtin_mul_overflow(delta, r->cie->code_align, &d) ||
	    __builtin_add_overflow(r->loc, d, &to))
		return -EINVAL;
	return advance(r, to);
}

static int read_block(const uint8_t **p, const uint8_t *end, const uint8_t **blk, uint64_t *sz)
{
	if (dwarf__uleb(p, end, sz) || *sz > (uint64_t)(end - *p) || *sz > UINT32_MAX)
		return -EINVAL;
	*blk = *p;
	*p += *sz;
	return 0;
}

static int exec(struct run *r, const uint8_t *p, const uint8_t *end)
{
	struct cfi_interp *ci = r->ci;
	struct cfi_state *st = &r->st;
	int64_t data_align = r->cie->data_align;
	const uint8_t *blk;
	uint64_t reg, u, sz;
	int64_t s, off;
	int err = 0;

	while (p < end && !r->done) {
		uint8_t op = *p++;
		uint8_t low = op & 0x3f;

		ci->stats.insn_cnt++;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			err = advance_by(r, low);
			goto next;
		case DW_CFA_offset:
			if (dwarf__uleb(&p, end, &u) || ufactor(u, data_align, &off))
				return -EINVAL;
			set_reg(ci, st, low, CFI_REG_OFFSET, off, 0, NULL, 0);
			goto next;
		case DW_CFA_restore:
			if (r->in_cie)
				return -EINVAL;
			if (low < CFI_REG_CNT)
				st->regs[low] = r->init.regs[low];
			goto next;
		}

		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_GNU_window_save:
			ci->stats.negate_ra_cnt++;
			break;
		case DW_CFA_set_loc: {
			uint8_t enc = r->cie->fde_enc;

			if (r->sec->kind == CFI_SECTION_DEBUG_FRAME && !r->cie->has_aug_data)
				enc = DW_EH_PE_absptr;
			err = eh_frame__read_pointer(
				&p, end, enc,
				r->sec->vaddr + (uint64_t)(p - (const uint8_t *)r->sec->data),
				r->sec, r->fde->pc_begin, r->cie->addr_size, &u);
			if (err)
				return -EINVAL;
			err = advance(r, u);
			break;
		}
		case DW_CFA_advance_loc1:
			if (end - p < 1)
				return -EINVAL;
			err = advance_by(r, p[0]);
			p += 1;
			break;
		case DW_CFA_advance_loc2:
			if (end - p < 2)
				return -EINVAL;
			err = advance_by(r, (uint64_t)p[0] | (uint64_t)p[1] << 8);
			p += 2;
			break;
		case DW_CFA_advance_loc4:
			if (end - p < 4)
				return -EINVAL;
			err = advance_by(r, (uint64_t)p[0] | (uint64_t)p[1] << 8 |
						    (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24);
			p += 4;
			break;
		case DW_CFA_MIPS_advance_loc8: {
			int i;

			if (end - p < 8)
				return -EINVAL;
			for (u = 0, i = 7; i >= 0; i--)
				u = u << 8 | p[i];
			p += 8;
			err = advance_by(r, u);
			break;
		}
		case DW_CFA_offset_extended:
		case DW_CFA_val_offset:
			if (dwarf__uleb(&p, end, &reg) || dwarf__uleb(&p, end, &u) ||
			    ufactor(u, data_align, &off))
				return -EINVAL;
			set_reg(ci, st, reg,
				op == DW_CFA_offset_extended ? CFI_REG_OFFSET : CFI_REG_VAL_OFFSET,
				off, 0, NULL, 0);
			break;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			if (dwarf__uleb(&p, end, &reg) || dwarf__sleb(&p, end, &s) ||
			    factor(s, data_align, &off))
				return -EINVAL;
			set_reg(ci, st, reg,
				op == DW_CFA_offset_extended_sf ? CFI_REG_OFFSET
								: CFI_REG_VAL_OFFSET,
				off, 0, NULL, 0);
			break;
		case DW_CFA_GNU_negative_offset_extended:
			if (dwarf__uleb(&p, end, &reg) || dwarf__uleb(&p, end, &u) ||
			    ufactor(u, data_align, &off) || off == INT64_MIN)
				return -EINVAL;
			set_reg(ci, st, reg, CFI_REG_OFFSET, -off, 0, NULL, 0);
			break;
		case DW_CFA_restore_extended:
			if (r->in_cie || dwarf__uleb(&p, end, &reg))
				return -EINVAL;
			if (reg < CFI_REG_CNT)
				st->regs[reg] = r->init.regs[reg];
			break;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			if (dwarf__uleb(&p, end, &reg))
				return -EINVAL;
			set_reg(ci, st, reg,
				op == DW_CFA_undefined ? CFI_REG_UNDEFINED : CFI_REG_SAME, 0, 0,
				NULL, 0);
			break;
		case DW_CFA_register:
			if (dwarf__uleb(&p, end, &reg) || dwarf__uleb(&p, end, &u))
				return -EINVAL;
			set_reg(ci, st, reg, CFI_REG_REGISTER, 0, u, NULL, 0);
			break;
		case DW_CFA_remember_state:
			err = push_state(ci, st);
			break;
		case DW_CFA_restore_state: {
			uint64_t args_size = st->args_size;

			if (!ci->depth)
				return -EINVAL;
			*st = ci->stack[--ci->depth];
			st->args_size = args_size; /* not part of the saved rules */
			break;
		}
		case DW_CFA_def_cfa:
			if (dwarf__uleb(&p, end, &reg) || dwarf__uleb(&p, end, &u) || u > INT64_MAX)
				return -EINVAL;
			st->cfa.kind = CFI_CFA_REG;
			set_cfa_reg(st, reg);
			st->cfa.off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_sf:
			if (dwarf__uleb(&p, end, &reg) || dwarf__sleb(&p, end, &s) ||
			    factor(s, data_align, &off))
				return -EINVAL;
			st->cfa.kind = CFI_CFA_REG;
			set_cfa_reg(st, reg);
			st->cfa.off = off;
			break;
		case DW_CFA_def_cfa_register:
			if (dwarf__uleb(&p, end, &reg))
				return -EINVAL;
			st->cfa.kind = CFI_CFA_REG;
			set_cfa_reg(st, reg);
			break;
		case DW_CFA_def_cfa_offset:
			if (dwarf__uleb(&p, end, &u) || u > INT64_MAX)
				return -EINVAL;
			st->cfa.off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_offset_sf:
			if (dwarf__sleb(&p, end, &s) || factor(s, data_align, &off))
				return -EINVAL;
			st->cfa.off = off;
			break;
		case DW_CFA_def_cfa_expression:
			if (read_block(&p, end, &blk, &sz))
				return -EINVAL;
			st->cfa.kind = CFI_CFA_EXPR;
			st->cfa.expr = blk;
			st->cfa.expr_sz = (uint32_t)sz;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (dwarf__uleb(&p, end, &reg) || read_block(&p, end, &blk, &sz))
				return -EINVAL;
			set_reg(ci, st, reg,
				op == DW_CFA_expression ? CFI_REG_EXPR : CFI_REG_VAL_EXPR, 0, 0,
				blk, sz);
			break;
		case DW_CFA_GNU_args_size:
			if (dwarf__uleb(&p, end, &u))
				return -EINVAL;
			st->args_size = u;
			ci->stats.args_size_cnt++;
			break;
		default:
			return -EINVAL; /* unknown opcode: its operands cannot be skipped */
		}
next:
		if (err)
			return err;
	}
	return 0;
}

int cfi_interp__run(struct cfi_interp *ci, const struct cfi_section *sec, const struct cfi_fde *fde,
		    cfi_row_fn fn, void *ctx)
{
	struct run r;
	int err;

	if (!ci || !sec || !fde || !fde->cie || !fn || fde->pc_begin >= fde->pc_end)
		return -EINVAL;
	memset(&r.st, 0, sizeof(r.st));
	r.ci = ci;
	r.sec = sec;
	r.fde = fde;
	r.cie = fde->cie;
	r.loc = fde->pc_begin;
	r.fn = fn;
	r.ctx = ctx;
	r.done = false;
	ci->depth = 0;

	r.in_cie = true;
	err = exec(&r, r.cie->insns, r.cie->insns + r.cie->insns_sz);
	if (err)
		return err;
	r.init = r.st;
	r.in_cie = false;
	ci->depth = 0; /* the stack does not carry over from the CIE (binutils agrees) */
	err = exec(&r, fde->insns, fde->insns + fde->insns_sz);
	if (err)
		return err;
	if (r.loc < fde->pc_end)
		err = fn(ctx, r.loc, &r.st);
	return err;
}

/* ---- conversion ---- */

int cfi__match_plt_expr(const uint8_t *e, size_t sz)
{
	/* DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11|10; DW_OP_ge;
	 * DW_OP_lit3; DW_OP_shl; DW_OP_plus
	 */
	static const uint8_t plt[] = { DW_OP_breg0 + 7, 8,         DW_OP_breg0 + 16, 0,
				       DW_OP_lit0 + 15, DW_OP_and, 0 /* lit */,      DW_OP_ge,
				       DW_OP_lit0 + 3,  DW_OP_shl, DW_OP_plus };
	size_t i;

	if (!e || sz != sizeof(plt))
		return 0;
	for (i = 0; i < sz; i++) {
		if (i == 6)
			continue;
		if (e[i] != plt[i])
			return 0;
	}
	if (e[6] == DW_OP_lit0 + 11)
		return 11;
	if (e[6] == DW_OP_lit0 + 10)
		return 10;
	return 0;
}

/* DW_OP_breg(N) off [; DW_OP_deref [; DW_OP_plus_uconst k]]: 0 or -1. */
static int match_breg_deref(const uint8_t *e, size_t sz, uint8_t *reg, int64_t *off, bool *deref,
			    uint64_t *add)
{
	const uint8_t *p = e, *end = e + sz;

	if (!e || !sz || p[0] < DW_OP_breg0 || p[0] > DW_OP_breg0 + 31)
		return -1;
	*reg = (uint8_t)(p[0] - DW_OP_breg0);
	p++;
	if (dwarf__sleb(&p, end, off))
		return -1;
	*deref = false;
	*add = 0;
	if (p == end)
		return 0;
	if (*p++ != DW_OP_deref)
		return -1;
	*deref = true;
	if (p == end)
		return 0;
	if (*p++ != DW_OP_plus_uconst || dwarf__uleb(&p, end, add))
		return -1;
	return p == end ? 0 : -1;
}

static void set_kind_only(struct unwind_rule *out, uint8_t kind)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
}

/* rbx in the caller: what a CFA based on rbx further up needs (bpf/abi.h enum
 * unwind_rbx_rule). Not saved by this frame: unchanged, as for every callee-saved register.
 */
static void rbx_rule(const struct cfi_reg_rule *rbx, struct unwind_rule *out)
{
	switch (rbx->kind) {
	case CFI_REG_UNSPEC:
	case CFI_REG_SAME:
		out->rbx_rule = UNWIND_RBX_SAME;
		break;
	case CFI_REG_OFFSET:
		if (rbx->off >= INT16_MIN && rbx->off <= INT16_MAX) {
			out->rbx_rule = UNWIND_RBX_CFA_OFF;
			out->rbx_off = (int16_t)rbx->off;
		}
		break;
	default: /* undefined, in another register, an expression: unknown */
		break;
	}
}

void cfi__to_unwind_rule(const struct cfi_state *st, const struct cfi_cie *cie,
			 struct unwind_rule *out, unsigned int *lost)
{
	const struct cfi_reg_rule *ra;
	int plt;

	memset(out, 0, sizeof(*out));
	if (cie->signal_frame) {
		out->kind = UNWIND_RULE_SIGNAL;
		return;
	}
	if (cie->ra_reg >= CFI_REG_CNT) {
		out->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	ra = &st->regs[cie->ra_reg];
	if (ra->kind == CFI_REG_UNDEFINED) {
		out->kind = UNWIND_RULE_STOP;
		return;
	}
	if (ra->kind == CFI_REG_REGISTER && ra->reg <= DWARF_R15) {
		out->ra_rule = UNWIND_RA_REG;
	} else if (ra->kind != CFI_REG_OFFSET || ra->off != -8) {
		out->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}

	switch (st->cfa.kind) {
	case CFI_CFA_REG:
		if (st->cfa.reg > DWARF_R15 || st->cfa.off < INT32_MIN || st->cfa.off > INT32_MAX) {
			set_kind_only(out, UNWIND_RULE_UNSUPPORTED);
			return;
		}
		out->kind = UNWIND_RULE_CFA;
		out->cfa_reg = (uint8_t)st->cfa.reg;
		out->cfa_off = (int32_t)st->cfa.off;
		if (out->ra_rule == UNWIND_RA_REG)
			out->ra_off = (int16_t)ra->reg;
		break;
	case CFI_CFA_EXPR: {
		uint8_t reg;
		int64_t off;
		uint64_t add;
		bool deref;

		if (out->ra_rule == UNWIND_RA_REG) { /* ra_off and deref_add share their bytes */
			set_kind_only(out, UNWIND_RULE_UNSUPPORTED);
			return;
		}
		plt = cfi__match_plt_expr(st->cfa.expr, st->cfa.expr_sz);
		if (plt) {
			out->kind = UNWIND_RULE_PLT;
			out->cfa_reg = DWARF_RSP;
			out->cfa_off = plt;
			break;
		}
		if (match_breg_deref(st->cfa.expr, st->cfa.expr_sz, &reg, &off, &deref, &add) ||
		    reg > DWARF_R15 || off < INT32_MIN || off > INT32_MAX || add > INT16_MAX) {
			set_kind_only(out, UNWIND_RULE_UNSUPPORTED);
			return;
		}
		out->kind = deref ? UNWIND_RULE_CFA_DEREF : UNWIND_RULE_CFA;
		out->cfa_reg = reg;
		out->cfa_off = (int32_t)off;
		out->deref_add = (int16_t)add;
		break;
	}
	default:
		set_kind_only(out, UNWIND_RULE_UNSUPPORTED);
		return;
	}

	cfi__fp_rule(&st->regs[DWARF_RBP], DWARF_RBP, out, lost);
	rbx_rule(&st->regs[DWARF_RBX], out);
}

void cfi__fp_rule(const struct cfi_reg_rule *fp, uint8_t fp_reg, struct unwind_rule *out,
		  unsigned int *lost)
{
	switch (fp->kind) {
	case CFI_REG_UNSPEC:
	case CFI_REG_SAME:
		out->rbp_rule = UNWIND_RBP_SAME;
		break;
	case CFI_REG_UNDEFINED:
		out->rbp_rule = UNWIND_RBP_UNDEFINED;
		break;
	case CFI_REG_OFFSET:
		if (fp->off >= INT16_MIN && fp->off <= INT16_MAX) {
			out->rbp_rule = UNWIND_RBP_CFA_OFF;
			out->rbp_off = (int16_t)fp->off;
			break;
		}
		goto lost_rbp;
	case CFI_REG_EXPR: {
		/* DRAP frames: "rbp saved at rbp + off" (DW_OP_breg6 off). */
		uint8_t reg;
		int64_t off;
		uint64_t add;
		bool deref;

		if (!match_breg_deref(fp->expr, fp->expr_sz, &reg, &off, &deref, &add) &&
		    reg == fp_reg && !deref && !add && off >= INT16_MIN && off <= INT16_MAX) {
			out->rbp_rule = UNWIND_RBP_RBP_OFF;
			out->rbp_off = (int16_t)off;
			break;
		}
		goto lost_rbp;
	}
lost_rbp:
	default:
		out->rbp_rule = UNWIND_RBP_UNDEFINED;
		if (lost)
			*lost |= CFI_LOST_RBP;
		break;
	}
}
