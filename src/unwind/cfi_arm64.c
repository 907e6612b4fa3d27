/* Conversion of CFI rows into unwind rules for arm64 (AArch64 DWARF numbering): see cfi.h. */
#include <stdint.h>
#include <string.h>

#include "unwind/cfi.h"

void cfi__to_unwind_rule_arm64(const struct cfi_state *st, const struct cfi_cie *cie,
			       struct unwind_rule *out, unsigned int *lost)
{
	const struct cfi_reg_rule *ra;

	memset(out, 0, sizeof(*out));
	if (cie->signal_frame) {
		out->kind = UNWIND_RULE_SIGNAL;
		return;
	}
	if (cie->ra_reg != DWARF_ARM64_X30) {
		out->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	ra = &st->regs[DWARF_ARM64_X30];
	switch (ra->kind) {
	case CFI_REG_UNDEFINED:
		out->kind = UNWIND_RULE_STOP;
		return;
	case CFI_REG_UNSPEC:
	case CFI_REG_SAME:
		out->ra_rule = UNWIND_RA_LINK_REG;
		break;
	case CFI_REG_OFFSET:
		if (ra->off < INT16_MIN || ra->off > INT16_MAX) {
			out->kind = UNWIND_RULE_UNSUPPORTED;
			return;
		}
		out->ra_rule = UNWIND_RA_CFA_OFF;
		out->ra_off = (int16_t)ra->off;
		break;
	default:
		out->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	if (st->cfa.kind != CFI_CFA_REG || st->cfa.reg > DWARF_ARM64_SP ||
	    st->cfa.off < INT32_MIN || st->cfa.off > INT32_MAX) {
		memset(out, 0, sizeof(*out));
		out->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	out->kind = UNWIND_RULE_CFA;
	out->cfa_reg = (uint8_t)st->cfa.reg;
	out->cfa_off = (int32_t)st->cfa.off;
	cfi__fp_rule(&st->regs[DWARF_ARM64_X29], DWARF_ARM64_X29, out, lost);
}
