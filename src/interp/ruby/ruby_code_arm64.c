/* libruby's arm64 code as a source of its layout (see ruby_code.h): the shapes gcc gives Debian
 * 12's arm64 libruby-3.1 (fixed 4-byte instructions, little-endian).
 */
#include <errno.h>
#include <string.h>

#include "interp/ruby/ruby_code.h"

#define A64_RET 0xd65f03c0u
#define A64_MOV_X29_SP 0x910003fdu

static uint32_t insn_at(const uint8_t *code, size_t i)
{
	uint32_t v;

	memcpy(&v, code + i, 4);
	return v;
}

/* Frame and pointer-authentication instructions around the body, which say nothing of it:
 * stp x29, x30, [sp, #-N]!; mov x29, sp; ldp x29, x30, [sp], #N; paciasp; autiasp; bti c.
 */
static bool frame_insn(uint32_t v)
{
	return (v & 0xffc07fffu) == 0xa9807bfdu || v == A64_MOV_X29_SP ||
	       (v & 0xffc07fffu) == 0xa8c07bfdu || v == 0xd503233fu || v == 0xd50323bfu ||
	       v == 0xd503245fu;
}

/* adrp xd, page: the page's address (the instruction's own page + imm21 << 12) */
static uint64_t adrp_target(uint32_t v, uint64_t pc)
{
	uint64_t imm = ((uint64_t)((v >> 5) & 0x7ffff) << 2) | ((v >> 29) & 3);

	if (imm & (1ull << 20))
		imm |= ~((1ull << 21) - 1); /* sign-extend imm21 */
	return (pc & ~0xfffull) + (imm << 12);
}

/* rb_errinfo, `return GET_EC()->errinfo;` through ruby_current_ec's TLS descriptor:
 *   mrs xT, tpidr_el0
 *   adrp x0, desc; ldr xR, [x0, #:lo12:desc]; add x0, x0, #:lo12:desc; blr xR
 *   ldr x0, [xT, x0]           (the resolver returns the variable's offset from tpidr_el0)
 *   ldr x0, [x0, #errinfo]; ret
 * with frame instructions anywhere between.
 */
int ruby_code__errinfo_arm64(const uint8_t *code, size_t size, uint64_t addr,
			     struct ruby_ec_access *out)
{
	enum { MRS, ADRP, LDR, ADD, BLR, LOAD_EC, ERRINFO, RET, DONE } want = ADRP;
	uint32_t tp_reg = 32, fn_reg = 32, lo12 = 0;
	uint64_t page = 0;
	size_t i;

	for (i = 0; i + 4 <= size && want != DONE; i += 4) {
		uint32_t v = insn_at(code, i);

		if ((v & 0xffffffe0u) == 0xd53bd040u && tp_reg == 32) { /* mrs xT, tpidr_el0 */
			tp_reg = v & 0x1f;
			continue;
		}
		if (frame_insn(v))
			continue;
		switch (want) {
		case ADRP: /* adrp x0 */
			if ((v & 0x9f00001fu) != 0x90000000u)
				return -ENOENT;
			page = adrp_target(v, addr + i);
			want = LDR;
			break;
		case LDR: /* ldr xR, [x0, #imm12 * 8] */
			if ((v & 0xffc003e0u) != 0xf9400000u)
				return -ENOENT;
			fn_reg = v & 0x1f;
			lo12 = ((v >> 10) & 0xfff) * 8;
			want = ADD;
			break;
		case ADD: /* add x0, x0, #imm12 (the same descriptor) */
			if ((v & 0xffc003ffu) != 0x91000000u || ((v >> 10) & 0xfff) != lo12)
				return -ENOENT;
			want = BLR;
			break;
		case BLR: /* blr xR */
			if (v != (0xd63f0000u | fn_reg << 5))
				return -ENOENT;
			want = LOAD_EC;
			break;
		case LOAD_EC: /* ldr x0, [xT, x0] (lsl #0) */
			if (tp_reg == 32 || v != (0xf8606800u | tp_reg << 5))
				return -ENOENT;
			want = ERRINFO;
			break;
		case ERRINFO: /* ldr x0, [x0, #imm12 * 8] */
			if ((v & 0xffc003ffu) != 0xf9400000u)
				return -ENOENT;
			out->errinfo = ((v >> 10) & 0xfff) * 8;
			want = RET;
			break;
		default: /* RET */
			if (v != A64_RET)
				return -ENOENT;
			want = DONE;
		}
	}
	if (want != DONE)
		return -ENOENT;
	out->kind = RUBY_EC_TLSDESC;
	out->tls_pair = page + lo12;
	out->tls_add = 0;
	memset(&out->global, 0, sizeof(out->global));
	return 0;
}

/* rb_during_gc, `return GET_VM()->objspace->flags.during_gc;`:
 *   adrp x0, slot; ldr x0, [x0, #:lo12:slot]   (the GOT slot of ruby_current_vm_ptr)
 *   ldr x0, [x0]; ldr x0, [x0, #objspace]; ldr x0|w0, [x0, #flags]
 *   ubfx w0|x0, w0|x0, #bit, #1; ret
 */
int ruby_code__during_gc_arm64(const uint8_t *code, size_t size, uint64_t addr,
			       struct ruby_gc_access *out)
{
	uint32_t v[7];
	uint32_t flags, lsb;
	size_t i;

	if (size < sizeof(v))
		return -ENOENT;
	for (i = 0; i < 7; i++)
		v[i] = insn_at(code, i * 4);
	if ((v[0] & 0x9f00001fu) != 0x90000000u || (v[1] & 0xffc003ffu) != 0xf9400000u ||
	    v[2] != 0xf9400000u || (v[3] & 0xffc003ffu) != 0xf9400000u || v[6] != A64_RET)
		return -ENOENT;
	out->vm_ptr.vaddr = adrp_target(v[0], addr) + ((v[1] >> 10) & 0xfff) * 8;
	out->vm_ptr.via_got = true;
	out->vm_objspace = ((v[3] >> 10) & 0xfff) * 8;
	if ((v[4] & 0xffc003ffu) == 0xf9400000u) /* ldr x0, [x0, #imm12 * 8] */
		flags = ((v[4] >> 10) & 0xfff) * 8;
	else if ((v[4] & 0xffc003ffu) == 0xb9400000u) /* ldr w0, [x0, #imm12 * 4] */
		flags = ((v[4] >> 10) & 0xfff) * 4;
	else
		return -ENOENT;
	/* ubfx w0, w0, #lsb, #1: ubfm with immr = imms = lsb (53000000 | immr << 16 | imms << 10),
	 * or x0's (d3400000)
	 */
	lsb = (v[5] >> 16) & 0x3f;
	if (((v[5] & 0xffc003ffu) != 0x53000000u || lsb >= 32) &&
	    (v[5] & 0xffc003ffu) != 0xd3400000u)
		return -ENOENT;
	if (((v[5] >> 10) & 0x3f) != lsb)
		return -ENOENT;
	out->flags_off = flags + lsb / 32 * 4; /* the 32-bit word holding the bit */
	out->gc_running = 1u << (lsb % 32);
	return 0;
}

/* br xN (d61f0000 | n << 5): one per instruction handler in a threaded interpreter. */
size_t ruby_code__indirect_jumps_arm64(const uint8_t *code, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i + 4 <= size; i += 4)
		if ((insn_at(code, i) & 0xfffffc1fu) == 0xd61f0000u)
			n++;
	return n;
}

/* b and bl imm26 (0x14000000, 0x94000000) whose targets lie outside the code. */
size_t ruby_code__branch_targets_arm64(const uint8_t *code, size_t size, uint64_t addr,
				       uint64_t *out, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i + 4 <= size && n < cap; i += 4) {
		uint32_t v = insn_at(code, i);
		int32_t imm26;
		uint64_t target;

		if ((v & 0x7c000000u) != 0x14000000u)
			continue;
		imm26 = (int32_t)((v & 0x03ffffffu) << 6) >> 6; /* sign-extended */
		target = addr + i + (uint64_t)((int64_t)imm26 * 4);
		if (target < addr || target >= addr + size)
			out[n++] = target;
	}
	return n;
}
