/* PHP's (Zend engine's) part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/php/walk.h) emits and what userspace (src/interp/php/) tells it.
 *
 * A FRAME_KIND_PHP frame is emitted just before (leaf side of) the native execute_ex frame
 * that runs it, so the stack reads interleaved:
 * ... native callee, PHP frames of this execute_ex activation, execute_ex, its callers ...
 *   addr    = address of the zend_function in the sampled process (pid-specific); for
 *             file-level code (no function name: {main}, include, eval) the address of its
 *             op_array.filename zend_string instead (PHP_FRAME_FILE), as that op_array may
 *             be a per-request copy freed before userspace reads it (opcache's main script)
 *   file_id = lineno << 40 | call flags << 32 | cookie
 *             lineno: zend_op.lineno of the frame's current opline (0: unknown, internal
 *             function); call flags: enum php_frame_flag; cookie: the low 32 bits of
 *             op_array.opcodes (user code) or of common.function_name (internal function), as
 *             read by eBPF, so userspace can tell a zend_function freed and reused.
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum php_marker, and for
 * PHP_MARKER_UNSUPPORTED also the version refused (PHP_MARKER_VERSION: "8.1", "8.2 ZTS").
 */
#ifndef STACKSCOPE_PHP_ABI_H
#define STACKSCOPE_PHP_ABI_H

#include "counter_list.h"

#define PHP_FRAME_LINE_SHIFT 40
#define PHP_FRAME_FLAGS_SHIFT 32
#define PHP_FRAME_LINE_MAX 0xffffffu

enum php_marker {
	PHP_MARKER_UNSUPPORTED = 1, /* execute_ex of a PHP this build does not understand */
	PHP_MARKER_TRUNCATED = 2,   /* PHP frames stopped: frame budget (native reserve) */
	PHP_MARKER_READ_FAILED = 3, /* an execute_data or zend_function could not be read */
	PHP_MARKER_BAD_FRAME = 4,   /* a frame's function has an impossible type: wrong layout */
	PHP_MARKER_JIT_FRAME = 5,   /* a pc in opcache's JIT code whose frame could not be placed
				     * (not on execute_ex's frame): the stack ends there */
	PHP_MARKER_MIXED = 6,       /* PHP frames below another interpreter's in one stack: not
				     * walked (the walks share one cursor's memory) */
};

/* PHP_MARKER_UNSUPPORTED's file_id: the marker, the file's major and minor, 1 << 24 for a ZTS
 * build.
 */
#define PHP_MARKER_VERSION(major, minor, zts)                                        \
	((__u64)(major) << 16 | (__u64)(minor) << 8 | (__u64)((zts) ? 1 : 0) << 24 | \
	 PHP_MARKER_UNSUPPORTED)
#define PHP_MARKER_CODE(file_id) ((file_id)&0xff)

/* What a frame's call info says (the top bits of EX(This).u1.type_info), as emitted. */
enum php_frame_flag {
	PHP_FRAME_CODE = 1 << 0, /* ZEND_CALL_CODE: file-level code ({main}, include, eval) */
	PHP_FRAME_TOP = 1 << 1,  /* ZEND_CALL_TOP: entered from C (zend_execute_ex, callbacks) */
	PHP_FRAME_REG = 1 << 2,  /* the opline came from the VM's register (exact), not memory */
	PHP_FRAME_FILE = 1 << 3, /* addr is the filename of file-level code (see above) */
	PHP_FRAME_EVAL = 1 << 4, /* with PHP_FRAME_FILE: eval()'d code */
};

/* Zend's own constants the walk needs (Zend/zend_compile.h, stable since PHP 7). */
#define PHP_ZEND_CALL_CODE (1u << 16)
#define PHP_ZEND_CALL_TOP (1u << 17)
#define PHP_ZEND_INTERNAL_FUNCTION 1
#define PHP_ZEND_USER_FUNCTION 2
#define PHP_ZEND_EVAL_CODE 4
#define PHP_EX_READ_SZ 56 /* bytes of a zend_execute_data read: up to prev_execute_data */
/* Bytes of a zend_function read: through op_array.opcodes (8.4: 104 + 8); an internal function
 * has 112 (7.4), 136 (8.2), 160 (8.4).
 */
#define PHP_FN_READ_SZ 112

/* Byte offsets the eBPF walk needs (x86-64, NTS builds; src/interp/php/php.c says where each
 * comes from).
 */
struct php_offsets {
	__u16 eg_current_execute_data; /* zend_executor_globals.current_execute_data */
	__u16 ex_opline;               /* zend_execute_data.opline */
	__u16 ex_func;                 /* .func */
	__u16 ex_type_info;            /* .This.u1.type_info (call info in its top 16 bits) */
	__u16 ex_prev;                 /* .prev_execute_data */
	__u16 fn_type;                 /* zend_function.type (u8) */
	__u16 fn_name;                 /* .common.function_name */
	__u16 op_last;                 /* .op_array.last (u32: number of opcodes) */
	__u16 op_opcodes;              /* .op_array.opcodes */
	__u16 op_filename;             /* .op_array.filename */
	__u16 zop_lineno;              /* zend_op.lineno (u32) */
	__u16 zop_size;                /* sizeof(zend_op) */
	__u8 vm_regs;                  /* 1: the VM keeps execute_data in r14 and the opline
					* in r15 (HYBRID/CALL VM with GCC global registers) */
	__u8 pad[3];
};

/* interp_file.php: the PHP binary's layout. interp_file's ranges: [0] execute_ex, [1]
 * zend_call_function (where C calls PHP functions; its internal callees are emitted there).
 */
struct php_file_abi {
	struct php_offsets off;
	__u8 zts; /* a ZTS build (unsupported: its executor globals are thread-local) */
	__u8 pad[7];
};

/* interp_proc.php: where the engine is in one process.
 *
 * opcache's JIT code (the process's "interp_code" range of runtime FRAME_KIND_PHP) runs on the
 * stack frame of the execute_ex activation that jumped into it (HYBRID VM: the VM dispatches
 * with `jmp *(%r15)`, and the JIT code neither pushes nor moves rsp: execute_ex reserves its
 * ZEND_VM_HYBRID_JIT_RED_ZONE_SIZE for it), so a pc there unwinds as execute_ex at its
 * dispatch jump: CFA = rsp + vm_frame; in a trace exit, jit_exit_save bytes lower. 0 in
 * vm_dispatch: JIT frames are not placed. On arm64 (PHP 8.2) execute_ex defines no red zone:
 * JIT code runs jit_spad bytes below execute_ex's sp (HYBRID_SPAD: `sub sp, sp, #32` at each
 * trace's or function's entry, `add` back before each `br` out), its trace exits save their
 * registers below that.
 */
struct php_proc_abi {
	__u64 executor_globals; /* absolute address of executor_globals (NTS) */
	__u64 vm_entry;         /* absolute address of execute_ex (return-site check) */
	__u64 vm_dispatch;      /* absolute address of execute_ex's first `jmp *(%r15)` */
	__u32 vm_frame;         /* bytes from execute_ex's sp at vm_dispatch to its CFA */
	/* Bytes a trace exit puts below execute_ex's sp before it calls zend_jit_trace_exit: the
	 * exit number its exit point pushes and the exit stub's save area for 16 general and 16
	 * xmm registers (src/interp/php/php.c's layouts: 256 in 8.2, 272 in 8.4).
	 */
	__u32 jit_exit_save;
	__u32 vm_ra;    /* bytes from execute_ex's sp at vm_dispatch to its saved return address
			 * (x86-64: vm_frame - 8; arm64: where its prologue stored x30) */
	__u32 jit_spad; /* arm64: bytes JIT code keeps below execute_ex's sp (0: none) */
};

/* Why PHP frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define PHP_COUNTERS(X)                                                \
	/* samples with at least one execute_ex frame */               \
	X(PHP_COUNTER_STACKS, "stacks in execute_ex")                  \
	/* PHP frames emitted */                                       \
	X(PHP_COUNTER_FRAMES, "frames")                                \
	/* execute_ex, but the pid has no interp_procs entry (yet) */  \
	X(PHP_COUNTER_NO_PROC, "no process")                           \
	/* execute_ex of an unsupported build (marker emitted) */      \
	X(PHP_COUNTER_UNSUPPORTED, "unsupported")                      \
	/* executor globals, a frame or its function unreadable */     \
	X(PHP_COUNTER_READ_FAILED, "unreadable")                       \
	/* a function of impossible type (marker emitted) */           \
	X(PHP_COUNTER_BAD_FRAME, "bad frame")                          \
	/* frames without a function (skipped) */                      \
	X(PHP_COUNTER_NO_FUNC, "frames without function")              \
	/* an execute_ex activation with no PHP frame left to show */  \
	X(PHP_COUNTER_RUN_EMPTY, "empty run")                          \
	/* PHP frames cut at the native reserve (marker) */            \
	X(PHP_COUNTER_TRUNCATED, "truncated")                          \
	/* lines taken from the VM's opline register */                \
	X(PHP_COUNTER_LINE_REG, "lines from the VM register")          \
	/* user frames whose opline was outside their function */      \
	X(PHP_COUNTER_LINE_NONE, "lines unknown")                      \
	/* pcs in JIT code placed on their execute_ex frame */         \
	X(PHP_COUNTER_JIT_FRAMES, "JIT frames")                        \
	/* pcs in JIT code not on an execute_ex frame (marker, end) */ \
	X(PHP_COUNTER_JIT_LOST, "JIT frames not placed")               \
	/* innermost frames running JIT code: line unknown */          \
	X(PHP_COUNTER_LINE_JIT, "lines in JIT code unknown")           \
	/* PHP below another interpreter's frames (marker) */          \
	X(PHP_COUNTER_MIXED, "below another interpreter")              \
	/* of JIT_FRAMES: in a trace exit (below the stub's saves) */  \
	X(PHP_COUNTER_JIT_EXIT, "JIT frames in a trace exit")

enum php_counter {
	PHP_COUNTERS(SS_COUNTER_ENUM) PHP_COUNTER_CNT,
};

#endif
