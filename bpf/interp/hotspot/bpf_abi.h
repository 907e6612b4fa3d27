/* HotSpot's part of the eBPF/userspace ABI (included by abi.h): the frames the walk
 * (bpf/interp/hotspot/walk.h) emits and what userspace (src/interp/hotspot/) tells it.
 *
 * HotSpot runs Java code from its code cache, anonymous memory, so its walk is a code-range
 * walker (bpf/interp/dispatch.h): it is called when the native walk meets a pc in the code
 * cache the process registered, emits one frame and moves the native cursor to the caller.
 *
 * A FRAME_KIND_HOTSPOT frame:
 *   addr    = Method* (interpreted), nmethod* (compiled) or CodeBlob* (stub), in the process
 *   file_id = (__u64)sub << 60 | (__u64)pos << 32 | cookie, sub an enum hs_sub:
 *             interpreted: pos = bytecode index (HS_BCI_NONE: unknown),
 *                          cookie = (__u32)(ConstMethod* >> 3) as read by eBPF;
 *             compiled:    pos = pc - code begin (the return address for callers; for a
 *                          frame deoptimised under us, whose return address is the
 *                          nmethod's deopt handler, the original one HotSpot saved in
 *                          the frame), cookie = the nmethod's compile id;
 *             stub:        pos = pc - code begin, cookie 0.
 * addr == 0 marks a pseudo-frame instead; file_id is then an enum hs_marker.
 * Userspace re-reads the object at symbolization and shows "[jvm: stale code]" when the
 * cookie disagrees (code freed and its memory reused).
 */
#ifndef STACKSCOPE_HOTSPOT_ABI_H
#define STACKSCOPE_HOTSPOT_ABI_H

#include "counter_list.h"

#define HS_MAX_HEAPS 3         /* CodeCache heaps: non-nmethods, profiled, non-profiled */
#define HS_BCI_NONE 0xfffffffu /* 28 bits */
#define HS_NO_OFFSET 0xffff

enum hs_sub {
	HS_SUB_INTERPRETED = 1,
	HS_SUB_COMPILED = 2,
	HS_SUB_STUB = 3,
};

enum hs_marker {
	HS_MARKER_UNSUPPORTED = 1, /* the JVM's tables lack what the walk needs: ends the stack */
	HS_MARKER_TRUNCATED = 2,   /* frame budget (native reserve) reached */
	HS_MARKER_NO_BLOB = 3,     /* a code-cache pc whose code blob could not be found */
	HS_MARKER_BAD_FRAME = 4,   /* a Java frame whose caller could not be found */
};

/* One CodeHeap: [low, high) holds code blobs; segmap[i] describes segment i of 2^log2 bytes. */
struct hs_heap {
	__u64 low, high, segmap;
};

/* interp_proc.hs: one JVM. Offsets come from the process's own gHotSpotVMStructs/Types tables
 * (HS_NO_OFFSET: not exported by this JVM), read by userspace at attach.
 */
struct hs_proc_abi {
	struct hs_heap heap[HS_MAX_HEAPS];
	__u64 interp_lo,
		interp_hi; /* the template interpreter's code (AbstractInterpreter::_code) */
	__u8 ready;        /* 1: the heaps and the interpreter are known (JVM initialised) */
	__u8 supported;    /* 0: the tables lack something: marker frames, native only */
	__u8 heap_cnt;
	__u8 log2_seg[HS_MAX_HEAPS];
	__u8 code_is_offset;   /* CodeBlob code begin: 1 = int offset from the blob, 0 = pointer */
	__u8 kind_nmethod;     /* CodeBlobKind::Nmethod when blob_kind is exported */
	__u16 block_hdr;       /* sizeof(HeapBlock): blob = block + block_hdr */
	__u16 blob_name;       /* CodeBlob::_name (const char *) */
	__u16 blob_kind;       /* CodeBlob::_kind (u8), or HS_NO_OFFSET: compare _name */
	__u16 blob_frame_size; /* CodeBlob::_frame_size (int, words) */
	__u16 blob_frame_complete; /* CodeBlob::_frame_complete_offset */
	__u16 blob_code;           /* CodeBlob::_code_begin or _code_offset */
	__u16 nm_method;           /* nmethod (17: CompiledMethod)::_method */
	__u16 nm_compile_id;       /* nmethod::_compile_id (int) */
	__u16 method_const;        /* Method::_constMethod */
	__u16 const_size;          /* sizeof(ConstMethod): bytecodes follow it */
	__u8 frame_complete_16;    /* _frame_complete_offset is 16 bits wide */
	__s8 slot_method;          /* interpreter frame slots, in words from fp */
	__s8 slot_bcp;
	__s8 slot_sender_sp;
	__u8 deopt_is_offset; /* the deopt handler: 1 = int offset from the nmethod, 0 = pointer */
	__u8 pad;
	__u16 nm_deopt;   /* nmethod::_deopt_handler_offset (25) / CompiledMethod::
			   * _deopt_handler_begin (17), or HS_NO_OFFSET */
	__u16 nm_orig_pc; /* nmethod::_orig_pc_offset (int: where a deoptimised frame keeps its
			   * original return address, bytes from its sp) */
	__u8 pad2[4];
};

/* Why Java frames are missing, by reason (the runtime's slice of "interp_counters"). */
#define HS_COUNTERS(X)                                               \
	/* interpreted frames emitted */                             \
	X(HS_COUNTER_INTERPRETED, "interpreted frames")              \
	/* compiled (C1/C2) frames emitted */                        \
	X(HS_COUNTER_COMPILED, "compiled frames")                    \
	/* stub / adapter frames emitted */                          \
	X(HS_COUNTER_STUB, "stub frames")                            \
	/* code-cache pc, but no interp_procs entry */               \
	X(HS_COUNTER_NO_PROC, "no process")                          \
	/* the JVM's code cache not known yet */                     \
	X(HS_COUNTER_NOT_READY, "code cache not known yet")          \
	/* tables incomplete (marker) */                             \
	X(HS_COUNTER_UNSUPPORTED, "unsupported")                     \
	/* segment map walk failed (marker) */                       \
	X(HS_COUNTER_NO_BLOB, "no code blob")                        \
	/* frame or blob unreadable */                               \
	X(HS_COUNTER_READ_FAILED, "unreadable")                      \
	/* caller not found: the stack ends there */                 \
	X(HS_COUNTER_BAD_FRAME, "caller not found")                  \
	/* cut at the native reserve (marker) */                     \
	X(HS_COUNTER_TRUNCATED, "truncated")                         \
	/* compiled frames deoptimised under us: original pc used */ \
	X(HS_COUNTER_DEOPT, "deoptimised frames")                    \
	/* stub frames of the nmethod entry barrier (its cookie) */  \
	X(HS_COUNTER_BARRIER, "entry barrier frames")                \
	/* compiled frames sampled in their epilogue */              \
	X(HS_COUNTER_EPILOGUE, "frames in their epilogue")

enum hs_counter {
	HS_COUNTERS(SS_COUNTER_ENUM) HS_COUNTER_CNT,
};

#endif
