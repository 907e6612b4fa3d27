/* LuaJIT 2.1's arm64 VM read from its code (luajit_vm_arm64.c): what luajit.c cannot take from
 * the x86-64 patterns there. buildvm's arm64 VM (vm_arm64.dasc) is always GC64.
 */
#ifndef STACKSCOPE_LUAJIT_VM_ARM64_H
#define STACKSCOPE_LUAJIT_VM_ARM64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the trace walk needs: global_State's J->trace and jit_base, GCtrace's mcode. */
struct lj_trace_offsets_arm64 {
	uint16_t g_trace, g_jit_base;
	uint8_t tr_mcode;
};

/* offsetof(lua_State, cframe) as the VM's C-frame entries store it (`mov xT, sp; ... str xT,
 * [x23, #off]`, x23 its lua_State), when all such stores agree and there are at least two
 * (lj_vm_pcall/lj_vm_call and lj_vm_cpcall); else 0.
 */
unsigned lj_vm_arm64__cframe_offset(const uint8_t *code, size_t sz);

/* The offsets BC_JLOOP's code uses (`ldr xA, [x22, #trace]; ... ldr xT, [xA, xN, lsl #3];
 * ... ldr xM, [xT, #mcode]; ... str x19, [x22, #jit_base]; ... sub sp, sp, #16; br xM`, x22
 * the global_State, x19 BASE) into out: 0, or -1 when no such sequence is found (PAUTH's
 * `braa` neither: its slot is mcauth, not mcode).
 */
int lj_vm_arm64__trace_offsets(const uint8_t *code, size_t sz, struct lj_trace_offsets_arm64 *out);

#endif
