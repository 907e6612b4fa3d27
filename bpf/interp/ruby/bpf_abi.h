/* CRuby's part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/ruby/walk.h) emits and what userspace (src/interp/ruby/) tells it.
 *
 * A FRAME_KIND_RUBY frame is emitted just before (leaf side of) the native vm_exec_core frame
 * that runs it, so the stack reads interleaved:
 * ... native callee, Ruby frames of this vm_exec_core activation, vm_exec_core, callers ...
 * Two shapes, told apart by the top bits of file_id:
 *  - a method, block, class body or top-level frame (it has an instruction sequence):
 *      addr    = address of the rb_iseq_t in the sampled process (pid-specific)
 *      file_id = (__u64)pc index << RB_POS_SHIFT | method entry >> 3
 *                pc index: VALUEs from iseq_encoded to the frame's saved pc (RB_POS_NONE:
 *                none); method entry: ep[-2] of the frame's local environment (the frame's own
 *                for a define_method block), which userspace checks is one (it names the
 *                class), 0 when none was reached;
 *      flags   = cookie: (iseq_size ^ first_lineno << 16) as read by eBPF, so userspace can
 *                tell an instruction sequence freed and reused at the same address (runtime
 *                frames carry no user_frame_flag);
 *  - a C function frame (frame magic CFUNC):
 *      addr    = address of its callable method entry (ep[-2])
 *      file_id = (__u64)RB_POS_CFUNC << RB_POS_SHIFT
 *      flags   = low 32 bits of the entry's called_id (the cookie).
 * Method entries are 8-byte aligned heap objects below 2^48 (x86-64's 4-level paging: 2^47;
 * arm64's 48-bit VA, where mmap'd heap pages lie just below 2^48), so 45 bits hold them;
 * the pc index has the 19 bits left (an instruction sequence of 512Ki VALUEs or more gets
 * RB_POS_NONE: its first line).
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum rb_marker.
 */
#ifndef STACKSCOPE_RUBY_ABI_H
#define STACKSCOPE_RUBY_ABI_H

#include "counter_list.h"

#define RB_POS_SHIFT 45
#define RB_POS_NONE 0x7ffffu /* 19 bits */
#define RB_POS_CFUNC 0x7fffeu
#define RB_ME_MASK ((1ULL << RB_POS_SHIFT) - 1)

enum rb_marker {
	RB_MARKER_UNSUPPORTED = 1, /* vm_exec_core of a Ruby this build does not understand (its
				    * version in the code: RB_MARKER_VERSION) */
	RB_MARKER_TRUNCATED = 2,   /* Ruby frames stopped: frame budget (native reserve) */
	RB_MARKER_READ_FAILED = 3, /* a control frame could not be read: frames lost */
	RB_MARKER_NO_PROC = 5,     /* the process is not attached (not yet, or its layout check
				    * failed): native frames only */
	RB_MARKER_GC = 4,          /* the VM's garbage collector runs (objspace during_gc):
				    * on the leaf side of the Ruby frames that triggered it */
};

/* An unsupported version's marker carries the version and why (enum rb_refusal):
 * file_id = RB_MARKER_UNSUPPORTED | refusal << 24 | major << 16 | minor << 8.
 */
#define RB_MARKER_VERSION(refusal, major, minor)                                        \
	((__u64)RB_MARKER_UNSUPPORTED | (__u64)(refusal) << 24 | (__u64)(major) << 16 | \
	 (__u64)(minor) << 8)
#define RB_MARKER_CODE(file_id) ((file_id)&0xff)

enum rb_refusal {
	RB_REFUSED_VERSION = 0, /* no layout table for this version */
	RB_REFUSED_BUILD = 1,   /* a known version, but its code is not shaped as expected */
};

/* Frame magic and flags in ep[0] (vm_core.h, the same from 2.6 to 3.4). */
#define RB_FRAME_MAGIC_MASK 0x7fff0001u
#define RB_FRAME_MAGIC_CFUNC 0x55550001u
#define RB_FRAME_MAGIC_IFUNC 0x66660001u
#define RB_FRAME_MAGIC_DUMMY 0x79990001u
#define RB_FRAME_FLAG_FINISH 0x0020u  /* the first frame a vm_exec() call pushed */
#define RB_FRAME_FLAG_BMETHOD 0x0040u /* a define_method block: its own ep[-2] is the entry */
#define RB_ENV_FLAG_LOCAL 0x0002u     /* the method-level environment */
#define RB_EP_DEPTH_MAX 4             /* blocks nested deeper get no method entry */

/* Object header checks (RBasic.flags): T_IMEMO with its imemo type in bits 12-15. */
#define RB_T_MASK 0x1fu
#define RB_T_IMEMO 0x1au
#define RB_IMEMO_ISEQ 7u
#define RB_IMEMO_MENT 6u

#define RB_CFP_READ_MAX 64
#define RB_BODY_READ_MAX 128

/* Byte offsets the eBPF walk needs (x86-64; the source of each is in src/interp/ruby/ruby.c). */
struct rb_offsets {
	__u16 ec_vm_stack;      /* rb_execution_context_t.vm_stack */
	__u16 ec_vm_stack_size; /* .vm_stack_size (in VALUEs) */
	__u16 ec_cfp;           /* .cfp: the newest control frame */
	__u16 cfp_size;         /* sizeof(rb_control_frame_t) */
	__u16 cfp_pc;
	__u16 cfp_iseq;
	__u16 cfp_ep;
	__u16 cfp_read_sz;     /* bytes of a control frame to read (< RB_CFP_READ_MAX) */
	__u16 iseq_body;       /* rb_iseq_t.body */
	__u16 body_iseq_size;  /* rb_iseq_constant_body.iseq_size (unsigned int) */
	__u16 body_encoded;    /* .iseq_encoded */
	__u16 body_first_line; /* .location.first_lineno (a Fixnum VALUE) */
	__u16 body_read_sz;    /* bytes of the body to read (< RB_BODY_READ_MAX) */
	__u16 me_called_id;    /* rb_callable_method_entry_t.called_id */
	__u16 vm_objspace;     /* rb_vm_t.objspace */
	__u16 objspace_flags;  /* rb_objspace_t.flags (a 32-bit bit field) */
	__u32 gc_running;      /* the flags' during_gc bit */
	__u16 th_ec;           /* rb_thread_t.ec (RB_EC_TSD) */
	__u16 pad[2];
};

/* How the sampled thread's execution context is found (rb_file_abi.ec_src). */
enum rb_ec_src {
	/* 3.x: the thread-local ruby_current_ec, *(dtv[modid].val + tls_off): modid = *modid_got
	 * (written by ld.so when it relocates libruby: 0 before), dtv = *(fsbase + RB_TCB_DTV)
	 * (glibc x86-64: tcbhead_t.dtv; a dtv entry is 16 bytes, the first its block's address)
	 */
	RB_EC_TLS = 0,
	/* 2.x: the thread's rb_thread_t is the value of pthread key *tsd_key (ruby_native_thread_
	 * key, < 32: at fsbase + tsd_off + 16 key, glibc's first TSD block), its ec th->ec
	 */
	RB_EC_TSD = 1,
	/* 3.x on arm64: ruby_current_ec through its TLS descriptor { resolver, argument } at
	 * modid_got: for a library loaded at start (static TLS) ld.so makes the argument the
	 * variable's offset from the thread pointer (tpidr_el0), read here every sample (0 before
	 * relocation; a dynamic-TLS pointer is >= RB_TLSDESC_STATIC_MAX: no frames)
	 */
	RB_EC_TLSDESC = 2,
};

/* interp_file.rb: the library's layout (its vm_exec_core is interp_file's range). */
struct rb_file_abi {
	struct rb_offsets off;
	__u64 tls_off; /* RB_EC_TLS: ruby_current_ec within the library's TLS block */
	__u8 ec_src;   /* enum rb_ec_src */
	__u8 refusal;  /* supported == 0: enum rb_refusal (the marker says it) */
	__u8 pad[6];
};

/* interp_proc.rb: where the runtime is in one process (enum rb_ec_src says how the sampled
 * thread's execution context is found).
 */
struct rb_proc_abi {
	__u64 modid_got; /* RB_EC_TLS: absolute address of the GOT slot of its module id;
			  * RB_EC_TLSDESC: of ruby_current_ec's TLS descriptor */
	__u64 vm_ptr;    /* absolute address of ruby_current_vm_ptr (rb_vm_t *) */
	__u64 tsd_key;   /* RB_EC_TSD: absolute address of ruby_native_thread_key (32 bits) */
	__s32 tsd_off;   /* RB_EC_TSD: key k's value is at fsbase + tsd_off + 16 k (k < 32) */
	__u32 pad;
};

#define RB_TCB_DTV 8
#define RB_TLSDESC_STATIC_MAX (1u << 20) /* static TLS offsets from the thread pointer */
#define RB_TSD_KEYS 32                   /* glibc's first TSD block, inside struct pthread */

/* Why Ruby frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define RB_COUNTERS(X)                                                  \
	/* samples with at least one vm_exec_core frame */              \
	X(RB_COUNTER_STACKS, "stacks in vm_exec_core")                  \
	/* Ruby frames emitted (C function frames included) */          \
	X(RB_COUNTER_FRAMES, "frames")                                  \
	/* of which C function frames */                                \
	X(RB_COUNTER_CFUNCS, "C function frames")                       \
	/* vm_exec_core, but the pid has no interp_procs entry (yet) */ \
	X(RB_COUNTER_NO_PROC, "no process")                             \
	/* vm_exec_core of an unsupported version (marker emitted) */   \
	X(RB_COUNTER_UNSUPPORTED, "unsupported")                        \
	/* the thread's ruby_current_ec (its rb_thread_t) is unset */   \
	X(RB_COUNTER_NO_EC, "no execution context")                     \
	/* the execution context's cfp is outside its VM stack */       \
	X(RB_COUNTER_BAD_EC, "bad execution context")                   \
	/* TLS, execution context, control frame or env unreadable */   \
	X(RB_COUNTER_READ_FAILED, "unreadable")                         \
	/* a frame's iseq is not an instruction sequence: skipped */    \
	X(RB_COUNTER_BAD_ISEQ, "bad iseq")                              \
	/* dummy and C-block (ifunc) frames: nothing to show */         \
	X(RB_COUNTER_SKIPPED, "dummy/ifunc skipped")                    \
	/* a vm_exec_core activation with no Ruby frame left */         \
	X(RB_COUNTER_RUN_EMPTY, "empty run")                            \
	/* Ruby frames cut at the native reserve (marker) */            \
	X(RB_COUNTER_TRUNCATED, "truncated")                            \
	/* samples taken while the garbage collector ran (marker) */    \
	X(RB_COUNTER_GC, "gc")

enum rb_counter {
	RB_COUNTERS(SS_COUNTER_ENUM) RB_COUNTER_CNT,
};

#endif
