/* LuaJIT 2.1's part of the eBPF/userspace ABI (included by abi.h): what the walk
 * (bpf/interp/luajit/walk.h) emits and what userspace (src/interp/luajit/) tells it.
 *
 * LuaJIT runs Lua in its VM, hand-written assembly (buildvm's lj_vm.S) that userspace finds by
 * its one FDE (CFA = rsp + 80, rbp/rbx/r15/r14 saved below it): the interpreter runs on one C
 * frame per entry (lj_vm_pcall, lj_vm_call, lj_vm_cpcall, lj_vm_resume) whose rsp the entry
 * stores in its lua_State's `cframe` and whose SAVE_L slot holds that lua_State; its leaf
 * helpers (vm_mod, lj_vm_floor, lj_vm_next, ...) lie in the same FDE but are called (CFA = rsp
 * + 8), and JIT traces (machine code in anonymous memory, the process's code ranges) run on
 * the interpreter's frame, rsp lowered by the trace's spill area (a multiple of 16).
 * The walk tells them apart by that link: a C frame of the VM at c is one whose SAVE_L slot
 * holds an L with (L->cframe & ~3) == c (the innermost C frame of that L; outer ones through
 * the chain of SAVE_CFRAME slots).
 *
 * The Lua frames a VM frame runs come from its lua_State's stack: the innermost from the
 * interpreter's registers at the leaf (BASE in rdx, PC in rbx), else L->base and the C frame's
 * SAVE_PC (the VM called C), or, in trace code, global_State.jit_base and the running trace's
 * (vmstate) start pc; then each frame's link (base[-1]: a return pc into its Lua caller, or a
 * delta and type) down to the frame entered from C (FRAME_C, FRAME_CP), where the VM frame's
 * run ends and the next VM frame's begins (the same lua_State; another one starts at its
 * L->base).
 *
 * A FRAME_KIND_LUAJIT frame:
 *   addr    = the function's GCproto (bits 0-46) | caller_pos << 47
 *   file_id = (__u64)sub << 60 | (__u64)pos << 32 | cookie, sub an enum luajit_sub, pos the
 *             bytecode index of the frame's current instruction (LUAJIT_POS_NONE: unknown),
 *             cookie = luajit_cookie(chunkname, firstline) as eBPF read them from the proto:
 *             userspace reads them again and shows "[luajit: stale]" when they differ.
 *   flags   = the caller's GCproto minus this one's, in 8-byte units (signed), when
 *             caller_pos (17 bits) is not 0: then the caller is the Lua frame below whose
 *             instruction caller_pos - 1 called this one (FRAME_LUA) or ran it as a
 *             metamethod (FRAME_CONT), which names it as lj_debug_funcname does (userspace
 *             reads that caller's bytecode: a proto too far, an index too big: no name).
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum luajit_marker.
 */
#ifndef STACKSCOPE_LUAJIT_ABI_H
#define STACKSCOPE_LUAJIT_ABI_H

#include "counter_list.h"

#define LUAJIT_CFRAME_SIZE 80 /* the VM's C frame: CFA = its rsp + 80 */
#define LUAJIT_CF_PREV 32     /* SAVE_CFRAME: the L's previous cframe (u64) */
#define LUAJIT_CF_RBX 56      /* saved rbx, rbp, then the return address */
#define LUAJIT_CF_RBP 64
#define LUAJIT_CF_RET 72
#define LUAJIT_SPADJ_SLOTS 64 /* a trace's spill area: at most 64 * 16 bytes searched */
#define LUAJIT_CHAIN_MAX 8    /* C frames of one L followed to an outer VM frame */

#define LUAJIT_POS_NONE 0xfffffffu       /* 28 bits */
#define LUAJIT_FN_READ 16                /* GCfuncL bytes read: through ffid */
#define LUAJIT_CALLER_POS_MAX (1u << 17) /* caller_pos: the frame address's top 17 bits */
#define LUAJIT_PROTO_MASK ((1ull << 47) - 1)

enum luajit_sub {
	LUAJIT_SUB_INTERPRETED = 1, /* a Lua frame (pos: its current instruction) */
	LUAJIT_SUB_TRACE = 2,       /* the frame a JIT trace started in (pos: its start) */
};

static inline __u32 luajit_cookie(__u64 chunkname, __u32 firstline)
{
	return (__u32)chunkname ^ (firstline * 2654435761u);
}

enum luajit_marker {
	LUAJIT_MARKER_UNSUPPORTED = 1, /* the VM's layout did not check out */
	LUAJIT_MARKER_LUA = 2,         /* Lua frames of this VM frame (not read) */
	LUAJIT_MARKER_TRACE = 3,       /* a JIT trace (not read) */
	LUAJIT_MARKER_NO_FRAME = 4,    /* trace code whose VM frame was not found: the stack ends */
	LUAJIT_MARKER_BAD_STACK = 5,   /* a Lua frame unreadable or not a function's */
	LUAJIT_MARKER_TRUNCATED = 6,   /* frame budget (native reserve) reached */
};

/* interp_proc.luajit: one process's VM. */
struct luajit_proc_abi {
	__u64 vm_lo, vm_hi; /* the VM's code (absolute) */
	__u8 supported;     /* 0: markers only */
	__u8 l_slot;        /* SAVE_L: bytes above the C frame's rsp */
	__u8 l_size;        /* 8 (GC64) or 4 (32-bit GC references) */
	__u8 l_cframe;      /* offsetof(lua_State, cframe) */
	__u8 gc64;          /* 64-bit references, two slots per frame (LJ_FR2) */
	__u8 l_base;        /* offsetof(lua_State, base) */
	__u8 l_glref;       /* offsetof(lua_State, glref) */
	__u8 fn_ffid;       /* GCfuncL: ffid (0: a Lua function) */
	__u8 fn_pc;         /* GCfuncL: pc, its bytecode (right after its GCproto) */
	__u8 pt_size;       /* sizeof(GCproto) */
	__u8 pt_sizebc;     /* GCproto: sizebc, chunkname, firstline */
	__u8 pt_chunkname;
	__u8 pt_firstline;
	__u8 tr_startpc; /* GCtrace: startpc */
	__u16 g_vmstate; /* global_State: vmstate, jit_base, and J->trace (0: unknown: traces
			     * get their marker only) */
	__u16 g_jit_base;
	__u16 g_trace;
	__u8 pad2[4];
};

/* Why Lua frames or the native walk through LuaJIT went wrong, by reason (the runtime's slice
 * of "interp_counters").
 */
#define LUAJIT_COUNTERS(X)                                                 \
	/* a VM C frame checked out (its Lua marker emitted) */            \
	X(LUAJIT_COUNTER_VM_FRAMES, "VM frames")                           \
	/* a leaf helper of the VM's FDE (CFA = rsp + 8) */                \
	X(LUAJIT_COUNTER_HELPERS, "leaf helpers")                          \
	/* a JIT trace unwound to its VM frame */                          \
	X(LUAJIT_COUNTER_TRACES, "JIT traces")                             \
	/* LuaJIT code, but no interp_procs entry */                       \
	X(LUAJIT_COUNTER_NO_PROC, "no process")                            \
	/* layout did not check out (marker) */                            \
	X(LUAJIT_COUNTER_UNSUPPORTED, "unsupported")                       \
	/* a VM-range pc that is no VM frame nor leaf helper: FDE rule */  \
	X(LUAJIT_COUNTER_VM_UNKNOWN, "VM code outside a frame (FDE rule)") \
	/* trace code whose VM frame was not found (marker, stack ends) */ \
	X(LUAJIT_COUNTER_NO_FRAME, "traces without a VM frame")            \
	/* Lua frames emitted */                                           \
	X(LUAJIT_COUNTER_FRAMES, "Lua frames")                             \
	/* a Lua frame unreadable or not a function's (marker) */          \
	X(LUAJIT_COUNTER_BAD_STACK, "bad Lua stack")                       \
	/* the innermost frame's pc outside its function: no line */       \
	X(LUAJIT_COUNTER_NO_PC, "innermost pc unknown")                    \
	/* cut at the native reserve (marker) */                           \
	X(LUAJIT_COUNTER_TRUNCATED, "truncated")

enum luajit_counter {
	LUAJIT_COUNTERS(SS_COUNTER_ENUM) LUAJIT_COUNTER_CNT,
};

#endif
