/* BEAM's (Erlang/OTP's) part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/beam/walk.h) emits and what userspace (src/interp/beam/) tells it.
 *
 * The BEAM JIT (x86-64, OTP 24 and later, `emu_flavor jit`) runs Erlang code from anonymous
 * executable memory (a memfd mapped twice: writable and executable), registered as the
 * process's code range, on the Erlang process's own stack: in JIT code rsp is the process's
 * stack pointer (E), the stack holds the process's y registers and its continuation pointers
 * (return addresses, 4-byte aligned: a word whose two low bits are 0 is a CP, as the emulator's
 * own stack dumps read it; terms never have them), and its bottom CP is the emulator's
 * `beam_normal_exit`. rbx always holds the scheduler's registers (ErtsSchedulerRegisters, at
 * its x register array), which `process_main` (JIT code, entered from the C wrapper of the same
 * name by a tail jump) allocated on the scheduler thread's stack: the return address into the
 * scheduler's C code (the call of process_main in sched_thread_func) lies a fixed distance
 * above it, up to the 64-byte alignment of the struct. C called from JIT code (BIFs, NIFs,
 * erts_schedule) runs on that thread stack just below the struct (the runtime stack).
 *
 * The emulator flavour (`emu`: OTP 23, and any build without the JIT) runs Erlang code in C,
 * in process_main, the interpreter loop: its file range (interp_file.range_start/end) is that
 * function. Loaded code is threaded code in the emulator's heap; the loop keeps the current
 * instruction pointer I in rbx and the process's stack pointer E in r13 (register variables of
 * beam_emu.c on x86-64; Debian's gcc keeps E there throughout but uses rbx as scratch inside
 * many instructions, I then in rbp or r8: measured), and a call pushes its CP on that stack
 * (OTP 23 has no CP register), down to the process's first CP, &beam_apply[1] (its normal
 * exit). When the sample's own registers are the loop's (the loop is the leaf frame), the walk
 * emits I (rbx, else rbp, else r8: the first within the span of the loaded code, code_lo/hi,
 * that holds an opcode, an address in the loop), then every CP up the stack within that span
 * (and the low-two-bits rule) until that exit, and the native walk goes on through the loop.
 * From a native callee of the loop (a BIF, the scheduler) r13 is not known: a counted marker.
 * An emulator whose layout userspace did not check gets the interpreter marker.
 *
 * A FRAME_KIND_BEAM frame:
 *   addr    = the pc in Erlang code (the return address for callers: CPs)
 *   file_id = (__u64)sub << 60 | (__u64)INTERP_POS_NONE << 32, sub an enum beam_sub.
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum beam_marker.
 */
#ifndef STACKSCOPE_BEAM_ABI_H
#define STACKSCOPE_BEAM_ABI_H

#include "counter_list.h"

#define BEAM_SCHED_RET_MAX 2 /* call sites of process_main (normal schedulers: one) */

enum beam_sub {
	BEAM_SUB_JIT = 1, /* a pc in JIT code: module code or the emulator's shared code */
	BEAM_SUB_EMU = 2, /* a pc in the emulator flavour's loaded (threaded) code */
};

enum beam_marker {
	BEAM_MARKER_UNSUPPORTED = 1,  /* an emulator the walk does not know: ends the stack */
	BEAM_MARKER_TRUNCATED = 2,    /* frame budget (native reserve) reached */
	BEAM_MARKER_NO_SCHEDULER = 3, /* the scheduler's native frames could not be found */
	BEAM_MARKER_STACK_LOST = 4,   /* Erlang frames lost: the process stack did not scan */
	BEAM_MARKER_FROM_NATIVE = 5,  /* Erlang frames of a process running native code: not read */
	BEAM_MARKER_INTERPRETER = 6,  /* the emulator flavour's loop of a layout not checked:
				       * Erlang frames not read, the native walk goes on */
	BEAM_MARKER_NO_IP = 7,        /* ... its instruction pointer in none of its registers */
};

/* interp_proc.beam: one emulator process. */
struct beam_proc_abi {
	__u64 sched_ret[BEAM_SCHED_RET_MAX]; /* return addresses of the calls to process_main
					      * (absolute; 0: none) */
	__u64 normal_exit; /* the CP at the bottom of every process's stack (beam_normal_exit;
			    * the emulator flavour's &beam_apply[1]) */
	__u64 sched_lo, sched_hi; /* the JIT's process_main (global::process_main): the
				   * scheduler loop, [lo, hi) absolute (0, 0: not known yet) */
	__u32 sched_win; /* the window searched for a sched_ret: rbx + sched_win, upwards */
	__u8 supported;  /* 0: marker frames, the native walk ends in JIT code */
	__u8 ready;      /* 1: normal_exit known (the emulator has loaded its code) */
	__u8 emu;        /* 1: the emulator flavour (its interpreter loop walked) */
	__u8 pad[1];
	__u64 code_lo, code_hi;     /* the emulator flavour: the span of its modules' loaded code */
	__u64 shared_lo, shared_hi; /* the JIT's shared code (the "global" record: the fragments
				     * module code calls), [lo, hi) absolute (0, 0: not known yet) */
};

/* Why Erlang frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define BEAM_COUNTERS(X)                                                                 \
	/* Erlang frames emitted */                                                      \
	X(BEAM_COUNTER_FRAMES, "erlang frames")                                          \
	/* walks that went from Erlang code back to the scheduler's native frames */     \
	X(BEAM_COUNTER_SCHEDULER, "back to the scheduler")                               \
	/* JIT pc, but no interp_procs entry */                                          \
	X(BEAM_COUNTER_NO_PROC, "no process")                                            \
	/* the emulator's code not known yet */                                          \
	X(BEAM_COUNTER_NOT_READY, "emulator not known yet")                              \
	/* emulator refused (marker) */                                                  \
	X(BEAM_COUNTER_UNSUPPORTED, "unsupported")                                       \
	/* rbx (the scheduler's registers) not known at the JIT frame (marker) */        \
	X(BEAM_COUNTER_NO_REGISTERS, "scheduler registers unknown")                      \
	/* no call of process_main found above the registers (marker) */                 \
	X(BEAM_COUNTER_NO_SCHEDULER, "scheduler frame not found")                        \
	/* stack words unreadable */                                                     \
	X(BEAM_COUNTER_READ_FAILED, "unreadable")                                        \
	/* the process stack scanned this far without a CP (marker) */                   \
	X(BEAM_COUNTER_STACK_LOST, "process stack lost")                                 \
	/* JIT frames reached from native code: the process's other frames not read */   \
	X(BEAM_COUNTER_FROM_NATIVE, "entered from native code")                          \
	/* native code called by the scheduler's own JIT code (no Erlang caller) */      \
	X(BEAM_COUNTER_SCHEDULER_CODE, "called by the scheduler loop")                   \
	/* cut at the native reserve (marker) */                                         \
	X(BEAM_COUNTER_TRUNCATED, "truncated")                                           \
	/* the emulator flavour's interpreter loop, not walked (marker) */               \
	X(BEAM_COUNTER_INTERPRETER, "interpreter loop (emu flavour)")                    \
	/* the emulator flavour's loop walked from its own registers */                  \
	X(BEAM_COUNTER_EMU_WALKS, "interpreter loop walked")                             \
	/* its walks that reached the process's first CP (its normal exit) */            \
	X(BEAM_COUNTER_EMU_EXIT, "interpreter walks to the normal exit")                 \
	/* ... and that found no instruction pointer in the loop's registers (marker) */ \
	X(BEAM_COUNTER_EMU_NO_IP, "interpreter pc not found")

enum beam_counter {
	BEAM_COUNTERS(SS_COUNTER_ENUM) BEAM_COUNTER_CNT,
};

#endif
