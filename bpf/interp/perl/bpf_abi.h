/* Perl 5's part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/perl/walk.h) emits and what userspace (src/interp/perl/) tells it.
 *
 * A FRAME_KIND_PERL frame is emitted just before (leaf side of) the native
 * Perl_runops_standard frame that runs it, so the stack reads interleaved:
 * ... native callee (a pp_* op, XS code), Perl frames of this runops activation, runops, ...
 *   addr    = enum perl_frame_type << PERL_FRAME_TYPE_SHIFT | what names the frame:
 *             PERL_FRAME_SUB: the GV of the sub's CV (CvGV: its glob; the package's
 *             __ANON__ glob for anonymous subs), read through the CV by eBPF because a CV
 *             (a closure) may be freed before userspace reads it while its glob stays;
 *             PERL_FRAME_NAMED: the CV of a sub without a glob (CvNAMED: it holds its
 *             name HEK and stash itself; package subs are stored so since 5.22 until
 *             something asks for their glob, lexical subs always), and in bits 48-55 a
 *             cookie: bits 3-10 of its name HEK's address as eBPF read it, so userspace can
 *             tell a CV freed and reused (a lexical sub's clone) by another sub;
 *             other types: 0 (the type is the name).
 *   file_id = (line & 0xffff) << PERL_FRAME_LINE_SHIFT | address of the COP of the frame's
 *             current statement (PL_curcop for the newest frame, the blk_oldcop of the
 *             context above it for the others). The line bits, read by eBPF, are the cookie
 *             that tells userspace the COP it reads later is still the one the sample saw.
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum perl_marker.
 */
#ifndef STACKSCOPE_PERL_ABI_H
#define STACKSCOPE_PERL_ABI_H

#include "counter_list.h"

#define PERL_FRAME_TYPE_SHIFT 56
#define PERL_FRAME_PTR_MASK 0x00ffffffffffffffull
#define PERL_FRAME_COOKIE_SHIFT 48 /* PERL_FRAME_NAMED: (name HEK >> 3) & 0xff */
#define PERL_FRAME_LINE_SHIFT 48
#define PERL_FRAME_ADDR_MASK 0x0000ffffffffffffull /* a user address: 48 bits */

enum perl_frame_type {
	PERL_FRAME_SUB = 1,   /* a sub (CXt_SUB, CXt_FORMAT): addr holds its GV */
	PERL_FRAME_NAMED = 2, /* a sub without a glob (CvNAMED): addr holds its CV */
	PERL_FRAME_EVAL = 3,  /* eval STRING's code */
	PERL_FRAME_FILE = 4,  /* a file's top-level code run by require / do FILE */
	PERL_FRAME_MAIN = 5,  /* the main program's top-level code */
	PERL_FRAME_SORT = 6,  /* the block of a sort { ... } (no CV of its own) */
};

enum perl_marker {
	PERL_MARKER_UNSUPPORTED = 1, /* runops of a Perl this build does not understand */
	PERL_MARKER_TRUNCATED = 2,   /* Perl frames stopped: frame budget (native reserve) */
	PERL_MARKER_READ_FAILED = 3, /* the interpreter, a stackinfo, context or CV unreadable */
	PERL_MARKER_BAD_FRAME = 4,   /* an impossible stackinfo, context or CV: wrong layout */
	PERL_MARKER_MIXED = 5,       /* another interpreter's frames in the same stack */
	PERL_MARKER_REJECTED = 6,    /* the process's interpreter failed userspace's layout check */
};

/* Perl's own constants the walk needs (cop.h, sv.h, cv.h): the same in 5.32, 5.36, 5.40 and 5.42
 * (tests/data/perl_layout.c prints them against a version's headers); what differs between
 * versions is in struct perl_offsets.
 */
#define PERL_CXTYPEMASK 0xf
#define PERL_CXT_NULL 0 /* only sort's block (a sort SUBNAME pushes CXt_SUB) */
#define PERL_CXT_SUB 9
#define PERL_CXT_FORMAT 10
#define PERL_CXT_EVAL 11
#define PERL_CXP_SUB_RE_FAKE 0x80 /* a fake sub context for (?{ }) in the current scope */
#define PERL_CXP_EVALBLOCK 0x40   /* eval { } / try { }: runs in its sub, not a frame */
#define PERL_SI_MAIN 1
#define PERL_SVT_PVCV 13
#define PERL_CVF_NAMED 0x8000
#define PERL_CX_READ_MAX 128 /* bytes of a PERL_CONTEXT (104 in 5.32 to 5.42) */

/* Byte offsets and numbers of one Perl version the eBPF walk needs (x86-64, threaded builds;
 * src/interp/perl/perl.c's tables say where each comes from).
 */
struct perl_offsets {
	__u16 interp_curcop;       /* PerlInterpreter.Icurcop (PL_curcop) */
	__u16 interp_curstackinfo; /* .Icurstackinfo (PL_curstackinfo) */
	__u16 si_cxstack;          /* PERL_SI.si_cxstack (PERL_CONTEXT array) */
	__u16 si_prev;             /* .si_prev */
	__u16 si_cxix;             /* .si_cxix (I32: newest context, -1 none) */
	__u16 si_cxmax;            /* .si_cxmax (I32) */
	__u16 si_type;             /* .si_type (I32: PERLSI_*) */
	__u16 cx_size;             /* sizeof(PERL_CONTEXT) (<= PERL_CX_READ_MAX) */
	__u16 cx_type;             /* .cx_type (u8: CXt_* | CXp_*) */
	__u16 cx_u16;              /* .blk_u16 (eval: old op type << 7) */
	__u16 cx_oldcop;           /* .blk_oldcop */
	__u16 cx_retop;            /* .blk_sub.retop = .blk_eval.retop (NULL: entered from C) */
	__u16 cx_sub_cv;           /* .blk_sub.cv */
	__u16 sv_flags;            /* sv.sv_flags (u32, type in the low byte) */
	__u16 xcv_gv;              /* XPVCV.xcv_gv_u (GV*, or HEK* when CVf_NAMED) */
	__u16 xcv_flags;           /* XPVCV.xcv_flags (u32) */
	__u16 cop_line;            /* COP.cop_line (u32) */
	__u16 op_enter_eval;       /* OP_ENTEREVAL */
	__u16 op_require;          /* OP_REQUIRE */
	__u16 op_dofile;           /* OP_DOFILE */
	__u16 si_type_max;         /* the last PERLSI_* (PERLSI_REGCOMP 11; 5.42: 13) */
};

/* interp_file.perl: the Perl binary's layout (interp_file's range [0]: Perl_runops_standard). */
struct perl_file_abi {
	struct perl_offsets off;
};

/* interp_proc.perl: where the interpreter is found in one process. */
struct perl_proc_abi {
	__u64 thr_key; /* absolute address of PL_thr_key (pthread_key_t: the thread's interpreter) */
	__s32 tsd_off; /* libc TSD: the value of pthread key k (< 32) is at fsbase + tsd_off + 16 k
			* (fsbase: the thread pointer; below it on arm64, src/interp/common/glibc_tsd.h) */
	__u8 rejected; /* 1: its interpreter failed the layout check: a marker, no Perl frames */
	__u8 pad[3];
};

/* Why Perl frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define PERL_COUNTERS(X)                                                \
	/* samples with at least one runops frame */                    \
	X(PERL_COUNTER_STACKS, "stacks in runops")                      \
	/* Perl frames emitted */                                       \
	X(PERL_COUNTER_FRAMES, "frames")                                \
	/* runops, but the pid has no interp_procs entry (yet) */       \
	X(PERL_COUNTER_NO_PROC, "no process")                           \
	/* runops of an unsupported build (marker emitted) */           \
	X(PERL_COUNTER_UNSUPPORTED, "unsupported")                      \
	/* PL_thr_key unset or >= 32, or no interpreter in its slot */  \
	X(PERL_COUNTER_NO_INTERP, "no interpreter")                     \
	/* interpreter, stackinfo, context or CV unreadable (marker) */ \
	X(PERL_COUNTER_READ_FAILED, "unreadable")                       \
	/* impossible stackinfo, context or CV (marker) */              \
	X(PERL_COUNTER_BAD_FRAME, "bad context")                        \
	/* a runops activation with no Perl frame left to show */       \
	X(PERL_COUNTER_RUN_EMPTY, "empty run")                          \
	/* Perl frames cut at the native reserve (marker) */            \
	X(PERL_COUNTER_TRUNCATED, "truncated")                          \
	/* another interpreter walked in the same stack (marker) */     \
	X(PERL_COUNTER_MIXED, "other interpreter")                      \
	/* contexts passed over (loops, blocks, eval { }) */            \
	X(PERL_COUNTER_CONTEXTS, "contexts passed over")                \
	/* sub contexts without a CV yet / any more (passed over) */    \
	X(PERL_COUNTER_SUB_MOVING, "subs entered or left")              \
	/* a process whose layout check failed (marker) */              \
	X(PERL_COUNTER_REJECTED, "rejected process")

enum perl_counter {
	PERL_COUNTERS(SS_COUNTER_ENUM) PERL_COUNTER_CNT,
};

#endif
