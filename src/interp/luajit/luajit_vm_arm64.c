/* LuaJIT 2.1's arm64 VM read from its code (luajit_vm_arm64.h). Instructions are decoded by
 * their encodings (A64, little-endian words):
 *   add xD, sp, #0 (mov xD, sp)        0x910003e0 | D
 *   str xT, [xN, #imm] (unsigned imm)  0xf9000000 | imm/8 << 10 | N << 5 | T
 *   ldr xT, [xN, #imm]                 0xf9400000 | imm/8 << 10 | N << 5 | T
 *   ldr xT, [xN, xM, lsl #3]           0xf8607800 | M << 16 | N << 5 | T
 *   sub sp, sp, #16                    0xd10043ff
 *   br xN                              0xd61f0000 | N << 5
 * The VM's fixed registers (vm_arm64.dasc): BASE x19, GLREG x22 (global_State), LREG x23.
 */
#include <string.h>

#include "interp/luajit/luajit_vm_arm64.h"

#define REG_BASE 19
#define REG_GL 22
#define REG_L 23
#define JLOOP_BACK 12 /* words before the trace's `sub sp` searched for its loads */

static uint32_t word_at(const uint8_t *code, size_t i)
{
	uint32_t w;

	memcpy(&w, code + 4 * i, 4);
	return w;
}

static bool is_mov_from_sp(uint32_t w)
{
	return (w & ~0x1fu) == 0x910003e0;
}

/* ldr/str xT, [xN, #imm]: `load` picks which; the byte offset, or -1 */
static long ls_imm(uint32_t w, bool load, unsigned n, unsigned t)
{
	if ((w & 0xffc00000) != (load ? 0xf9400000 : 0xf9000000) || (w >> 5 & 31) != n ||
	    (w & 31) != t)
		return -1;
	return (long)(w >> 10 & 0xfff) * 8;
}

unsigned lj_vm_arm64__cframe_offset(const uint8_t *code, size_t sz)
{
	size_t i, k, n = sz / 4;
	long off, seen = -1;
	int stores = 0;

	for (i = 0; i < n; i++) {
		uint32_t w = word_at(code, i);

		if (!is_mov_from_sp(w))
			continue;
		for (k = i + 1; k < n && k <= i + 3; k++) {
			off = ls_imm(word_at(code, k), false, REG_L, w & 31);
			if (off < 0)
				continue;
			if (seen >= 0 && off != seen)
				return 0;
			seen = off;
			stores++;
			break;
		}
	}
	return stores >= 2 && seen > 0 ? (unsigned)seen : 0;
}

int lj_vm_arm64__trace_offsets(const uint8_t *code, size_t sz, struct lj_trace_offsets_arm64 *out)
{
	size_t i, k, n = sz / 4;

	for (i = JLOOP_BACK; i + 1 < n; i++) {
		uint32_t br = word_at(code, i + 1), target = br >> 5 & 31, trace_reg = 32;
		long trace = -1, mcode = -1, jit_base = -1, off;

		if (word_at(code, i) != 0xd10043ff || (br & ~(31u << 5)) != 0xd61f0000)
			continue;
		/* backwards from the `sub sp`: the mcode load into the branch's register, the trace
		 * slot it loads from, then J->trace; jit_base's store anywhere in between */
		for (k = i; k-- > i - JLOOP_BACK;) {
			uint32_t w = word_at(code, k);

			if (mcode < 0 && (w & 0xffc00000) == 0xf9400000 && (w & 31) == target) {
				mcode = (long)(w >> 10 & 0xfff) * 8;
				trace_reg = w >> 5 & 31;
			} else if (mcode >= 0 && trace_reg < 32 && (w & 0xffe0fc00) == 0xf8607800 &&
				   (w & 31) == trace_reg) {
				trace_reg = 32 + (w >> 5 & 31); /* now: J->trace's register, + 32 */
			} else if (trace_reg >= 32 && trace < 0 &&
				   (off = ls_imm(w, true, REG_GL, trace_reg - 32)) >= 0) {
				trace = off;
			} else if ((off = ls_imm(w, false, REG_GL, REG_BASE)) >= 0) {
				jit_base = off;
			}
		}
		if (trace <= 0 || trace > 0xffff || jit_base <= 0 || jit_base > 0xffff ||
		    mcode < 16 || mcode > 0xff)
			continue;
		out->g_trace = (uint16_t)trace;
		out->g_jit_base = (uint16_t)jit_base;
		out->tr_mcode = (uint8_t)mcode;
		return 0;
	}
	return -1;
}
