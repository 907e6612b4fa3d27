/* DWARF call-frame instruction interpreter and the conversion of its rows into the
 * struct unwind_rule the eBPF unwinder evaluates (bpf/abi.h).
 *
 * cfi_interp__run() executes a CIE's initial instructions and then an FDE's instructions,
 * handing out one row per distinct code location: the rules in force from `addr` up to the
 * next row's addr (or the FDE's pc_end). Rows have strictly increasing addresses inside
 * [pc_begin, pc_end). Every DW_CFA_* opcode of DWARF 5 plus the GNU extensions is decoded;
 * an unknown opcode or a truncated operand makes the whole FDE invalid (-EINVAL), because
 * the rows after it cannot be trusted.
 *
 * Register rules are tracked for DWARF registers 0..CFI_REG_CNT-1 (x86-64: the 16 GPRs and
 * the return-address column 16; arm64: x0..x30 and sp); rules for other registers are
 * decoded and dropped. Opcode 0x2d is DW_CFA_GNU_window_save on SPARC and
 * DW_CFA_AARCH64_negate_ra_state on arm64: it changes no row here (return addresses signed
 * by pointer authentication are stripped by the unwinder, bpf/arch/arm64.h), only counted. The
 * remember_state stack is heap-allocated, grows on demand and is capped at
 * CFI_REMEMBER_MAX entries (deeper nesting fails the FDE with -E2BIG).
 *
 * cfi__to_unwind_rule() never guesses: anything eBPF cannot evaluate exactly becomes
 * UNWIND_RULE_UNSUPPORTED (or an undefined rbp rule, counted).
 */
#ifndef STACKSCOPE_CFI_H
#define STACKSCOPE_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "formats/eh_frame.h"

#define CFI_REG_CNT 32
#define CFI_REMEMBER_MAX 4096

enum cfi_reg_kind {
	CFI_REG_UNSPEC = 0, /* no rule given: callee-saved registers keep their value */
	CFI_REG_UNDEFINED,
	CFI_REG_SAME,
	CFI_REG_OFFSET,     /* saved at CFA + off */
	CFI_REG_VAL_OFFSET, /* value is CFA + off */
	CFI_REG_REGISTER,   /* value is in register `reg` */
	CFI_REG_EXPR,       /* saved at the address computed by expr */
	CFI_REG_VAL_EXPR,   /* value computed by expr */
};

struct cfi_reg_rule {
	uint8_t kind; /* enum cfi_reg_kind */
	uint16_t reg;
	uint32_t expr_sz;
	int64_t off;
	const uint8_t *expr; /* DWARF expression bytes, inside the CFI section */
};

enum cfi_cfa_kind {
	CFI_CFA_UNSET = 0,
	CFI_CFA_REG,  /* CFA = reg + off */
	CFI_CFA_EXPR, /* CFA = value of expr */
};

struct cfi_cfa {
	uint8_t kind; /* enum cfi_cfa_kind */
	uint16_t reg; /* DWARF number, saturated at 0xffff */
	uint32_t expr_sz;
	int64_t off;
	const uint8_t *expr;
};

/* The rules in force at one code location. */
struct cfi_state {
	struct cfi_cfa cfa;
	struct cfi_reg_rule regs[CFI_REG_CNT];
	uint64_t args_size; /* last DW_CFA_GNU_args_size (bytes of outgoing arguments pushed) */
};

struct cfi_stats {
	size_t insn_cnt;          /* instructions executed */
	size_t args_size_cnt;     /* DW_CFA_GNU_args_size seen */
	size_t untracked_reg_cnt; /* rules for registers >= CFI_REG_CNT (dropped) */
	size_t max_depth;         /* deepest remember_state nesting */
	size_t negate_ra_cnt;     /* 0x2d: DW_CFA_AARCH64_negate_ra_state (pointer auth) */
};

struct cfi_interp;

/* NULL with errno = ENOMEM. */
struct cfi_interp *cfi_interp__new(void);
void cfi_interp__free(struct cfi_interp *ci);

/* Statistics accumulated over all runs; borrowed, valid until cfi_interp__free(). */
const struct cfi_stats *cfi_interp__stats(const struct cfi_interp *ci);

/* Called per row; the state is borrowed for the call. Nonzero stops the run. */
typedef int (*cfi_row_fn)(void *ctx, uint64_t addr, const struct cfi_state *st);

/* Interpret fde (with its CIE) and emit its rows. `sec` is the section the FDE came from (for
 * DW_CFA_set_loc operands). Returns 0, fn's nonzero result, -EINVAL (malformed or unknown
 * instruction, location moving backwards), -E2BIG (remember_state deeper than
 * CFI_REMEMBER_MAX) or -ENOMEM. Rows already emitted when an error occurs must be dropped by
 * the caller.
 */
int cfi_interp__run(struct cfi_interp *ci, const struct cfi_section *sec, const struct cfi_fde *fde,
		    cfi_row_fn fn, void *ctx);

/* Why a conversion lost information (bits or-ed into *lost). */
enum cfi_lost {
	CFI_LOST_RBP = 1 << 0, /* rbp saved in a way the rule cannot express: set UNDEFINED */
};

/* Convert the state of a row into an unwind rule (x86-64 semantics, see bpf/abi.h):
 * - CIE 'S' (signal trampoline) -> SIGNAL;
 * - return address undefined -> STOP (outermost frame, by DWARF convention);
 * - return address anywhere but CFA-8, or an unspecified one -> UNSUPPORTED;
 * - CFA = reg + off for any GPR -> CFA (cfa_reg other than rsp/rbp is only usable where
 *   that register is known: the first frame, or after a signal frame);
 * - CFA = GCC's PLT expression -> PLT with cfa_off = the DW_OP_lit threshold (11 or 10);
 * - CFA = DW_OP_breg(N) off [; DW_OP_deref [; DW_OP_plus_uconst k]] -> CFA or CFA_DEREF;
 * - any other CFA -> UNSUPPORTED.
 * Fields a kind does not use are zero, so equal behaviour means equal bytes.
 */
void cfi__to_unwind_rule(const struct cfi_state *st, const struct cfi_cie *cie,
			 struct unwind_rule *out, unsigned int *lost);

/* The same for arm64 (AArch64 DWARF numbering: x29 frame pointer, x30 link register = the
 * CIE's return column, 31 sp; bpf/abi.h enum unwind_ra_rule):
 * - CIE 'S' -> SIGNAL; return address undefined -> STOP;
 * - x30 saved at CFA + off -> ra_rule CFA_OFF with ra_off; x30 unspecified or same value ->
 *   LINK_REG (the return address is still in x30); any other rule or return column ->
 *   UNSUPPORTED;
 * - CFA = reg + off -> CFA (cfa_reg in AArch64 numbering); a CFA expression -> UNSUPPORTED;
 * - x29 as rbp on x86-64 (rbp_rule, rbp_off).
 */
void cfi__to_unwind_rule_arm64(const struct cfi_state *st, const struct cfi_cie *cie,
			       struct unwind_rule *out, unsigned int *lost);

/* The frame-pointer part of a rule (rbp_rule, rbp_off) from the rule of register fp_reg
 * (x86-64 rbp, arm64 x29); sets CFI_LOST_RBP in *lost when it cannot be expressed.
 */
void cfi__fp_rule(const struct cfi_reg_rule *fp, uint8_t fp_reg, struct unwind_rule *out,
		  unsigned int *lost);

/* Recognise GCC's PLT CFA expression; returns its threshold (11 or 10) or 0. */
int cfi__match_plt_expr(const uint8_t *expr, size_t sz);

#endif
