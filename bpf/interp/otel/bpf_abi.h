/* OpenTelemetry's thread context (OTEP 4947) in the eBPF/userspace ABI (included by abi.h): where
 * eBPF finds the TLS variable `otel_thread_ctx_v1` of the sampled thread, as userspace
 * (src/interp/otel/thread_ctx.c) tells it per process, and what it keeps of the record.
 *
 * An SDK (libdatadog's otel_thread_ctx, polarsignals/custom-labels, or any writer of the OTEP)
 * points that variable at a Thread-Local Context Record while a span is active on the thread:
 * trace id (16 bytes), span id (8), valid (1 byte, the record counts only when it is 1), trace
 * flags (1), attrs-data-size (u16), then attrs-data; byte-packed, host byte order, at least
 * 2-byte aligned. A NULL pointer, valid != 1 or an all-zero trace id: no span.
 *
 * FRAME_KIND_OTEL names the runtime's "interp_procs" entry and its counters only: it emits no
 * frames. The sampled span goes into struct sample_record's `trace` (abi.h).
 */
#ifndef STACKSCOPE_OTEL_ABI_H
#define STACKSCOPE_OTEL_ABI_H

#include "counter_list.h"

/* How the variable's address follows from the thread pointer (fsbase). Static TLS (the
 * executable, the libraries loaded at start-up): fsbase + an offset; dynamic TLS (a dlopen()ed
 * library): dtv = *(fsbase + OTEL_TCB_DTV), the module's block *(dtv + 16 * modid) (0 or -1:
 * not allocated in this thread, so never set), + the offset in it. What ld.so decided is read
 * at each sample from the GOT slot it wrote (got), so a process is read from its first sample
 * on, and one whose GOT is not relocated yet reads as "nothing published".
 */
enum otel_tls_mode {
	/* local-exec in the executable: fsbase + tp_off */
	OTEL_TLS_STATIC = 1,
	/* the TLSDESC descriptor at got: {resolver, argument}; the resolver 0: not relocated yet;
	 * an argument in (-OTEL_TP_OFF_MAX, 0): static TLS, fsbase + argument; else it points to
	 * ld.so's {module id, offset}, the offset checked against dtv_off (the symbol's)
	 */
	OTEL_TLS_TLSDESC = 2,
	/* legacy General Dynamic: the module id at got (0: not relocated yet), offset dtv_off */
	OTEL_TLS_DTPMOD = 3,
	/* initial-exec: the offset from the thread pointer at got (0: not relocated yet) */
	OTEL_TLS_TPOFF = 4,
};

#define OTEL_TP_OFF_MAX (1ll << 20)

#define OTEL_TCB_DTV 8 /* glibc x86-64: tcbhead_t.dtv */

/* interp_proc.otel: one process's variable. */
struct otel_proc_abi {
	__s64 tp_off;  /* OTEL_TLS_STATIC: the variable's offset from the thread pointer */
	__u64 got;     /* the others: absolute address of the GOT slot(s) ld.so fills */
	__u64 dtv_off; /* TLSDESC (dynamic), DTPMOD: its offset in its module's TLS block */
	__u8 mode;     /* enum otel_tls_mode */
	__u8 pad[7];
};

/* The record's fixed head (the OTEP's first 28 bytes). */
#define OTEL_RECORD_HEAD 28
#define OTEL_RECORD_VALID_OFF 24

/* struct sample_trace.state */
enum otel_trace_state {
	OTEL_TRACE_NONE = 0, /* no context (none published, none attached, not valid) */
	OTEL_TRACE_SET = 1,  /* trace_id, span_id, flags are the thread's span */
	OTEL_TRACE_BAD = 2,  /* the variable or record unreadable or changing: no ids kept */
};

/* Why a sample of an attached process carries no span, by reason (its "interp_counters"). */
#define OTEL_COUNTERS(X)                                                                       \
	/* samples that carried a span */                                                      \
	X(OTEL_COUNTER_SET, "samples with a span")                                             \
	/* the TLS slot (thread pointer, DTV, the variable) unreadable */                      \
	X(OTEL_COUNTER_TLS_UNREADABLE, "TLS unreadable")                                       \
	/* a non-NULL pointer to memory that cannot be read */                                 \
	X(OTEL_COUNTER_RECORD_UNREADABLE, "record unreadable")                                 \
	/* the pointer or the record's head differed between two reads (another thread wrote \
	 * it): dropped, never half of each */ \
	X(OTEL_COUNTER_CHANGED, "record changed while read")                                   \
	/* a record with valid != 1 (being written, or detached) */                            \
	X(OTEL_COUNTER_NOT_VALID, "record not valid")                                          \
	/* a valid record whose trace id is all zero */                                        \
	X(OTEL_COUNTER_NO_TRACE, "record without trace id")                                    \
	/* a pointer that is not 2-byte aligned (the OTEP requires it) */                      \
	X(OTEL_COUNTER_MISALIGNED, "record misaligned")                                        \
	/* samples whose span came from OBI's map traces_ctx_v1 (obi_map.h) */                 \
	X(OTEL_COUNTER_OBI_SET, "samples with an OBI span")                                    \
	/* an entry of OBI's map for the thread whose trace id is all zero */                  \
	X(OTEL_COUNTER_OBI_NO_TRACE, "OBI entry without trace id")                             \
	/* a record whose attrs-data is longer than a sample keeps (SS_TRACE_ATTRS_LEN) */     \
	X(OTEL_COUNTER_ATTRS_CUT, "attributes cut")

/* OpenTelemetry eBPF Instrumentation's (OBI's) shared map `traces_ctx_v1` (specification pull
 * request 4855): a BPF_MAP_TYPE_LRU_HASH, pinned by OBI at <bpffs>/otel/traces_ctx_v1
 * (default /sys/fs/bpf/otel/traces_ctx_v1), keyed by the thread's pid_tgid as
 * bpf_get_current_pid_tgid() gives it (tgid << 32 | tid, both of the initial pid namespace),
 * whose value is the span OBI saw that thread serve: trace id, then span id, no padding.
 */
struct obi_trace_ctx {
	__u8 trace_id[16];
	__u8 span_id[8];
};

#define OBI_MAP_KEY_SZ 8
#define OBI_MAP_VALUE_SZ 24

enum otel_counter {
	OTEL_COUNTERS(SS_COUNTER_ENUM) OTEL_COUNTER_CNT,
};

#endif
