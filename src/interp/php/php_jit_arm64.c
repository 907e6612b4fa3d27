/* execute_ex's dispatch frame in arm64 code (see php_jit.h): the shapes gcc 12 gives Debian 12's
 * arm64 php8.2 (fixed 4-byte instructions, little-endian). Its HYBRID VM keeps the opline in
 * x28 and dispatches with `ldr xA, [x28]; br xA`; the prologue before the first dispatch
 * reserves the frame and stores x29 and x30 somewhere in it:
 *   sub sp, sp, #0x90; adrp/ldr (the stack guard); stp x29, x30, [sp, #64]; add x29, sp, #64;
 *   stp x19, x20, ...; stp x28, x27, [sp, #24]; mov x27, x0; ...; ldr x0, [x28]; br x0
 * (`stp x29, x30, [sp, #-N]!` reserves and stores at once in other builds). Unlike x86-64's
 * `call`, the return address is not at the CFA's edge: where x30 is stored is read too.
 */
#include <errno.h>
#include <string.h>

#include "interp/php/php_jit.h"

#define A64_INSNS_MAX 64 /* instructions from the entry to the first dispatch */
#define FRAME_MAX (1u << 16)

static uint32_t insn_at(const uint8_t *code, size_t i)
{
	uint32_t v;

	memcpy(&v, code + i * 4, 4);
	return v;
}

/* imm7 of a load/store pair of X registers, in bytes (signed, scaled by 8) */
static int32_t pair_offset(uint32_t v)
{
	int32_t imm7 = (int32_t)((v >> 15) & 0x7f);

	return (imm7 >= 64 ? imm7 - 128 : imm7) * 8;
}

int php_jit__vm_frame_arm64(const uint8_t *b, size_t size, uint64_t entry, uint64_t *dispatch,
			    uint32_t *frame, uint32_t *ra_off)
{
	size_t n = size / 4 < A64_INSNS_MAX ? size / 4 : A64_INSNS_MAX, i;
	uint32_t depth = 0;    /* bytes sp has moved down from the entry (the CFA) */
	int64_t ra_below = -1; /* the stored x30's slot: CFA - ra_below */

	for (i = 0; i < n; i++) {
		uint32_t v = insn_at(b, i);

		if ((v & 0xffc003ffu) == 0xd10003ffu) { /* sub sp, sp, #imm12 */
			depth += (v >> 10) & 0xfff;
		} else if ((v & 0xffc07fffu) == 0xa9807bfdu) { /* stp x29, x30, [sp, #-N]! */
			if (pair_offset(v) >= 0)
				return -ENOENT;
			depth += (uint32_t)-pair_offset(v);
			ra_below = (int64_t)depth - 8;
		} else if ((v & 0xffc07fffu) == 0xa9007bfdu) { /* stp x29, x30, [sp, #off] */
			ra_below = (int64_t)depth - pair_offset(v) - 8;
		} else if ((v & 0x3f80001fu) == 0x1100001fu) {
			return -ENOENT; /* another add/sub (immediate) into sp: not the shape known */
		} else if ((v & 0xffffffe0u) == 0xf9400380u && i + 1 < n &&
			   insn_at(b, i + 1) == (0xd61f0000u | (v & 0x1f) << 5)) {
			/* ldr xA, [x28]; br xA: the first dispatch */
			if (!depth || depth > FRAME_MAX || ra_below < 8 || ra_below > depth)
				return -ENOENT;
			*dispatch = entry + (i + 1) * 4;
			*frame = depth;
			*ra_off = depth - (uint32_t)ra_below;
			return 0;
		}
	}
	return -ENOENT;
}
