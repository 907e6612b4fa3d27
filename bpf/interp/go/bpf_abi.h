/* Go's part of the eBPF/userspace ABI (included by abi.h): what eBPF needs to read a goroutine's
 * pprof labels (bpf/interp/go/labels.h), as userspace (src/interp/go/go_runtime.c) tells it per
 * process.
 *
 * Go code is native code: Go emits no frames of its own (FRAME_KIND_GO only names its
 * "interp_procs" entry and its counters). At the end of a sample of an attached process, eBPF
 * finds the thread's g (the TLS slot at fsbase + tls_g), its m (g.m), the goroutine the m runs
 * (m.curg: g itself, or the user goroutine when the thread is on g0's or gsignal's stack) and
 * that goroutine's labels (curg.labels, set by pprof.Do / pprof.SetGoroutineLabels), and copies
 * up to SS_MAX_LABELS of them into the sample record (struct sample_label in abi.h).
 *
 * The labels' layout depends on the Go version:
 *  - Go 1.15-1.23: curg.labels points to a labelMap, a map[string]string: a pointer to the
 *    runtime's hmap (count at 0, buckets at 16, oldbuckets at 24 while growing), buckets of
 *    GO_MAP_BUCKET_SLOTS (tophash [8]u8, keys [8]string, values [8]string, overflow);
 *  - Go 1.24+: curg.labels points to a labelMap struct whose first member is a slice
 *    (pointer, len, cap) of {key, value string}, sorted by key.
 */
#ifndef STACKSCOPE_GO_ABI_H
#define STACKSCOPE_GO_ABI_H

#include "counter_list.h"

enum go_labels_layout {
	GO_LABELS_HMAP = 1,  /* Go 1.15-1.23 */
	GO_LABELS_SLICE = 2, /* Go 1.24 and later */
};

/* Byte offsets of the runtime's structures (src/interp/go/go_runtime.c says where each comes from). */
struct go_proc_abi {
	__s32 tls_g;        /* g's TLS slot relative to fsbase (-8 on linux/amd64) */
	__u16 g_m;          /* g.m */
	__u16 m_curg;       /* m.curg */
	__u16 g_labels;     /* g.labels */
	__u8 labels_layout; /* enum go_labels_layout */
	__u8 pad;
	__u16 m_g0;       /* m.g0 (g.stack.lo and .hi are g's first words) */
	__u16 g_sched_sp; /* g.sched.sp, .pc, .bp: where a goroutine that switched to g0 */
	__u16 g_sched_pc; /* (systemstack, morestack) was */
	__u16 g_sched_bp;
	__u16 g_syscall_sp; /* g.syscallsp, .syscallpc: where runtime.cgocall entered the */
	__u16 g_syscall_pc; /* syscall state before asmcgocall (entersyscall) */
};

/* A goroutine's saved context, where the walk goes on after a switch to g0. */
struct go_sched {
	__u64 pc, sp, bp;
};

enum go_context {
	GO_CONTEXT_SCHED = 0,   /* g.sched: systemstack, morestack */
	GO_CONTEXT_SYSCALL = 1, /* g.syscallpc/sp (no bp: 0): a cgo call (runtime.cgocall) */
};

#define GO_MAP_BUCKET_SLOTS 8
#define GO_TOPHASH_MIN 5 /* tophash values below are empty or evacuated slots */

/* Why labels are missing, by reason (Go's slice of "interp_counters"). */
#define GO_COUNTERS(X)                                                                            \
	/* samples that carried labels */                                                         \
	X(GO_COUNTER_LABELED, "samples with labels")                                              \
	/* the TLS slot, g.m or m.curg unreadable (a thread that is not Go's yet, a C thread of \
	 * a cgo program) */ \
	X(GO_COUNTER_NO_G, "goroutine unreadable")                                                \
	/* the label map, slice or a string unreadable */                                         \
	X(GO_COUNTER_READ_FAILED, "labels unreadable")                                            \
	/* samples with labels left out: past SS_MAX_LABELS, or past a label map's first bucket \
	 * (more than 8 labels) */ \
	X(GO_COUNTER_DROPPED, "labels dropped (record full)")                                     \
	/* keys or values cut to the record's sizes */                                            \
	X(GO_COUNTER_TRUNCATED, "labels cut")                                                     \
	/* a label map in the middle of growing: not read */                                      \
	X(GO_COUNTER_MAP_GROWING, "label map growing")

enum go_counter {
	GO_COUNTERS(SS_COUNTER_ENUM) GO_COUNTER_CNT,
};

#endif
