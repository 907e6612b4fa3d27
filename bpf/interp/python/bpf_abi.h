/* CPython's part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/python/walk.h) emits and what userspace (src/interp/python/) tells it.
 *
 * A FRAME_KIND_CPYTHON frame is emitted just before (leaf side of) the native
 * _PyEval_EvalFrameDefault frame that runs it, so the stack reads interleaved:
 * ... native callee, Python frames of this eval activation, the eval frame, its callers ...
 *   addr    = address of the PyCodeObject in the sampled process (pid-specific)
 *   file_id = (__u64)instruction byte offset << 32 | cookie
 *             offset: bytes from the start of the bytecode (0xffffffff: not started);
 *             cookie: (co_firstlineno + (co_argcount << 24)) as read by eBPF, so userspace
 *             can tell a code object freed and reused at the same address.
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum py_marker.
 */
#ifndef STACKSCOPE_PYTHON_ABI_H
#define STACKSCOPE_PYTHON_ABI_H

#include "counter_list.h"

#define PY_INSTR_NONE 0xffffffffu
#define PY_NO_OFFSET 0xffff

enum py_marker {
	PY_MARKER_UNSUPPORTED = 1, /* eval loop of a Python this build does not understand */
	PY_MARKER_TRUNCATED = 2,   /* Python frames stopped: frame budget (native reserve) */
	PY_MARKER_READ_FAILED = 3, /* a frame or code object could not be read: frames lost */
};

/* How a frame's instruction position is stored. */
enum py_instr_kind {
	PY_INSTR_LASTI_BYTES = 0, /* int f_lasti, bytes (3.8, 3.9) */
	PY_INSTR_LASTI_UNITS = 1, /* int f_lasti, 2-byte code units (3.10) */
	PY_INSTR_POINTER = 2,     /* pointer into co_code_adaptive (3.11+: prev_instr/instr_ptr) */
};

/* Which Python frames one native eval-loop activation runs. */
enum py_entry_kind {
	PY_ENTRY_EACH = 0, /* <= 3.10: exactly one frame per activation */
	PY_ENTRY_FLAG = 1, /* 3.11: frames up to and including the one with is_entry set */
	PY_ENTRY_SHIM = 2, /* 3.12+: frames up to the activation's entry frame (owner
			     * >= PY_OWNER_ENTRY), which is skipped */
};

/* Where the gilstate pthread key is, whose libc TSD slot holds the thread's PyThreadState. */
enum py_tstate_kind {
	PY_TSTATE_TSS = 0, /* in Py_tss_t { int initialized; pthread_key_t key } at tss
			    * (3.7-3.14: _PyRuntime's autoTSSkey) */
	PY_TSTATE_KEY = 1, /* pthread key as an int at tss, -1 until set (3.6: autoTLSkey) */
};

/* A frame's owner from this value up is its activation's entry frame (3.12, 3.13:
 * FRAME_OWNED_BY_CSTACK = 3; 3.14: FRAME_OWNED_BY_INTERPRETER = 3, CSTACK = 4 unused), as
 * CPython's own readers test it (owner >= 3: not a Python frame).
 */
#define PY_OWNER_ENTRY 3
#define PY_FRAME_READ_MAX 128

/* Byte offsets the eBPF walk needs, per CPython minor version (PY_NO_OFFSET: absent). */
struct py_offsets {
	__u16 ts_interp;    /* PyThreadState.interp */
	__u16 ts_frame;     /* .frame (<= 3.10), .cframe (3.11, 3.12), .current_frame */
	__u16 cframe_frame; /* _PyCFrame.current_frame, or PY_NO_OFFSET */
	__u16 fr_back;      /* f_back / previous */
	__u16 fr_code;      /* f_code / f_executable */
	__u16 fr_instr;     /* f_lasti / prev_instr / instr_ptr */
	__u16 fr_entry;     /* is_entry (3.11) or owner (3.12+), or PY_NO_OFFSET */
	__u16 fr_read_sz;   /* bytes of a frame to read (<= PY_FRAME_READ_MAX) */
	__u16 co_argcount;
	__u16 co_firstlineno;
	__u16 co_code;     /* co_code_adaptive (3.11+), else 0 */
	__u8 instr_kind;   /* enum py_instr_kind */
	__u8 entry_kind;   /* enum py_entry_kind */
	__u8 tstate_kind;  /* enum py_tstate_kind */
	__u8 fr_code_tags; /* tag bits of f_executable, cleared before use (3.14: a _PyStackRef) */
};

/* interp_file.py: the interpreter binary's layout (its eval loop is interp_file's range). */
struct py_file_abi {
	struct py_offsets off;
};

/* interp_proc.py: where the runtime is in one process. */
struct py_proc_abi {
	__u64 interp_head; /* absolute address of the first interpreter's pointer
			    * (_PyRuntime.interpreters.head; 3.6: interp_head) */
	__u64 tss;         /* absolute address of the gilstate key (enum py_tstate_kind) */
	__s32 tsd_off; /* libc TSD: the value of pthread key k (< 32) is at fsbase + tsd_off + 16 k
			* (fsbase: the thread pointer; below it on arm64, src/interp/common/glibc_tsd.h) */
	__u32 pad;
	/* The main thread's thread pointer, once its thread state is found (0: not yet), used
	 * for the main thread instead of the task's copy: arm64's copy (thread.uw.tp_value) is
	 * written only when the thread is switched out, and an exec keeps the old image's, since
	 * glibc sets tpidr_el0 from user space: a main thread not switched out since its exec
	 * read its parent's and had no Python frame (none counted but "unreadable").
	 */
	__u64 main_tp;
};

/* Why Python frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define PY_COUNTERS(X)                                               \
	/* samples with at least one eval-loop frame */              \
	X(PY_COUNTER_STACKS, "stacks in an eval loop")               \
	/* Python frames emitted */                                  \
	X(PY_COUNTER_FRAMES, "frames")                               \
	/* eval loop, but the pid has no interp_procs entry (yet) */ \
	X(PY_COUNTER_NO_PROC, "no process")                          \
	/* eval loop of an unsupported version (marker emitted) */   \
	X(PY_COUNTER_UNSUPPORTED, "unsupported")                     \
	/* thread-state key not initialised or >= 32 */              \
	X(PY_COUNTER_TSS_UNSET, "tss unset")                         \
	/* the thread has no thread state (not a Python thread) */   \
	X(PY_COUNTER_NO_TSTATE, "no thread state")                   \
	/* thread state's interp != the runtime's: wrong layout */   \
	X(PY_COUNTER_BAD_TSTATE, "bad thread state")                 \
	/* runtime, thread state, frame or code unreadable */        \
	X(PY_COUNTER_READ_FAILED, "unreadable")                      \
	/* an eval activation with no Python frame left to show */   \
	X(PY_COUNTER_RUN_EMPTY, "empty run")                         \
	/* Python frames cut at the native reserve (marker) */       \
	X(PY_COUNTER_TRUNCATED, "truncated")

enum py_counter {
	PY_COUNTERS(SS_COUNTER_ENUM) PY_COUNTER_CNT,
};

#endif
