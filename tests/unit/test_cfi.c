/* Tests of src/unwind: the CFI reader (eh_frame.c), the interpreter and rule conversion
 * (cfi.c) and the per-file table (unwind_table.c).
 *
 * Hand-made .eh_frame/.debug_frame byte buffers check single features (remember/restore
 * depth, PLT and deref expressions, GNU_args_size, encodings, corrupt input). The fixtures
 * built by tests/data/cfi.mk and the system libc are compared with
 * `readelf --debug-dump=frames-interp`: at every address where either readelf's or our
 * table changes, the rule must be what readelf's CFA / rbp / ra columns imply.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/elf_file.h"
#include "test.h"
#include "unwind/cfi.h"
#include "formats/eh_frame.h"
#include "unwind/unwind_table.h"

/* ---- building CFI bytes by hand ---- */

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (!n)
		return;
	REQUIRE(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_le(struct buf *b, uint64_t v, unsigned int n)
{
	uint8_t t[8];
	unsigned int i;

	for (i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	put(b, t, n);
}

static void patch_le32(struct buf *b, size_t at, uint32_t v)
{
	b->b[at] = (uint8_t)v;
	b->b[at + 1] = (uint8_t)(v >> 8);
	b->b[at + 2] = (uint8_t)(v >> 16);
	b->b[at + 3] = (uint8_t)(v >> 24);
}

/* .eh_frame CIE "zR" with absolute udata8 FDE addresses (or aug as given) and the usual
 * x86-64 initial rules: CFA = rsp+8, ra at CFA-8. Returns its offset.
 */
static size_t put_cie_aug(struct buf *b, const char *aug, const uint8_t *aug_data,
			  size_t aug_data_sz)
{
	static const uint8_t init[] = { 0x0c, 7, 8, 0x90, 1 }; /* def_cfa rsp 8; offset r16 1 */
	size_t at = b->n;

	put_le(b, 0, 4); /* length, patched */
	put_le(b, 0, 4); /* CIE id */
	put_le(b, 1, 1); /* version */
	put(b, aug, strlen(aug) + 1);
	put_le(b, 1, 1);    /* code align */
	put_le(b, 0x78, 1); /* data align -8 */
	put_le(b, 16, 1);   /* ra column */
	if (aug[0] == 'z') {
		put_le(b, aug_data_sz, 1);
		put(b, aug_data, aug_data_sz);
	}
	put(b, init, sizeof(init));
	patch_le32(b, at, (uint32_t)(b->n - at - 4));
	return at;
}

static size_t put_cie(struct buf *b)
{
	static const uint8_t enc[] = { DW_EH_PE_udata8 };

	return put_cie_aug(b, "zR", enc, 1);
}

static void put_fde(struct buf *b, size_t cie, uint64_t begin, uint64_t len, const uint8_t *ins,
		    size_t ins_sz)
{
	size_t at = b->n;

	put_le(b, 0, 4);
	put_le(b, b->n - cie, 4); /* CIE pointer: distance back from this field */
	put_le(b, begin, 8);
	put_le(b, len, 8);
	put_le(b, 0, 1); /* augmentation data length */
	put(b, ins, ins_sz);
	patch_le32(b, at, (uint32_t)(b->n - at - 4));
}

static struct unwind_table *table_of(const struct buf *b, enum cfi_section_kind kind)
{
	struct cfi_section sec = { .data = b->b, .size = b->n, .vaddr = 0x100000, .kind = kind };
	struct unwind_table *t = NULL;
	int err = unwind_table__from_sections(&sec, 1, NULL, &t);

	CHECK_EQ_INT(err, 0);
	return t;
}

static const struct unwind_rule *rule_at(const struct unwind_table *t, uint64_t addr)
{
	const struct unwind_row *r = unwind_table__find(t, addr);

	return r ? &r->rule : NULL;
}

#define CHECK_CFA(t, addr, reg, off)                             \
	do {                                                     \
		const struct unwind_rule *r_ = rule_at(t, addr); \
		REQUIRE(r_);                                     \
		CHECK_EQ_INT(r_->kind, UNWIND_RULE_CFA);         \
		CHECK_EQ_INT(r_->cfa_reg, reg);                  \
		CHECK_EQ_INT(r_->cfa_off, off);                  \
	} while (0)

#define CHECK_KIND(t, addr, k)                                   \
	do {                                                     \
		const struct unwind_rule *r_ = rule_at(t, addr); \
		REQUIRE(r_);                                     \
		CHECK_EQ_INT(r_->kind, k);                       \
	} while (0)

/* ---- byte-buffer tests ---- */

TEST(basic_rows_and_gaps)
{
	/* push rbp; mov rsp,rbp; ...; pop rbp */
	static const uint8_t f1[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x50, 0x0c, 7, 8 };
	static const uint8_t f2[] = { 0 };
	struct buf b = { 0 };
	struct unwind_table *t;
	const struct unwind_row *rows;
	size_t cie = put_cie(&b), n;

	put_fde(&b, cie, 0x1000, 0x40, f1, sizeof(f1));
	put_fde(&b, cie, 0x1040, 0x10, f2, sizeof(f2)); /* adjacent, same rule as f1's end */
	put_fde(&b, cie, 0x1100, 0x10, f2, sizeof(f2)); /* after a gap */
	put_le(&b, 0, 4);                               /* terminator */
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK(rule_at(t, 0xfff) == NULL);
	CHECK_CFA(t, 0x1000, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x1000)->rbp_rule, UNWIND_RBP_SAME);
	CHECK_CFA(t, 0x1001, DWARF_RSP, 16);
	CHECK_EQ_INT(rule_at(t, 0x1001)->rbp_rule, UNWIND_RBP_CFA_OFF);
	CHECK_EQ_INT(rule_at(t, 0x1001)->rbp_off, -16);
	CHECK_CFA(t, 0x1004, DWARF_RBP, 16);
	CHECK_CFA(t, 0x1014, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x1014)->rbp_rule, UNWIND_RBP_CFA_OFF);
	CHECK_CFA(t, 0x1045, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x1045)->rbp_rule, UNWIND_RBP_SAME);
	CHECK_KIND(t, 0x1050, UNWIND_RULE_INVALID);
	CHECK_KIND(t, 0x10ff, UNWIND_RULE_INVALID);
	CHECK_CFA(t, 0x1100, DWARF_RSP, 8);
	CHECK_KIND(t, 0x1110, UNWIND_RULE_INVALID);
	rows = unwind_table__rows(t, &n);
	/* 0x1000 0x1001 0x1004 0x1014 0x1040 0x1050(INVALID) 0x1100 0x1110(INVALID) */
	CHECK_EQ_INT(n, 8);
	for (size_t i = 1; i < n; i++) {
		CHECK(rows[i].addr > rows[i - 1].addr);
		CHECK(memcmp(&rows[i].rule, &rows[i - 1].rule, sizeof(rows[i].rule)));
	}
	CHECK_EQ_INT(unwind_table__stats(t)->fde_cnt, 3);
	CHECK_EQ_INT(unwind_table__stats(t)->cie_cnt, 1);
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 0);
	unwind_table__free(t);
}

/* The dynamic loader's lazy-binding trampoline (_dl_runtime_resolve_xsavec): entered with
 * two words pushed by the PLT (CFA = rsp + 24), push rbx, mov rsp,rbx, then the CFA stays in
 * rbx while rsp is realigned. Every row says where the caller's rbx is.
 */
TEST(rbx_cfa_and_rbx_rules)
{
	static const uint8_t f1[] = { 0x0e, 24, 0x41, 0x0e, 32, 0x83, 4, 0x43, 0x0d, 3 };
	static const uint8_t f2[] = { 0 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie(&b);

	put_fde(&b, cie, 0x2000, 0x40, f1, sizeof(f1));
	put_fde(&b, cie, 0x2100, 0x10, f2, sizeof(f2));
	put_le(&b, 0, 4);
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_CFA(t, 0x2000, DWARF_RSP, 24);
	CHECK_EQ_INT(rule_at(t, 0x2000)->rbx_rule, UNWIND_RBX_SAME); /* not saved yet */
	CHECK_CFA(t, 0x2001, DWARF_RSP, 32);
	CHECK_EQ_INT(rule_at(t, 0x2001)->rbx_rule, UNWIND_RBX_CFA_OFF);
	CHECK_EQ_INT(rule_at(t, 0x2001)->rbx_off, -32);
	CHECK_CFA(t, 0x2004, DWARF_RBX, 32);
	CHECK_EQ_INT(rule_at(t, 0x2004)->rbx_rule, UNWIND_RBX_CFA_OFF);
	CHECK_EQ_INT(rule_at(t, 0x2004)->rbx_off, -32);
	CHECK_CFA(t, 0x2100, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x2100)->rbx_rule, UNWIND_RBX_SAME);
	unwind_table__free(t);
}

/* glibc's __vfork: pop %rdi (the return address) around the syscall, push %rdi; ret. */
TEST(return_address_in_a_register)
{
	static const uint8_t f1[] = { 0x41, 0x0e, 0, 0x09, 16, 5, 0x48, 0x0e, 8 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie(&b);

	put_fde(&b, cie, 0x3000, 0x20, f1, sizeof(f1));
	put_le(&b, 0, 4);
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_CFA(t, 0x3000, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x3000)->ra_rule, UNWIND_RA_CFA_MINUS_8);
	CHECK_CFA(t, 0x3001, DWARF_RSP, 0);
	CHECK_EQ_INT(rule_at(t, 0x3001)->ra_rule, UNWIND_RA_REG);
	CHECK_EQ_INT(rule_at(t, 0x3001)->ra_off, DWARF_RDI);
	CHECK_CFA(t, 0x3009, DWARF_RSP, 8);
	CHECK_EQ_INT(rule_at(t, 0x3009)->ra_rule, UNWIND_RA_REG);
	unwind_table__free(t);
}

TEST(remember_restore_deep)
{
	/* Five nested remember_state, each changing the CFA offset, then unwinding them. */
	static const uint8_t f[] = {
		0x41, 0x0e, 16, 0x0a, /* 1: rsp+16, push */
		0x41, 0x0e, 24, 0x0a, /* 2: rsp+24, push */
		0x41, 0x0e, 32, 0x0a, /* 3: rsp+32, push */
		0x41, 0x0e, 40, 0x0a, /* 4: rsp+40, push */
		0x41, 0x0e, 48, 0x0a, /* 5: rsp+48, push */
		0x41, 0x0e, 56,       /* 6: rsp+56 */
		0x41, 0x0b,           /* 7: -> 48 */
		0x41, 0x0b,           /* 8: -> 40 */
		0x41, 0x0b,           /* 9: -> 32 */
		0x41, 0x0b,           /* a: -> 24 */
		0x41, 0x0b,           /* b: -> 16 */
	};
	static const uint8_t underflow[] = { 0x41, 0x0b };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie(&b);
	static const int want[] = { 8, 16, 24, 32, 40, 48, 56, 48, 40, 32, 24, 16 };

	put_fde(&b, cie, 0x2000, 0x20, f, sizeof(f));
	put_fde(&b, cie, 0x3000, 0x20, underflow, sizeof(underflow));
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_CFA(t, 0x2000 + i, DWARF_RSP, want[i]);
	CHECK_EQ_INT(unwind_table__stats(t)->max_remember_depth, 5);
	/* restore_state with an empty stack: the FDE is dropped and counted. */
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 1);
	CHECK_KIND(t, 0x3000, UNWIND_RULE_INVALID);
	unwind_table__free(t);
}

TEST(remember_depth_cap)
{
	static uint8_t f[CFI_REMEMBER_MAX + 8];
	struct buf *b = calloc(1, sizeof(*b) + sizeof(f));
	struct cfi_section sec;
	struct unwind_table *t = NULL;
	uint8_t *big;
	size_t n = 0, cie;

	REQUIRE(b);
	/* Too deep for the cap: the FDE is bad, the build still succeeds. */
	memset(f, 0x0a, sizeof(f));
	big = malloc(sizeof(f) + 256);
	REQUIRE(big);
	cie = put_cie(b);
	memcpy(big, b->b, b->n);
	n = b->n;
	{
		uint32_t len = (uint32_t)(4 + 8 + 8 + 1 + sizeof(f));
		uint32_t ptr = (uint32_t)(n + 4 - cie);
		uint64_t begin = 0x5000, range = 0x10;

		memcpy(big + n, &len, 4);
		memcpy(big + n + 4, &ptr, 4);
		memcpy(big + n + 8, &begin, 8);
		memcpy(big + n + 16, &range, 8);
		big[n + 24] = 0;
		memcpy(big + n + 25, f, sizeof(f));
		n += 25 + sizeof(f);
	}
	sec = (struct cfi_section){ .data = big, .size = n, .kind = CFI_SECTION_EH_FRAME };
	CHECK_EQ_INT(unwind_table__from_sections(&sec, 1, NULL, &t), 0);
	REQUIRE(t);
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 1);
	CHECK_EQ_INT(unwind_table__stats(t)->row_cnt, 0);
	unwind_table__free(t);
	free(big);
	free(b);
}

TEST(plt_expression)
{
	/* .plt: def_cfa_offset 16 at +6, 24 at +0xb, then the GCC expression at +0x10. */
	static const uint8_t plt[] = { 0x0e, 16, 0x46, 0x0e, 24,   0x4a, 0x0f, 11,   0x77, 8,
				       0x80, 0,  0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	static const uint8_t plt10[] = { 0x0f, 11,   0x77, 8,    0x80, 0,   0x3f,
					 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22 };
	static const uint8_t not_plt[] = { 0x0f, 11,   0x77, 8,    0x80, 0,   0x3f,
					   0x1a, 0x3c, 0x2a, 0x33, 0x24, 0x22 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie(&b);

	put_fde(&b, cie, 0x1020, 0x40, plt, sizeof(plt));
	put_fde(&b, cie, 0x1080, 0x20, plt10, sizeof(plt10));
	put_fde(&b, cie, 0x10c0, 0x20, not_plt, sizeof(not_plt));
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_CFA(t, 0x1020, DWARF_RSP, 16);
	CHECK_CFA(t, 0x1026, DWARF_RSP, 24);
	CHECK_KIND(t, 0x1030, UNWIND_RULE_PLT);
	CHECK_EQ_INT(rule_at(t, 0x1030)->cfa_off, 11);
	CHECK_KIND(t, 0x105f, UNWIND_RULE_PLT);
	CHECK_KIND(t, 0x1080, UNWIND_RULE_PLT);
	CHECK_EQ_INT(rule_at(t, 0x1080)->cfa_off, 10);
	CHECK_KIND(t, 0x10c0, UNWIND_RULE_UNSUPPORTED);
	CHECK_EQ_INT(cfi__match_plt_expr(plt + 8, 11), 11);
	CHECK_EQ_INT(cfi__match_plt_expr(plt + 8, 10), 0);
	unwind_table__free(t);
}

TEST(deref_expressions)
{
	/* GCC stack realignment: CFA = *(rbp - 8); rbp saved at [rbp] (UNWIND_RBP_RBP_OFF). */
	static const uint8_t realign[] = { 0x41, 0x0f, 3, 0x76, 0x78, 0x06, 0x10, 6, 2, 0x76, 0 };
	/* CFA = *(rsp + 16) + 8 (OpenSSL style). */
	static const uint8_t plus[] = { 0x0f, 5, 0x77, 16, 0x06, 0x23, 8 };
	/* CFA = rax + 24 through an expression without deref. */
	static const uint8_t breg[] = { 0x0f, 2, 0x70, 24 };
	/* breg; deref; deref: not a supported shape. */
	static const uint8_t twice[] = { 0x0f, 4, 0x77, 16, 0x06, 0x06 };
	/* Truncated expression block: bad FDE. */
	static const uint8_t trunc[] = { 0x0f, 9, 0x77, 16 };
	struct buf b = { 0 };
	struct unwind_table *t;
	const struct unwind_rule *r;
	size_t cie = put_cie(&b);

	put_fde(&b, cie, 0x1000, 0x10, realign, sizeof(realign));
	put_fde(&b, cie, 0x1010, 0x10, plus, sizeof(plus));
	put_fde(&b, cie, 0x1020, 0x10, breg, sizeof(breg));
	put_fde(&b, cie, 0x1030, 0x10, twice, sizeof(twice));
	put_fde(&b, cie, 0x1040, 0x10, trunc, sizeof(trunc));
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	r = rule_at(t, 0x1001);
	REQUIRE(r);
	CHECK_EQ_INT(r->kind, UNWIND_RULE_CFA_DEREF);
	CHECK_EQ_INT(r->cfa_reg, DWARF_RBP);
	CHECK_EQ_INT(r->cfa_off, -8);
	CHECK_EQ_INT(r->deref_add, 0);
	CHECK_EQ_INT(r->rbp_rule, UNWIND_RBP_RBP_OFF);
	CHECK_EQ_INT(r->rbp_off, 0);
	r = rule_at(t, 0x1010);
	REQUIRE(r);
	CHECK_EQ_INT(r->kind, UNWIND_RULE_CFA_DEREF);
	CHECK_EQ_INT(r->cfa_reg, DWARF_RSP);
	CHECK_EQ_INT(r->cfa_off, 16);
	CHECK_EQ_INT(r->deref_add, 8);
	CHECK_CFA(t, 0x1020, DWARF_RAX, 24);
	CHECK_KIND(t, 0x1030, UNWIND_RULE_UNSUPPORTED);
	CHECK_KIND(t, 0x1040, UNWIND_RULE_INVALID);
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 1);
	unwind_table__free(t);
}

struct args_probe {
	uint64_t args[8];
	int n;
};

static int probe_row(void *ctx, uint64_t addr, const struct cfi_state *st)
{
	struct args_probe *p = ctx;

	(void)addr;
	if (p->n < 8)
		p->args[p->n++] = st->args_size;
	return 0;
}

static int probe_fde(void *ctx, const struct cfi_fde *fde)
{
	struct cfi_interp *ci = cfi_interp__new();
	struct cfi_section sec = { 0 };
	int err;

	REQUIRE(ci);
	err = cfi_interp__run(ci, &sec, fde, probe_row, ctx);
	cfi_interp__free(ci);
	return err;
}

TEST(gnu_args_size_and_misc_ops)
{
	/* args_size 16, advance, args_size 0, advance; plus nops, restore, same_value,
	 * negative_offset_extended, val_offset, register rules on tracked/untracked registers.
	 */
	static const uint8_t f[] = { 0x2e, 16,          0x00, 0x41, 0x2e, 0,    0x2f, 6,    2, 0x41,
				     0x08, 6,           0x41, 0x14, 6,    2,    0x41, 0x09, 6, 3,
				     0x41, 0x90 | 0x20, 1,    0x41, 0xc6, 0x41, 0x07, 16 };
	struct buf b = { 0 };
	struct unwind_table *t;
	struct args_probe probe = { 0 };
	struct eh_frame_stats es = { 0 };
	struct cfi_section sec;
	size_t cie = put_cie(&b);

	put_fde(&b, cie, 0x1000, 0x10, f, sizeof(f));
	sec = (struct cfi_section){ .data = b.b, .size = b.n, .kind = CFI_SECTION_EH_FRAME };
	CHECK_EQ_INT(eh_frame__walk(&sec, probe_fde, &probe, &es), 0);
	CHECK(probe.n >= 2);
	CHECK_EQ_U64(probe.args[0], 16);
	CHECK_EQ_U64(probe.args[1], 0);

	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_EQ_INT(unwind_table__stats(t)->args_size_cnt, 2);
	CHECK_CFA(t, 0x1000, DWARF_RSP, 8);
	/* negative_offset_extended rbp 2: saved at CFA + 16 */
	CHECK_EQ_INT(rule_at(t, 0x1001)->rbp_rule, UNWIND_RBP_CFA_OFF);
	CHECK_EQ_INT(rule_at(t, 0x1001)->rbp_off, 16);
	CHECK_EQ_INT(rule_at(t, 0x1002)->rbp_rule, UNWIND_RBP_SAME);
	CHECK_EQ_INT(rule_at(t, 0x1003)->rbp_rule, UNWIND_RBP_UNDEFINED); /* val_offset */
	CHECK_EQ_INT(rule_at(t, 0x1004)->rbp_rule, UNWIND_RBP_UNDEFINED); /* in rbx */
	CHECK_CFA(t, 0x1005, DWARF_RSP, 8); /* offset on xmm15 (r32): dropped */
	CHECK_EQ_INT(rule_at(t, 0x1006)->rbp_rule, UNWIND_RBP_SAME); /* restore -> CIE rule */
	CHECK_KIND(t, 0x1007, UNWIND_RULE_STOP);                     /* ra undefined */
	unwind_table__free(t);
}

TEST(ra_rules)
{
	static const uint8_t ra_reg[] = { 0x09, 16, 5 };  /* ra in rdi (vfork) */
	static const uint8_t ra_off[] = { 0x80 | 16, 2 }; /* ra at CFA-16 */
	static const uint8_t cfa_rip[] = { 0x0c, 16, 8 }; /* CFA from rip */
	static const uint8_t big_off[] = { 0x0e, 0x80, 0x80, 0x80, 0x80, 0x10 }; /* 2^32 */
	static const uint8_t sig_aug[] = { DW_EH_PE_udata8 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie(&b), scie;

	put_fde(&b, cie, 0x1000, 0x10, ra_reg, sizeof(ra_reg));
	put_fde(&b, cie, 0x1010, 0x10, ra_off, sizeof(ra_off));
	put_fde(&b, cie, 0x1020, 0x10, cfa_rip, sizeof(cfa_rip));
	put_fde(&b, cie, 0x1030, 0x10, big_off, sizeof(big_off));
	scie = put_cie_aug(&b, "zRS", sig_aug, 1);
	put_fde(&b, scie, 0x1040, 0x10, NULL, 0);
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_CFA(t, 0x1000, DWARF_RSP, 8); /* ra in rdi: from the interrupted frame's rdi */
	CHECK_EQ_INT(rule_at(t, 0x1000)->ra_rule, UNWIND_RA_REG);
	CHECK_EQ_INT(rule_at(t, 0x1000)->ra_off, DWARF_RDI);
	CHECK_KIND(t, 0x1010, UNWIND_RULE_UNSUPPORTED);
	CHECK_KIND(t, 0x1020, UNWIND_RULE_UNSUPPORTED);
	CHECK_KIND(t, 0x1030, UNWIND_RULE_UNSUPPORTED);
	CHECK_KIND(t, 0x1040, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, 0x1050, UNWIND_RULE_INVALID);
	CHECK_EQ_INT(unwind_table__stats(t)->signal_row_cnt, 1);
	unwind_table__free(t);
}

TEST(debug_frame_formats)
{
	/* 32-bit DWARF v4 CIE, then a 64-bit DWARF v3 CIE, each with one FDE. */
	static const uint8_t init[] = { 0x0c, 7, 8, 0x90, 1 };
	static const uint8_t ins[] = { 0x41, 0x0e, 16 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie32, cie64, at;

	cie32 = b.n;
	put_le(&b, 0, 4);
	put_le(&b, 0xffffffff, 4);
	put_le(&b, 4, 1);
	put_le(&b, 0, 1); /* "" */
	put_le(&b, 8, 1); /* address size */
	put_le(&b, 0, 1); /* segment selector size */
	put_le(&b, 1, 1);
	put_le(&b, 0x78, 1);
	put_le(&b, 16, 1);
	put(&b, init, sizeof(init));
	patch_le32(&b, cie32, (uint32_t)(b.n - cie32 - 4));
	at = b.n;
	put_le(&b, 0, 4);
	put_le(&b, cie32, 4);
	put_le(&b, 0x4000, 8);
	put_le(&b, 0x10, 8);
	put(&b, ins, sizeof(ins));
	patch_le32(&b, at, (uint32_t)(b.n - at - 4));

	cie64 = b.n;
	put_le(&b, 0xffffffff, 4);
	at = b.n;
	put_le(&b, 0, 8);
	put_le(&b, ~(uint64_t)0, 8);
	put_le(&b, 3, 1);
	put_le(&b, 0, 1);
	put_le(&b, 1, 1);
	put_le(&b, 0x78, 1);
	put_le(&b, 16, 1);
	put(&b, init, sizeof(init));
	put_le(&b, 0, 0);
	{
		uint64_t len = b.n - at - 8;

		memcpy(b.b + at, &len, 8);
	}
	put_le(&b, 0xffffffff, 4);
	at = b.n;
	put_le(&b, 0, 8);
	put_le(&b, cie64, 8);
	put_le(&b, 0x4010, 8);
	put_le(&b, 0x10, 8);
	put(&b, ins, sizeof(ins));
	{
		uint64_t len = b.n - at - 8;

		memcpy(b.b + at, &len, 8);
	}
	t = table_of(&b, CFI_SECTION_DEBUG_FRAME);
	REQUIRE(t);
	CHECK_EQ_INT(unwind_table__stats(t)->cie_cnt, 2);
	CHECK_EQ_INT(unwind_table__stats(t)->fde_cnt, 2);
	CHECK_CFA(t, 0x4000, DWARF_RSP, 8);
	CHECK_CFA(t, 0x4001, DWARF_RSP, 16);
	CHECK_CFA(t, 0x4010, DWARF_RSP, 8);
	CHECK_CFA(t, 0x4011, DWARF_RSP, 16);
	CHECK_KIND(t, 0x4020, UNWIND_RULE_INVALID);
	unwind_table__free(t);
}

TEST(pointer_encodings)
{
	struct cfi_section sec = { .vaddr = 0x1000,
				   .text_vaddr = 0x400000,
				   .data_vaddr = 0x600000 };
	static const uint8_t d[] = { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
	const uint8_t *p, *end = d + sizeof(d);
	uint64_t v;

	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_udata2, 0, &sec, 0, 8, &v), 0);
	CHECK_EQ_U64(v, 0xfffe);
	CHECK(p == d + 2);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_sdata2, 0, &sec, 0, 8, &v), 0);
	CHECK_EQ_U64(v, (uint64_t)-2);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_sdata4 | DW_EH_PE_pcrel, 0x2000, &sec,
					    0, 8, &v),
		     0);
	CHECK_EQ_U64(v, 0x1ffe);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_udata4 | DW_EH_PE_textrel, 0, &sec, 0,
					    8, &v),
		     0);
	CHECK_EQ_U64(v, 0x400000 + 0xfffffffeull);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_sdata8 | DW_EH_PE_datarel, 0, &sec, 0,
					    8, &v),
		     0);
	CHECK_EQ_U64(v, 0x600000 - 2);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_udata8 | DW_EH_PE_funcrel, 0, &sec,
					    0x10, 8, &v),
		     0);
	CHECK_EQ_U64(v, 0x10 - 2);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_uleb128, 0, &sec, 0, 8, &v), 0);
	CHECK_EQ_U64(v, 0x7ffffffffffffffeull);
	CHECK(p == end);
	p = d + 1;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_sleb128, 0, &sec, 0, 8, &v), 0);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_absptr, 0, &sec, 0, 4, &v), 0);
	CHECK_EQ_U64(v, 0xfffffffe);
	/* aligned: from vaddr 0x1001, skip 7 bytes to 0x1008; 9 bytes left is too short. */
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_aligned, 0x1001, &sec, 0, 8, &v),
		     -EINVAL);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_aligned, 0x1007, &sec, 0, 8, &v), 0);
	CHECK(p == end);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end,
					    DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0,
					    &sec, 0, 8, &v),
		     -EOPNOTSUPP);
	CHECK(p == d + 4);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_omit, 0, &sec, 0, 8, &v), -ENOENT);
	p = d;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, 0x07, 0, &sec, 0, 8, &v), -EINVAL);
	p = d + 6;
	CHECK_EQ_INT(eh_frame__read_pointer(&p, end, DW_EH_PE_udata8, 0, &sec, 0, 8, &v), -EINVAL);
	CHECK(p == d + 6);
}

TEST(eh_frame_hdr)
{
	/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
	static const uint8_t hdr[] = { 1, 0x1b, 0x03, 0x3b, 0x1c, 0, 0, 0, 5, 0, 0, 0 };
	uint64_t ef, cnt;

	CHECK_EQ_INT(eh_frame_hdr__parse(hdr, sizeof(hdr), 0x2000, &ef, &cnt), 0);
	CHECK_EQ_U64(ef, 0x2000 + 4 + 0x1c);
	CHECK_EQ_U64(cnt, 5);
	CHECK_EQ_INT(eh_frame_hdr__parse(hdr, 6, 0x2000, &ef, &cnt), -EINVAL);
}

TEST(personality_and_lsda)
{
	/* "zPLR": indirect pcrel personality, LSDA pcrel sdata4, FDE pcrel sdata4. */
	static const uint8_t aug[] = { 0x9b, 0x10, 0, 0, 0, 0x1b, 0x1b };
	static const uint8_t ins[] = { 0x41, 0x0e, 16 };
	struct buf b = { 0 };
	struct unwind_table *t;
	size_t cie = put_cie_aug(&b, "zPLR", aug, sizeof(aug)), at;
	struct cfi_section sec;

	at = b.n;
	put_le(&b, 0, 4);
	put_le(&b, b.n - cie, 4);
	/* pc_begin pcrel: section vaddr 0x100000; field at offset at+8 */
	put_le(&b, (uint32_t)(0x3000 - (0x100000 + (at + 8))), 4);
	put_le(&b, 0x20, 4);
	put_le(&b, 4, 1); /* LSDA pointer */
	put_le(&b, 0x1234, 4);
	put(&b, ins, sizeof(ins));
	patch_le32(&b, at, (uint32_t)(b.n - at - 4));
	sec = (struct cfi_section){
		.data = b.b, .size = b.n, .vaddr = 0x100000, .kind = CFI_SECTION_EH_FRAME
	};
	REQUIRE(unwind_table__from_sections(&sec, 1, NULL, &t) == 0);
	CHECK_CFA(t, 0x3000, DWARF_RSP, 8);
	CHECK_CFA(t, 0x3001, DWARF_RSP, 16);
	CHECK_KIND(t, 0x3020, UNWIND_RULE_INVALID);
	unwind_table__free(t);
}

TEST(overlap_priority)
{
	static const uint8_t a[] = { 0x41, 0x0e, 16 };
	static const uint8_t c[] = { 0x0e, 32 };
	struct buf b1 = { 0 }, b2 = { 0 };
	struct cfi_section secs[2];
	struct unwind_table *t = NULL;
	size_t cie1 = put_cie(&b1), cie2 = put_cie(&b2);

	put_fde(&b1, cie1, 0x1000, 0x10, a, sizeof(a));
	put_fde(&b2, cie2, 0x1008, 0x10, c, sizeof(c)); /* overlaps the end of a */
	put_fde(&b2, cie2, 0x1000, 0x10, c, sizeof(c)); /* duplicate of a: hidden */
	secs[0] = (struct cfi_section){ .data = b1.b, .size = b1.n, .kind = CFI_SECTION_EH_FRAME };
	secs[1] = (struct cfi_section){ .data = b2.b, .size = b2.n, .kind = CFI_SECTION_EH_FRAME };
	REQUIRE(unwind_table__from_sections(secs, 2, NULL, &t) == 0);
	CHECK_CFA(t, 0x1000, DWARF_RSP, 8);
	CHECK_CFA(t, 0x100f, DWARF_RSP, 16);
	CHECK_CFA(t, 0x1010, DWARF_RSP, 32);
	CHECK_KIND(t, 0x1018, UNWIND_RULE_INVALID);
	CHECK_EQ_INT(unwind_table__stats(t)->overlap_fde_cnt, 2);
	unwind_table__free(t);
}

TEST(corrupt_input)
{
	static const uint8_t ins[] = { 0x41, 0x0e, 16, 0x0a, 0x41, 0x0e, 24, 0x41, 0x0b };
	struct buf b = { 0 };
	struct cfi_section sec;
	struct unwind_table *t = NULL;
	size_t cie = put_cie(&b), good_n, i, k;
	uint8_t *copy;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	for (i = 0; i < 8; i++)
		put_fde(&b, cie, 0x1000 + 0x100 * i, 0x80, ins, sizeof(ins));
	good_n = b.n;

	/* Length running past the end. */
	patch_le32(&b, cie, 0x7fffffff);
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_EQ_INT(unwind_table__stats(t)->truncated_section_cnt, 1);
	CHECK_EQ_INT(unwind_table__stats(t)->row_cnt, 0);
	unwind_table__free(t);

	/* Truncated CIE (length too short for its fields): every FDE is bad, none crash. */
	b.n = 0;
	cie = put_cie(&b);
	patch_le32(&b, cie, 6);
	for (i = 0; i < 3; i++)
		put_fde(&b, 0, 0x1000 + 0x100 * i, 0x80, ins, sizeof(ins));
	sec = (struct cfi_section){ .data = b.b, .size = b.n, .kind = CFI_SECTION_EH_FRAME };
	REQUIRE(unwind_table__from_sections(&sec, 1, NULL, &t) == 0);
	CHECK(unwind_table__stats(t)->bad_cie_cnt + unwind_table__stats(t)->bad_fde_cnt >= 1);
	unwind_table__free(t);

	/* FDE whose CIE pointer points at another FDE / outside the section. */
	b.n = 0;
	cie = put_cie(&b);
	put_fde(&b, cie, 0x1000, 0x80, ins, sizeof(ins));
	put_fde(&b, cie + 0x20, 0x2000, 0x80, ins, sizeof(ins));
	put_fde(&b, b.n + 100, 0x3000, 0x80, ins, sizeof(ins));
	t = table_of(&b, CFI_SECTION_EH_FRAME);
	REQUIRE(t);
	CHECK_EQ_INT(unwind_table__stats(t)->fde_cnt, 1);
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 2);
	unwind_table__free(t);

	/* Random byte flips and truncations of a good section: must not crash (ASan). */
	b.n = 0;
	cie = put_cie(&b);
	for (i = 0; i < 8; i++)
		put_fde(&b, cie, 0x1000 + 0x100 * i, 0x80, ins, sizeof(ins));
	REQUIRE(b.n == good_n);
	for (k = 0; k < 20000; k++) {
		size_t n = good_n;
		int flips;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		if (k & 1)
			n = 1 + rnd % good_n;
		copy = malloc(n); /* exact size: ASan catches any overread */
		REQUIRE(copy);
		memcpy(copy, b.b, n);
		for (flips = 0; flips < 1 + (int)(rnd >> 60); flips++) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			copy[rnd % n] = (uint8_t)(rnd >> 32);
		}
		sec = (struct cfi_section){ .data = copy,
					    .size = n,
					    .kind = (k & 2) ? CFI_SECTION_DEBUG_FRAME
							    : CFI_SECTION_EH_FRAME };
		t = NULL;
		CHECK_EQ_INT(unwind_table__from_sections(&sec, 1, NULL, &t), 0);
		if (t) {
			const struct unwind_row *rows;
			size_t cnt;

			rows = unwind_table__rows(t, &cnt);
			for (i = 1; i < cnt; i++)
				CHECK(rows[i].addr > rows[i - 1].addr);
		}
		unwind_table__free(t);
		free(copy);
	}
	unwind_table__free(NULL);
	cfi_interp__free(NULL);
}

/* ---- comparison with readelf ---- */

/* What readelf's columns say a rule must be. */
struct expect {
	uint64_t addr;
	uint8_t kind;
	uint8_t cfa_reg;
	int32_t cfa_off;
	uint8_t rbp_rule;
	int16_t rbp_off;
	bool cfa_exp;    /* CFA "exp": PLT, CFA_DEREF, CFA (breg) or UNSUPPORTED */
	bool ra_u;       /* ra "u": STOP (undefined) or UNSUPPORTED (never specified) */
	bool rbp_u;      /* rbp "u": SAME (unspecified) or UNDEFINED */
	bool rbp_exp;    /* rbp "exp": an expression (RBP_RBP_OFF when it is "at rbp + off") */
	uint8_t ra_rule; /* arm64: enum unwind_ra_rule ("u": LINK_REG, or STOP) */
	int16_t ra_off;
};

/* The files compared are arm64 ones (AArch64 register names, cfi__to_unwind_rule_arm64):
 * readelf prints "u" for an unspecified and an undefined register alike, so an arm64 ra "u"
 * is the link register (LINK_REG) or the outermost frame (STOP).
 */
static bool cmp_arm64;
static int cmp_ra_col; /* arm64: the return column of the CIE of the rows being read */

struct exp_fde {
	uint64_t begin, end;
	size_t first, cnt; /* in rows */
	int prio;
	size_t seq;
};

struct readelf_dump {
	struct expect *rows;
	size_t cnt, cap;
	struct exp_fde *fdes;
	size_t fde_cnt, fde_cap;
};

static const char *const x86_regs[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi",
					"rbp", "rsp", "r8",  "r9",  "r10", "r11",
					"r12", "r13", "r14", "r15", "rip" };

static int reg_num(const char *s, size_t len)
{
	if (cmp_arm64) {
		char *e;
		long r;

		if (len == 2 && !strncmp(s, "sp", 2))
			return DWARF_ARM64_SP;
		if (len < 2 || len > 3 || s[0] != 'x')
			return -1;
		r = strtol(s + 1, &e, 10);
		return e == s + len && r >= 0 && r <= 30 ? (int)r : -1;
	}
	for (int i = 0; i < 17; i++)
		if (strlen(x86_regs[i]) == len && !strncmp(s, x86_regs[i], len))
			return i;
	return -1;
}

static bool parse_i64(const char *s, long long *out)
{
	char *e;

	errno = 0;
	*out = strtoll(s, &e, 10);
	return !errno && e != s && *e == '\0';
}

/* Turn one readelf row (column values by column name) into the expected rule. */
static void expect_from_cols(struct expect *e, char cols[][16], char vals[][16], int ncol,
			     bool signal)
{
	const char *cfa = NULL, *ra = "u", *rbp = "u";
	long long v;

	memset((uint8_t *)e + sizeof(e->addr), 0, sizeof(*e) - sizeof(e->addr));
	for (int i = 0; i < ncol; i++) {
		if (!strcmp(cols[i], "CFA"))
			cfa = vals[i];
		else if (!strcmp(cols[i], "ra"))
			ra = vals[i];
		else if (!strcmp(cols[i], cmp_arm64 ? "x29" : "rbp"))
			rbp = vals[i];
	}
	if (signal) {
		e->kind = UNWIND_RULE_SIGNAL;
		return;
	}
	if (cmp_arm64 && cmp_ra_col != DWARF_ARM64_X30) { /* glibc's hand-written ra=15 CIE */
		e->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	if (cmp_arm64 && (!strcmp(ra, "u") || !strcmp(ra, "s"))) {
		e->ra_u = ra[0] == 'u';
		e->ra_rule = UNWIND_RA_LINK_REG;
	} else if (cmp_arm64 && ra[0] == 'c' && parse_i64(ra + 1, &v) && v >= INT16_MIN &&
		   v <= INT16_MAX) {
		e->ra_rule = UNWIND_RA_CFA_OFF;
		e->ra_off = (int16_t)v;
	} else if (cmp_arm64) {
		e->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	if (!cmp_arm64 && !strcmp(ra, "u")) {
		e->kind = UNWIND_RULE_STOP;
		e->ra_u = true;
		return;
	}
	if (!cmp_arm64 && ra[0] == 'r' && parse_i64(ra + 1, &v) && v >= 0 && v <= 15) {
		e->ra_rule = UNWIND_RA_REG; /* "r5 (rdi)": glibc's __vfork */
		e->ra_off = (int16_t)v;
		ra = "c-8"; /* and the CFA as usual */
	}
	if ((!cmp_arm64 && strcmp(ra, "c-8")) || !cfa) {
		e->kind = UNWIND_RULE_UNSUPPORTED;
		return;
	}
	if (!strcmp(cfa, "exp")) {
		e->cfa_exp = true;
	} else {
		size_t n = strcspn(cfa, "+-");
		int reg = reg_num(cfa, n);

		if (reg < 0 || reg > (cmp_arm64 ? DWARF_ARM64_SP : 15) || !parse_i64(cfa + n, &v)) {
			e->kind = UNWIND_RULE_UNSUPPORTED;
			return;
		}
		e->kind = UNWIND_RULE_CFA;
		e->cfa_reg = (uint8_t)reg;
		e->cfa_off = (int32_t)v;
	}
	if (!strcmp(rbp, "u")) {
		e->rbp_u = true;
	} else if (!strcmp(rbp, "exp")) {
		e->rbp_exp = true;
	} else if (!strcmp(rbp, "s")) {
		e->rbp_rule = UNWIND_RBP_SAME;
	} else if (rbp[0] == 'c' && parse_i64(rbp + 1, &v) && v >= INT16_MIN && v <= INT16_MAX) {
		e->rbp_rule = UNWIND_RBP_CFA_OFF;
		e->rbp_off = (int16_t)v;
	} else {
		e->rbp_rule = UNWIND_RBP_UNDEFINED;
	}
}

static bool expect_matches(const struct expect *e, const struct unwind_rule *r)
{
	if (cmp_arm64 && e->ra_u && r->kind == UNWIND_RULE_STOP)
		return true;
	if (cmp_arm64 && e->kind != UNWIND_RULE_UNSUPPORTED && e->kind != UNWIND_RULE_SIGNAL &&
	    (r->ra_rule != e->ra_rule ||
	     (e->ra_rule == UNWIND_RA_CFA_OFF && r->ra_off != e->ra_off)))
		return false;
	if (cmp_arm64 && e->cfa_exp) /* no CFA expressions on arm64 */
		return r->kind == UNWIND_RULE_UNSUPPORTED;
	if (e->ra_u && !cmp_arm64)
		return r->kind == UNWIND_RULE_STOP || r->kind == UNWIND_RULE_UNSUPPORTED;
	if (!cmp_arm64 && e->ra_rule == UNWIND_RA_REG &&
	    (e->cfa_exp ? r->kind != UNWIND_RULE_UNSUPPORTED
			: r->ra_rule != UNWIND_RA_REG || r->ra_off != e->ra_off))
		return false;
	if (e->cfa_exp) {
		if (r->kind != UNWIND_RULE_PLT && r->kind != UNWIND_RULE_CFA_DEREF &&
		    r->kind != UNWIND_RULE_CFA && r->kind != UNWIND_RULE_UNSUPPORTED)
			return false;
		if (r->kind == UNWIND_RULE_UNSUPPORTED || r->kind == UNWIND_RULE_PLT)
			return true;
	} else {
		if (r->kind != e->kind)
			return false;
		if (e->kind != UNWIND_RULE_CFA)
			return true;
		if (r->cfa_reg != e->cfa_reg || r->cfa_off != e->cfa_off)
			return false;
	}
	if (e->rbp_u)
		return r->rbp_rule == UNWIND_RBP_SAME || r->rbp_rule == UNWIND_RBP_UNDEFINED;
	if (e->rbp_exp) /* an expression: ours if it is "at rbp + off", else given up */
		return r->rbp_rule == UNWIND_RBP_RBP_OFF || r->rbp_rule == UNWIND_RBP_UNDEFINED;
	return r->rbp_rule == e->rbp_rule &&
	       (e->rbp_rule != UNWIND_RBP_CFA_OFF || r->rbp_off == e->rbp_off);
}

static void dump_push(struct readelf_dump *d, const struct expect *e)
{
	if (d->cnt == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 4096;
		d->rows = realloc(d->rows, d->cap * sizeof(*d->rows));
		REQUIRE(d->rows);
	}
	d->rows[d->cnt++] = *e;
}

struct cie_info {
	uint64_t off;
	int prio;
	bool signal;
	int ra_col;
	struct expect init;
	bool has_init;
};

/* Parse `readelf --debug-dump=frames-interp path`. */
static bool readelf_parse(const char *path, struct readelf_dump *d)
{
	char cmd[1024], line[4096];
	char cols[64][16], vals[64][16];
	struct cie_info cies[512];
	size_t cie_cnt = 0;
	int ncol = 0, prio = -1;
	bool in_cie = false, signal = false, rows_seen = false;
	struct cie_info *cur_cie = NULL;
	struct exp_fde *fde = NULL;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -wF '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		return false;
	memset(d, 0, sizeof(*d));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, len, id, b, e;
		char aug[32];
		int n;

		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "Contents of the .eh_frame section")) {
			prio = 0;
			cie_cnt = 0;
			continue;
		}
		if (strstr(line, "Contents of the .debug_frame section")) {
			prio = 1;
			cie_cnt = 0;
			continue;
		}
		if (prio < 0)
			continue;
		if (sscanf(line, "%llx %llx %llx CIE \"%31[^\"]\"", &off, &len, &id, aug) == 4 ||
		    (sscanf(line, "%llx %llx %llx CIE \"\"", &off, &len, &id) == 3 &&
		     strstr(line, "CIE \"\"") && !(aug[0] = '\0'))) {
			if (fde && !rows_seen && fde->cnt == 0) {
				/* unreachable: handled when the FDE line is read */
			}
			REQUIRE(cie_cnt < 512);
			cur_cie = &cies[cie_cnt++];
			memset(cur_cie, 0, sizeof(*cur_cie));
			cur_cie->off = off;
			cur_cie->prio = prio;
			cur_cie->signal = strchr(aug, 'S') != NULL;
			cur_cie->ra_col = strstr(line, " ra=") ? atoi(strstr(line, " ra=") + 4)
							       : -1;
			cmp_ra_col = cur_cie->ra_col;
			in_cie = true;
			fde = NULL;
			ncol = 0;
			continue;
		}
		if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &off, &len, &id, &id,
			   &b, &e) == 6) {
			size_t k;

			cur_cie = NULL;
			for (k = 0; k < cie_cnt; k++)
				if (cies[k].off == id)
					cur_cie = &cies[k];
			in_cie = false;
			if (d->fde_cnt == d->fde_cap) {
				d->fde_cap = d->fde_cap ? 2 * d->fde_cap : 1024;
				d->fdes = realloc(d->fdes, d->fde_cap * sizeof(*d->fdes));
				REQUIRE(d->fdes);
			}
			fde = &d->fdes[d->fde_cnt++];
			memset(fde, 0, sizeof(*fde));
			fde->begin = b;
			fde->end = e;
			fde->first = d->cnt;
			fde->prio = prio;
			fde->seq = d->fde_cnt;
			signal = cur_cie && cur_cie->signal;
			cmp_ra_col = cur_cie ? cur_cie->ra_col : -1;
			ncol = 0;
			rows_seen = false;
			if (b == 0 || b >= e) {
				d->fde_cnt--; /* we drop these too */
				fde = NULL;
				continue;
			}
			/* No rows printed: the CIE's initial rules hold over the whole FDE. */
			if (cur_cie && cur_cie->has_init) {
				struct expect x = cur_cie->init;

				x.addr = b;
				if (signal)
					x.kind = UNWIND_RULE_SIGNAL;
				dump_push(d, &x);
				fde->cnt = 1;
			}
			continue;
		}
		if (!strncmp(line, "   LOC", 6)) {
			char *tok, *save = NULL;

			ncol = 0;
			for (tok = strtok_r(line, " ", &save); tok && ncol < 64;
			     tok = strtok_r(NULL, " ", &save))
				snprintf(cols[ncol++], sizeof(cols[0]), "%s", tok);
			continue;
		}
		if (ncol && sscanf(line, "%llx%n", &off, &n) == 1 && n == 16) {
			struct expect x;
			char *tok, *save = NULL;
			int c = 0;

			for (tok = strtok_r(line, " ", &save); tok && c < 64;
			     tok = strtok_r(NULL, " ", &save)) {
				if (tok[0] == '(')
					continue; /* "r10 (r10)": the register's name */
				snprintf(vals[c++], sizeof(vals[0]), "%s", tok);
			}
			x.addr = off;
			expect_from_cols(&x, cols, vals, c, in_cie ? false : signal);
			if (in_cie && cur_cie) {
				cur_cie->init = x;
				cur_cie->has_init = true;
			} else if (fde) {
				if (!rows_seen) {
					/* Replace the CIE default pushed above. */
					d->cnt = fde->first;
					fde->cnt = 0;
					rows_seen = true;
				}
				if (off < fde->end) {
					dump_push(d, &x);
					fde->cnt++;
				}
			}
			continue;
		}
	}
	pclose(f);
	return d->fde_cnt > 0;
}

static int exp_fde_cmp(const void *pa, const void *pb)
{
	const struct exp_fde *a = pa, *b = pb;

	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->prio != b->prio)
		return a->prio - b->prio;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* readelf's rows resolved like ours: sorted FDEs, earlier wins on overlap, INVALID at gaps. */
static struct expect *expected_table(struct readelf_dump *d, size_t *cnt)
{
	struct expect *out = calloc(d->cnt + 2 * d->fde_cnt + 1, sizeof(*out));
	uint64_t covered = 0;
	bool any = false;
	size_t n = 0;

	REQUIRE(out);
	qsort(d->fdes, d->fde_cnt, sizeof(*d->fdes), exp_fde_cmp);
	for (size_t i = 0; i < d->fde_cnt; i++) {
		struct exp_fde *f = &d->fdes[i];
		uint64_t start = f->begin;
		size_t j;

		if (!f->cnt)
			continue;
		if (any && start < covered) {
			if (f->end <= covered)
				continue;
			start = covered;
		}
		if (any && start > covered) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n++].addr = covered;
		}
		for (j = 0; j + 1 < f->cnt && d->rows[f->first + j + 1].addr <= start; j++)
			;
		out[n] = d->rows[f->first + j];
		out[n++].addr = start;
		for (j++; j < f->cnt; j++)
			out[n++] = d->rows[f->first + j];
		covered = f->end;
		any = true;
	}
	if (any) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n++].addr = covered;
	}
	*cnt = n;
	return out;
}

static const struct expect *expect_at(const struct expect *e, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &e[lo - 1] : NULL;
}

struct compare_result {
	size_t boundaries;
	size_t mismatches;
	size_t plt, deref, stop, signal, unsupported;
	size_t entries;       /* function entries without CFI given the entry rule (endbr64) */
	size_t clone_returns; /* clone()/clone3() parent returns given their rule */
};

/* Where readelf has no CFI, ours may have CFA = rsp + 8 from the code (unwind_table.c
 * find_code_marks()): for the 4 bytes of an endbr64 on a 16-byte boundary (a function's entry,
 * ENTRY), or for the 8 bytes after glibc's clone()/clone3() syscall up to its ret (CLONE).
 */
enum code_mark_kind { NOT_A_CODE_MARK, ENTRY, CLONE };

static enum code_mark_kind code_mark_at(struct elf_file *ef, const struct unwind_table *t,
					uint64_t addr, const struct unwind_rule *rule)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	/* syscall; test %rax,%rax; jl +0x13; je +1; ret: Debian 12's glibc, both functions */
	static const uint8_t clone_ret[] = { 0x0f, 0x05, 0x48, 0x85, 0xc0, 0x7c };
	const struct unwind_row *next;
	const uint8_t *code;
	size_t avail;

	if (rule->kind != UNWIND_RULE_CFA || rule->cfa_reg != DWARF_RSP || rule->cfa_off != 8 ||
	    rule->rbp_rule != UNWIND_RBP_SAME)
		return NOT_A_CODE_MARK;
	next = unwind_table__find(t, addr + 4);
	if (!(addr & 15) && !elf_file__bytes_at_vaddr(ef, addr, (const void **)&code, &avail) &&
	    avail >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)) && next &&
	    next->addr == addr + 4 && next->rule.kind != UNWIND_RULE_CFA)
		return ENTRY;
	next = unwind_table__find(t, addr + 8);
	if (!elf_file__bytes_at_vaddr(ef, addr - 2, (const void **)&code, &avail) && avail >= 10 &&
	    !memcmp(code, clone_ret, sizeof(clone_ret)) && code[7] == 0x74 && code[9] == 0xc3 &&
	    next && next->addr == addr + 8 && next->rule.kind != UNWIND_RULE_CFA)
		return CLONE;
	return NOT_A_CODE_MARK;
}

static bool check_one(struct elf_file *ef, const struct expect *e, const struct unwind_table *t,
		      uint64_t addr, struct compare_result *res)
{
	const struct unwind_row *r = unwind_table__find(t, addr);
	struct unwind_rule invalid = { 0 };
	const struct unwind_rule *rule = r ? &r->rule : &invalid;
	bool ok;

	res->boundaries++;
	if (!e || (e->kind == UNWIND_RULE_INVALID && !e->cfa_exp && !e->ra_u)) {
		enum code_mark_kind k = NOT_A_CODE_MARK;

		ok = rule->kind == UNWIND_RULE_INVALID;
		if (!ok && r)
			k = code_mark_at(ef, t, r->addr, rule);
		if (k != NOT_A_CODE_MARK) {
			ok = true;
			if (r->addr == addr) /* counted at its start, not at a boundary inside */
				*(k == ENTRY ? &res->entries : &res->clone_returns) += 1;
		}
	} else
		ok = expect_matches(e, rule);
	if (!ok && res->mismatches++ < 10)
		printf("  mismatch at 0x%" PRIx64 ": ours kind %u reg %u off %d rbp %u/%d; readelf "
		       "kind %u reg %u off %d rbp %u/%d exp %d ra_u %d rbp_u %d\n",
		       addr, rule->kind, rule->cfa_reg, rule->cfa_off, rule->rbp_rule,
		       rule->rbp_off, e ? e->kind : 0, e ? e->cfa_reg : 0, e ? e->cfa_off : 0,
		       e ? e->rbp_rule : 0, e ? e->rbp_off : 0, e ? e->cfa_exp : 0, e ? e->ra_u : 0,
		       e ? e->rbp_u : 0);
	return ok;
}

/* Compare our table of path (CFI only) with readelf's at every boundary of either. */
static void compare_with_readelf(const char *path, const char *debug_path,
				 struct compare_result *res)
{
	struct unwind_table_opts opts = { .no_symbols = true };
	struct readelf_dump d;
	struct elf_file *ef, *dbg = NULL;
	struct unwind_table *t = NULL;
	struct expect *exp;
	const struct unwind_row *rows;
	size_t exp_cnt, n, i;

	memset(res, 0, sizeof(*res));
	ef = elf_file__open(path);
	REQUIRE(ef);
	if (debug_path) {
		dbg = elf_file__open(debug_path);
		REQUIRE(dbg);
	}
	REQUIRE(readelf_parse(debug_path ? debug_path : path, &d));
	if (debug_path) {
		/* readelf of the debug file lacks the stripped file's .eh_frame: add it. */
		struct readelf_dump d2;
		size_t base;

		REQUIRE(readelf_parse(path, &d2));
		base = d.cnt;
		for (i = 0; i < d2.cnt; i++)
			dump_push(&d, &d2.rows[i]);
		for (i = 0; i < d2.fde_cnt; i++) {
			if (d.fde_cnt == d.fde_cap) {
				d.fde_cap = 2 * d.fde_cap + 16;
				d.fdes = realloc(d.fdes, d.fde_cap * sizeof(*d.fdes));
				REQUIRE(d.fdes);
			}
			d.fdes[d.fde_cnt] = d2.fdes[i];
			d.fdes[d.fde_cnt].first += base;
			d.fdes[d.fde_cnt].prio = -1; /* .eh_frame of the main file wins */
			d.fde_cnt++;
		}
		free(d2.rows);
		free(d2.fdes);
	}
	CHECK_EQ_INT(unwind_table__build_opts(ef, dbg, &opts, &t), 0);
	REQUIRE(t);
	exp = expected_table(&d, &exp_cnt);
	for (i = 0; i < exp_cnt; i++)
		check_one(ef, &exp[i], t, exp[i].addr, res);
	rows = unwind_table__rows(t, &n);
	for (i = 0; i < n; i++) {
		check_one(ef, expect_at(exp, exp_cnt, rows[i].addr), t, rows[i].addr, res);
		switch (rows[i].rule.kind) {
		case UNWIND_RULE_PLT:
			res->plt++;
			break;
		case UNWIND_RULE_CFA_DEREF:
			res->deref++;
			break;
		case UNWIND_RULE_STOP:
			res->stop++;
			break;
		case UNWIND_RULE_SIGNAL:
			res->signal++;
			break;
		case UNWIND_RULE_UNSUPPORTED:
			res->unsupported++;
			break;
		}
	}
	CHECK_EQ_INT(unwind_table__stats(t)->bad_fde_cnt, 0);
	printf("  %s: %zu boundaries, %zu mismatches, %zu rows, %zu FDEs (plt %zu deref %zu "
	       "stop %zu signal %zu unsupported %zu, function entries without CFI %zu, clone "
	       "returns %zu)\n",
	       path, res->boundaries, res->mismatches, n, unwind_table__stats(t)->fde_cnt, res->plt,
	       res->deref, res->stop, res->signal, res->unsupported, res->entries,
	       res->clone_returns);
	CHECK_EQ_INT(res->entries, unwind_table__stats(t)->entry_mark_cnt);
	CHECK_EQ_INT(res->clone_returns, unwind_table__stats(t)->clone_return_cnt);
	free(exp);
	free(d.rows);
	free(d.fdes);
	unwind_table__free(t);
	elf_file__free(dbg);
	elf_file__free(ef);
}

static void compare_fixture(const char *name, bool want_plt)
{
	struct compare_result res;

	compare_with_readelf(test_fixture(name), NULL, &res);
	CHECK(res.boundaries > 20);
	CHECK_EQ_INT(res.mismatches, 0);
	if (want_plt)
		CHECK(res.plt > 0);
	/* crtstuff's __do_global_dtors_aux and frame_dummy: endbr64, no FDE */
	CHECK_EQ_INT(res.entries, 2);
}

TEST(readelf_gcc)
{
	compare_fixture("cfi_gcc_O0", true);
	compare_fixture("cfi_gcc_O2", true);
	compare_fixture("cfi_gcc_O2_nofp", true);
	compare_fixture("cfi_gcc_O2_fp", true);
}

TEST(readelf_clang)
{
	compare_fixture("cfi_clang_O0", true);
	compare_fixture("cfi_clang_O2_nofp", true);
}

TEST(readelf_cxx)
{
	compare_fixture("cfi_gxx_O0", true);
	compare_fixture("cfi_gxx_O2", true);
	compare_fixture("cfi_clangxx_O2", true);
}

TEST(readelf_debug_frame)
{
	struct compare_result res;
	struct elf_file *a, *b, *c;
	struct unwind_table *ta = NULL, *tb = NULL, *tc = NULL;
	const struct unwind_row *ra, *rb, *rc;
	size_t na, nb, nc;

	compare_fixture("cfi_gcc_debug_frame", true);
	/* The deref rule of realigned() only exists in GCC's code: check it was seen. */
	compare_with_readelf(test_fixture("cfi_gcc_debug_frame_stripped"),
			     test_fixture("cfi_gcc_debug_frame.debug"), &res);
	CHECK_EQ_INT(res.mismatches, 0);
	CHECK(res.deref > 0);

	/* Same table from: .debug_frame in the file, in a debug file, compressed. */
	a = elf_file__open(test_fixture("cfi_gcc_debug_frame"));
	b = elf_file__open(test_fixture("cfi_gcc_debug_frame_stripped"));
	c = elf_file__open(test_fixture("cfi_gcc_debug_frame_gz"));
	REQUIRE(a && b && c);
	{
		struct elf_file *dbg = elf_file__open(test_fixture("cfi_gcc_debug_frame.debug"));

		REQUIRE(dbg);
		CHECK_EQ_INT(unwind_table__build(a, NULL, &ta), 0);
		CHECK_EQ_INT(unwind_table__build(b, dbg, &tb), 0);
		CHECK_EQ_INT(unwind_table__build(c, NULL, &tc), 0);
		elf_file__free(dbg);
	}
	REQUIRE(ta && tb && tc);
	ra = unwind_table__rows(ta, &na);
	rb = unwind_table__rows(tb, &nb);
	rc = unwind_table__rows(tc, &nc);
	CHECK_EQ_INT(na, nb);
	CHECK_EQ_INT(na, nc);
	CHECK(na == nb && !memcmp(ra, rb, na * sizeof(*ra)));
	CHECK(na == nc && !memcmp(ra, rc, na * sizeof(*ra)));
	CHECK(unwind_table__stats(ta)->sources & UNWIND_SRC_DEBUG_FRAME);
	CHECK(unwind_table__stats(tb)->sources & UNWIND_SRC_DEBUG_FILE);
	unwind_table__free(ta);
	unwind_table__free(tb);
	unwind_table__free(tc);
	elf_file__free(a);
	elf_file__free(b);
	elf_file__free(c);
}

TEST(readelf_system_libc)
{
	struct compare_result res;
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	FILE *f = fopen(libc, "rb");

	if (!f) /* libc6: a dependency of the compilers and libc6-dbg that setup.sh installs */
		SKIP_SETUP("no %s", libc);
	fclose(f);
	compare_with_readelf(libc, NULL, &res);
	CHECK(res.boundaries > 1000);
	CHECK_EQ_INT(res.mismatches, 0);
	CHECK(res.signal > 0);              /* __restore_rt's 'S' FDE */
	CHECK(res.stop > 0);                /* clone/clone3/_start-like CFI with an undefined ra */
	CHECK_EQ_INT(res.clone_returns, 2); /* the parent's side of clone() and clone3() */
}

/* Debian's arm64 libc, libstdc++, python3.11 and libnode (scripts/arm64_files.sh, run by
 * setup.sh into $STACKSCOPE_ARM64_FILES), built with arm64 rules and compared with readelf.
 */
TEST(readelf_debian_arm64)
{
	static const char *const files[] = { "lib/aarch64-linux-gnu/libc.so.6",
					     "usr/lib/aarch64-linux-gnu/libstdc++.so.6",
					     "usr/bin/python3.11",
					     "usr/lib/aarch64-linux-gnu/libnode.so.108" };
	const char *root = getenv("STACKSCOPE_ARM64_FILES");
	struct compare_result res, sum = { 0 };
	char path[1024];
	size_t i;

	if (!root)
		root = "build/arm64-debs/root";
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct elf_file *ef;

		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		ef = elf_file__open(path);
		if (!ef)
			SKIP_SETUP("no %.200s (scripts/arm64_files.sh)", path);
		CHECK_EQ_INT(elf_file__machine(ef), EM_AARCH64);
		elf_file__free(ef);
		cmp_arm64 = true;
		compare_with_readelf(path, NULL, &res);
		cmp_arm64 = false;
		CHECK(res.boundaries > 1000);
		CHECK_EQ_INT(res.mismatches, 0);
		sum.stop += res.stop;
		sum.unsupported += res.unsupported;
		sum.plt += res.plt;
	}
	CHECK(sum.stop > 0); /* _start and clone's undefined x30 */
	CHECK_EQ_INT(sum.plt, 0);
	/* gcc's pointer-authentication CFI (DW_CFA_AARCH64_negate_ra_state in every FDE that
	 * signs its return address): tests/data/arm64.mk
	 */
	snprintf(path, sizeof(path), "%s", test_fixture("arm64_chain"));
	if (access(path, R_OK))
		SKIP_SETUP("no %.200s (gcc-aarch64-linux-gnu)", path);
	cmp_arm64 = true;
	compare_with_readelf(path, NULL, &res);
	cmp_arm64 = false;
	CHECK(res.boundaries > 100);
	CHECK_EQ_INT(res.mismatches, 0);
}

/* The dynamic loader's entry point (`_start`: no CFI, no symbol in Debian's stripped ld.so)
 * ends a stack: a process's first instructions are a complete stack.
 */
TEST(entry_point_is_a_root)
{
	const char *ldso = "/lib64/ld-linux-x86-64.so.2";
	struct unwind_table_opts cfi_only = { .no_symbols = true };
	struct unwind_table *t = NULL, *plain = NULL;
	const struct unwind_row *r;
	struct elf_file *ef = elf_file__open(ldso);
	uint64_t entry;

	if (!ef) /* libc6, as above */
		SKIP_SETUP("no %s", ldso);
	entry = elf_file__entry(ef);
	REQUIRE(entry);
	REQUIRE(unwind_table__build(ef, NULL, &t) == 0);
	REQUIRE(unwind_table__build_opts(ef, NULL, &cfi_only, &plain) == 0);
	r = unwind_table__find(t, entry);
	REQUIRE(r);
	CHECK_EQ_INT(r->rule.kind, UNWIND_RULE_STOP);
	r = unwind_table__find(plain, entry);
	CHECK(!r || r->rule.kind != UNWIND_RULE_STOP); /* it was a gap in the CFI */
	unwind_table__free(t);
	unwind_table__free(plain);
	elf_file__free(ef);
}

/* CFI_COMPARE_FILES="a:b:c" compares more files with readelf (too slow for `make test`). */
TEST(readelf_extra_files)
{
	const char *env = getenv("CFI_COMPARE_FILES");
	char list[4096], *tok, *save = NULL;

	REQUIRE(env);
	snprintf(list, sizeof(list), "%s", env);
	for (tok = strtok_r(list, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		struct compare_result res;

		compare_with_readelf(tok, NULL, &res);
		CHECK_EQ_INT(res.mismatches, 0);
	}
}

TEST(symbol_rules)
{
	struct elf_file *ef = elf_file__open(test_fixture("cfi_gcc_O2"));
	struct unwind_table *t = NULL, *plain = NULL;
	struct unwind_table_opts opts = { .no_symbols = true };
	const struct unwind_row *r;

	REQUIRE(ef);
	CHECK_EQ_INT(unwind_table__build(ef, NULL, &t), 0);
	CHECK_EQ_INT(unwind_table__build_opts(ef, NULL, &opts, &plain), 0);
	REQUIRE(t && plain);
	/* _start is a thread root: STOP from its first byte whatever its CFI says. */
	{
		struct elf_section sec;
		uint64_t start = 0;
		const Elf64_Sym *syms;

		REQUIRE(elf_file__section(ef, ".symtab", &sec) == 0);
		syms = sec.data;
		{
			struct elf_section str;

			REQUIRE(elf_file__section(ef, ".strtab", &str) == 0);
			for (size_t i = 0; i < sec.size / sizeof(*syms); i++)
				if (syms[i].st_name < str.size &&
				    !strcmp((const char *)str.data + syms[i].st_name, "_start"))
					start = syms[i].st_value;
		}
		REQUIRE(start);
		r = unwind_table__find(t, start);
		REQUIRE(r);
		CHECK_EQ_INT(r->rule.kind, UNWIND_RULE_STOP);
		r = unwind_table__find(t, start + 4);
		REQUIRE(r);
		CHECK_EQ_INT(r->rule.kind, UNWIND_RULE_STOP);
	}
	CHECK(unwind_table__stats(t)->sources & UNWIND_SRC_SYMBOLS);
	CHECK(!(unwind_table__stats(plain)->sources & UNWIND_SRC_SYMBOLS));
	unwind_table__free(t);
	unwind_table__free(plain);
	elf_file__free(ef);
}

static uint64_t symbol_addr(struct elf_file *ef, const char *name)
{
	struct elf_section sec, str;
	const Elf64_Sym *syms;

	if (elf_file__section(ef, ".symtab", &sec) || elf_file__section(ef, ".strtab", &str))
		return 0;
	syms = sec.data;
	for (size_t i = 0; i < sec.size / sizeof(*syms); i++)
		if (syms[i].st_name < str.size &&
		    !strcmp((const char *)str.data + syms[i].st_name, name))
			return syms[i].st_value;
	return 0;
}

TEST(signal_trampolines_by_code)
{
	struct elf_file *ef = elf_file__open(test_fixture("cfi_sigtramp"));
	struct unwind_table *t = NULL;
	uint64_t a, b;

	REQUIRE(ef);
	a = symbol_addr(ef, "cfi_restorer");
	b = symbol_addr(ef, "__restore_rt");
	REQUIRE(a && b);
	CHECK_EQ_INT(unwind_table__build(ef, NULL, &t), 0);
	REQUIRE(t);
	/* FDE around the sigreturn code: SIGNAL, from one byte early for ra-1 lookups. */
	CHECK_KIND(t, a, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, a + 8, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, a - 1, UNWIND_RULE_SIGNAL);
	/* No CFI, found by name and checked against the code. */
	CHECK_KIND(t, b - 1, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, b, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, b + 8, UNWIND_RULE_SIGNAL);
	CHECK_KIND(t, b + 9, UNWIND_RULE_INVALID);
	unwind_table__free(t);
	elf_file__free(ef);
}

/* A fixture's bytes, malloc()ed (the caller frees). */
static uint8_t *read_fixture(const char *name, size_t *size)
{
	uint8_t *image = NULL;
	FILE *f;
	long n;

	f = fopen(test_fixture(name), "rb");
	REQUIRE(f);
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0) {
		*size = (size_t)n;
		rewind(f);
		image = malloc(*size);
		if (image && fread(image, 1, *size, f) != *size) {
			free(image);
			image = NULL;
		}
	}
	fclose(f);
	REQUIRE(image);
	return image;
}

/* Without section headers, .eh_frame is found through PT_GNU_EH_FRAME and gives the same
 * rows as through its section header.
 */
TEST(eh_frame_through_program_headers)
{
	struct unwind_table_opts opts = { .no_symbols = true };
	struct unwind_table *with = NULL, *without = NULL;
	struct elf_file *ef = elf_file__open(test_fixture("cfi_gcc_O2_nofp")), *bare = NULL;
	const struct unwind_row *a, *b;
	size_t na, nb, size;
	uint8_t *image = NULL;
	Elf64_Ehdr *eh;

	REQUIRE(ef);
	REQUIRE(unwind_table__build_opts(ef, NULL, &opts, &with) == 0);
	image = read_fixture("cfi_gcc_O2_nofp", &size);
	eh = (Elf64_Ehdr *)image;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	bare = elf_file__open_mem(image, size);
	REQUIRE(bare);
	CHECK_EQ_INT(elf_file__section_cnt(bare), 0);
	REQUIRE(unwind_table__build_opts(bare, NULL, &opts, &without) == 0);
	CHECK(unwind_table__stats(without)->sources & UNWIND_SRC_EH_FRAME_HDR_ONLY);
	a = unwind_table__rows(with, &na);
	b = unwind_table__rows(without, &nb);
	CHECK(na > 10);
	CHECK_EQ_INT(na, nb);
	CHECK(na == nb && !memcmp(a, b, na * sizeof(*a)));
	unwind_table__free(with);
	unwind_table__free(without);
	elf_file__free(bare);
	elf_file__free(ef);
	free(image);
}

struct fde_list {
	struct cfi_fde fde[64];
	size_t cnt;
};

static int list_fde(void *ctx, const struct cfi_fde *fde)
{
	struct fde_list *l = ctx;

	if (l->cnt < 64)
		l->fde[l->cnt++] = *fde;
	return 0;
}

/* A real file with a corrupted .eh_frame: one FDE pointing at no CIE, one FDE with an unknown
 * opcode, and (second image) the last entry's length running past the section. The table is
 * still built from the good FDEs, and the malformed ones are counted, never reported as
 * "0 failed".
 */
TEST(corrupt_eh_frame_in_a_file)
{
	struct unwind_table_opts opts = { .no_symbols = true };
	struct unwind_table *good = NULL, *bad = NULL, *cut = NULL;
	const struct unwind_table_stats *gs, *bs, *cs;
	struct eh_frame_stats es = { 0 };
	struct fde_list *l = calloc(1, sizeof(*l));
	struct elf_file *ef = NULL, *ef_bad = NULL, *ef_cut = NULL;
	struct cfi_section sec = { .kind = CFI_SECTION_EH_FRAME };
	struct elf_section es_sec;
	uint8_t *image, *image_cut;
	size_t size, i, bad_ptr, bad_insn, last;
	uint64_t off;

	REQUIRE(l);
	image = read_fixture("cfi_gcc_O2", &size);
	image_cut = malloc(size);
	REQUIRE(image_cut);
	memcpy(image_cut, image, size);
	ef = elf_file__open_mem(image, size);
	REQUIRE(ef);
	REQUIRE(unwind_table__build_opts(ef, NULL, &opts, &good) == 0);
	gs = unwind_table__stats(good);
	CHECK_EQ_INT(unwind_table_stats__malformed(gs), 0);
	REQUIRE(gs->fde_cnt >= 4);

	/* Find the FDEs (offsets in the section) on the good image. */
	REQUIRE(elf_file__section(ef, ".eh_frame", &es_sec) == 0);
	sec.data = es_sec.data;
	sec.size = es_sec.size;
	sec.vaddr = es_sec.addr;
	REQUIRE(eh_frame__walk(&sec, list_fde, l, &es) == 0);
	REQUIRE(l->cnt >= 4);
	bad_ptr = 0;
	bad_insn = l->cnt;
	for (i = 1; i < l->cnt && bad_insn == l->cnt; i++) {
		if (l->fde[i].insns_sz)
			bad_insn = i;
	}
	REQUIRE(bad_insn < l->cnt - 1);
	last = l->cnt - 1;

	/* FDE 0: a CIE pointer past the start of the section. */
	off = es_sec.offset + l->fde[bad_ptr].offset + 4;
	image[off] = 0xf0;
	image[off + 1] = 0xff;
	image[off + 2] = 0xff;
	image[off + 3] = 0x7f;
	/* FDE bad_insn: its first instruction an opcode DWARF does not define. */
	image[es_sec.offset + (size_t)(l->fde[bad_insn].insns - (const uint8_t *)es_sec.data)] =
		0x3e;
	ef_bad = elf_file__open_mem(image, size);
	REQUIRE(ef_bad);
	REQUIRE(unwind_table__build_opts(ef_bad, NULL, &opts, &bad) == 0);
	bs = unwind_table__stats(bad);
	CHECK_EQ_INT(bs->bad_fde_cnt, 2);
	CHECK_EQ_INT(bs->bad_insn_fde_cnt, 1);
	CHECK_EQ_INT(bs->bad_cie_cnt, 0);
	CHECK_EQ_INT(bs->fde_cnt, gs->fde_cnt - 2);
	CHECK_EQ_INT(unwind_table_stats__malformed(bs), 2);
	/* The good FDEs still load: the last one's rule is unchanged; the broken ones are gone. */
	REQUIRE(unwind_table__find(bad, l->fde[last].pc_begin));
	CHECK(!memcmp(&unwind_table__find(bad, l->fde[last].pc_begin)->rule,
		      &unwind_table__find(good, l->fde[last].pc_begin)->rule,
		      sizeof(struct unwind_rule)));
	CHECK(!unwind_table__find(bad, l->fde[bad_ptr].pc_begin) ||
	      unwind_table__find(bad, l->fde[bad_ptr].pc_begin)->rule.kind == UNWIND_RULE_INVALID);

	/* Second image: the last FDE's length runs past the section; the walk stops there. */
	off = es_sec.offset + l->fde[last].offset;
	image_cut[off] = 0xf0;
	image_cut[off + 1] = 0xff;
	image_cut[off + 2] = 0xff;
	image_cut[off + 3] = 0x7f;
	ef_cut = elf_file__open_mem(image_cut, size);
	REQUIRE(ef_cut);
	REQUIRE(unwind_table__build_opts(ef_cut, NULL, &opts, &cut) == 0);
	cs = unwind_table__stats(cut);
	CHECK_EQ_INT(cs->truncated_section_cnt, 1);
	CHECK_EQ_INT(cs->fde_cnt, gs->fde_cnt - 1);
	CHECK(unwind_table_stats__malformed(cs) > 0);

	unwind_table__free(good);
	unwind_table__free(bad);
	unwind_table__free(cut);
	elf_file__free(ef);
	elf_file__free(ef_bad);
	elf_file__free(ef_cut);
	free(image);
	free(image_cut);
	free(l);
}

int main(void)
{
	RUN(basic_rows_and_gaps);
	RUN(rbx_cfa_and_rbx_rules);
	RUN(return_address_in_a_register);
	RUN(remember_restore_deep);
	RUN(remember_depth_cap);
	RUN(plt_expression);
	RUN(deref_expressions);
	RUN(gnu_args_size_and_misc_ops);
	RUN(ra_rules);
	RUN(debug_frame_formats);
	RUN(pointer_encodings);
	RUN(eh_frame_hdr);
	RUN(personality_and_lsda);
	RUN(overlap_priority);
	RUN(corrupt_input);
	RUN(readelf_gcc);
	RUN(readelf_clang);
	RUN(readelf_cxx);
	RUN(readelf_debug_frame);
	RUN(readelf_system_libc);
	RUN(entry_point_is_a_root);
	RUN(readelf_debian_arm64);
	if (getenv("CFI_COMPARE_FILES")) /* a tool for more files, not part of the suite */
		RUN(readelf_extra_files);
	RUN(symbol_rules);
	RUN(signal_trampolines_by_code);
	RUN(eh_frame_through_program_headers);
	RUN(corrupt_eh_frame_in_a_file);
	return test_summary();
}
