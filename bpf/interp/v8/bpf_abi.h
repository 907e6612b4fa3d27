/* V8's (Node.js's) part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/v8/walk.h) emits and what userspace (src/interp/v8/) tells it.
 *
 * V8 runs JavaScript from two places, both walked by frame pointer (V8 code always keeps
 * one): its embedded builtins (the interpreter's entry trampoline and bytecode handlers, the
 * JavaScript builtins such as Array.prototype.sort) in node's own .text, registered as the
 * file range of the node binary, and its JIT code (baseline, Maglev, TurboFan) in anonymous
 * memory, registered as the process's code range. Either way the walk emits the frame whose
 * frame pointer is rbp and moves the native cursor to its caller (fp chain).
 *
 * A FRAME_KIND_V8 frame:
 *   addr    = the SharedFunctionInfo (tagged pointer) of the frame's JSFunction
 *   file_id = (__u64)sub << 60 | (__u64)pos << 32 | cookie, sub an enum v8_sub:
 *             interpreted: pos = bytecode offset (V8_POS_NONE: unknown);
 *             baseline:    pos = (Code* >> 3 & 0xff) << V8_BASELINE_CHECK_SHIFT | pc offset
 *                          in the function's baseline code (the return address for
 *                          callers): userspace maps it to a bytecode offset through the
 *                          code's bytecode-offset table, if the function's baseline code
 *                          is still the one eBPF saw (those 8 bits of its address agree);
 *             compiled:    pos = V8_POS_NONE (JS builtins: the function only);
 *             JIT:         pos = the low 28 bits of the pc (the return address - 1 for
 *                          callers) in JIT code that is not the function's current Code
 *                          (OSR code, baseline or optimised code replaced while on the
 *                          stack): userspace completes the pc from the process's code
 *                          ranges (V8's is 128 MiB) and finds the code object holding it
 *                          (its InstructionStream header) for the lines;
 *             cookie = (__u32)(name_or_scope_info ^ script_or_debug_info >> 3) as read by
 *             eBPF from the SharedFunctionInfo: userspace reads them again and shows
 *             "[v8: stale]" when they differ (the object moved or its memory was reused).
 * A V8_SUB_OPTIMIZED frame (Maglev or TurboFan code holding the pc) names its code instead:
 *   addr    = the Code (tagged pointer) of the frame's JSFunction
 *   file_id = sub << 60 | pc offset in its instructions << 32 (the return address - 1 for
 *             callers) | cookie = (__u32)Code::instruction_start (V8 10, whose
 *             instructions follow the Code's header: (__u32)(that start ^ instruction
 *             size << 16), so that other code at a reused address is told): userspace finds the
 *             function, its inlined functions and their lines through the Code's
 *             source-position table and deoptimisation data, once the Code at addr still
 *             has that instruction start (else "[v8: stale]").
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum v8_marker.
 */
#ifndef STACKSCOPE_V8_ABI_H
#define STACKSCOPE_V8_ABI_H

#include "counter_list.h"

#define V8_POS_NONE 0xfffffffu /* 28 bits */

enum v8_sub {
	V8_SUB_INTERPRETED = 1,
	V8_SUB_COMPILED = 2,
	V8_SUB_BASELINE = 3,
	V8_SUB_OPTIMIZED = 4,
	V8_SUB_JIT = 5,
};

#define V8_BASELINE_CHECK_SHIFT 20
#define V8_BASELINE_PC_MAX (1u << V8_BASELINE_CHECK_SHIFT) /* larger code: no line */

enum v8_marker {
	V8_MARKER_UNSUPPORTED = 1, /* node's V8 metadata lacks what the walk needs */
	V8_MARKER_TRUNCATED = 2,   /* frame budget (native reserve) reached */
	V8_MARKER_STUB = 3,        /* a V8 frame of no JS function (stub, entry, exit) in JIT code;
				  * bits 8-15: its frame-type marker (StackFrame::Type << 1) */
	V8_MARKER_BAD_FRAME = 4,   /* JIT code whose frame holds no JS function nor marker */
};

/* interp_proc.v8: one Node process. Every offset comes from the binary's v8dbg_* postmortem
 * symbols (src/interp/v8/v8.c says which; fallbacks by V8 version are named there).
 */
struct v8_proc_abi {
	__u64 handlers_lo, handlers_hi; /* the bytecode handlers (absolute): r9 is the offset */
	__u8 supported;                 /* 0: marker frames, native only */
	__s8 fp_context;                /* frame slots, bytes from fp (v8dbg_off_fp_*) */
	__s8 fp_function;
	__s8 fp_bytecode_array;
	__s8 fp_bytecode_offset;
	__u8 map_type;        /* Map::instance_type (u16) */
	__u8 fn_shared;       /* JSFunction::shared */
	__u8 sfi_name;        /* SharedFunctionInfo::name_or_scope_info */
	__u8 sfi_script_word; /* SharedFunctionInfo::script_or_debug_info, in words after name */
	__u8 bc_data;         /* BytecodeArray data: offsets in frames are from the tagged array */
	__u16 type_fn_lo;     /* JSFunction instance types [lo, hi] */
	__u16 type_fn_hi;
	__u16 type_bytecode; /* BYTECODE_ARRAY_TYPE */
	__u8 code_ok;        /* the Code offsets below are known: baseline lines */
	__u8 fn_code;        /* JSFunction::code (0: none, V8 13.6: JIT frames found by pc) */
	__u8 code_start;     /* Code::instruction_start (u64); with code_inline, where the 4 words
			      * holding flags and size start */
	__u8 code_flags;     /* Code::flags (u32; kind in kind_mask), bytes after code_start */
	__u8 code_size;      /* Code::instruction_size (i32), bytes after code_start */
	__u8 code_inline;    /* 0, or V8 10: the Code holds its instructions from this many bytes
			      * after its start (its header size; no instruction-start field) */
	__u8 kind_mask;      /* v8dbg_CodeKindFieldMask (shift 0) */
	__u8 kind_baseline;  /* v8dbg_CodeKindBaseline */
	__u8 kind_opt_lo;    /* optimised code kinds [lo, hi] (Maglev, TurboFan); 0: none */
	__u8 kind_opt_hi;
	__u8 kind_xor;    /* the kind compared is (flags & kind_mask) ^ kind_xor (V8 7.8
			      * numbers its optimised code 0) */
	__u8 bc_reg_r14;  /* the handlers' BytecodeArray register is r14 (V8 7.8), not r12 */
	__u8 entry_sp;    /* arm64: an entry frame's (JSEntry's) caller has sp = fp + entry_sp
			      * (the callee-saved registers lie above its frame record); 0: the
			      * native step (fp + 16, x86-64) */
	__u8 entry_types; /* bit N: frame-type marker N << 1 is an entry frame */
};

/* Why JavaScript frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define V8_COUNTERS(X)                                               \
	/* interpreted frames emitted */                             \
	X(V8_COUNTER_INTERPRETED, "interpreted frames")              \
	/* optimised or builtin JS frames emitted */                 \
	X(V8_COUNTER_COMPILED, "compiled frames")                    \
	/* baseline (Sparkplug) frames emitted */                    \
	X(V8_COUNTER_BASELINE, "baseline frames")                    \
	/* stub / entry / exit frames in JIT code */                 \
	X(V8_COUNTER_STUB, "stub frames")                            \
	/* V8 code, but no interp_procs entry */                     \
	X(V8_COUNTER_NO_PROC, "no process")                          \
	/* metadata incomplete (marker) */                           \
	X(V8_COUNTER_UNSUPPORTED, "unsupported")                     \
	/* frame or object unreadable */                             \
	X(V8_COUNTER_READ_FAILED, "unreadable")                      \
	/* no JS function nor marker in a JIT frame (marker) */      \
	X(V8_COUNTER_BAD_FRAME, "unknown frames")                    \
	/* caller not found: the stack ends there */                 \
	X(V8_COUNTER_NO_CALLER, "caller not found")                  \
	/* cut at the native reserve (marker) */                     \
	X(V8_COUNTER_TRUNCATED, "truncated")                         \
	/* leaf in a bytecode handler: offset from r9 */             \
	X(V8_COUNTER_LEAF_OFFSET, "leaf offsets from r9")            \
	/* innermost frame not built yet: skipped */                 \
	X(V8_COUNTER_PROLOGUE, "frames in their prologue (skipped)") \
	/* optimised frames emitted with their code (lines) */       \
	X(V8_COUNTER_OPTIMIZED, "optimised frames")                  \
	/* leaf in a builtin without a frame: its caller by [sp] */  \
	X(V8_COUNTER_FRAMELESS, "frameless builtins at the leaf")    \
	/* JIT frames not running their function's code (by pc) */   \
	X(V8_COUNTER_JIT, "JIT frames by pc")

enum v8_counter {
	V8_COUNTERS(SS_COUNTER_ENUM) V8_COUNTER_CNT,
};

#endif
