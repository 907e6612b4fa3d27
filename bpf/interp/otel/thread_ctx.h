/* OpenTelemetry's thread context (OTEP 4947) into the sample record (included by sampler.bpf.c
 * after interp/dispatch.h; interp/otel/bpf_abi.h has the layout).
 *
 * Called once per sample, after the walk, for a process the runtime is attached to (a mapped
 * file defines the TLS variable otel_thread_ctx_v1: src/interp/otel/thread_ctx.c). The
 * sampled thread is stopped (the sample interrupts it), so its own writes cannot race the read;
 * another thread's can (a hostile or broken writer): the record's head is read twice and kept
 * only when both reads agree, so a sample carries the span that was published
 * whole or none (counted), never half of two. The first SS_TRACE_ATTRS_LEN bytes of its
 * attrs-data are read between the two reads of the head (the OTEP lets a writer grow or
 * shrink them without touching `valid`, changing attrs-data-size last): kept with the head they
 * came with; userspace parses them (pipeline/sample_trace.c).
 *
 * Hooks the includer provides: ss_read_user, ss_interp_proc, ss_interp_count.
 */
#ifndef STACKSCOPE_OTEL_THREAD_CTX_H
#define STACKSCOPE_OTEL_THREAD_CTX_H

#include "interp/common.h"
#include "interp/otel/bpf_abi.h"

/* The address of the thread's otel_thread_ctx_v1 into *var: 0, 1 (nothing published: the GOT
 * not relocated yet, the TLS block not allocated in this thread) or -1 (unreadable, or what no
 * ld.so writes).
 */
static __always_inline int otel_tls_var(const struct otel_proc_abi *o, __u64 fsbase, __u64 *var)
{
	__u64 w[2], arg[2], modid, off = o->dtv_off, dtv, block;
	__s64 tp;

	if (o->mode == OTEL_TLS_STATIC) {
		*var = fsbase + (__u64)o->tp_off;
		return 0;
	}
	if (o->mode == OTEL_TLS_TLSDESC) {
		if (ss_read_user(w, sizeof(w), o->got))
			return -1;
		if (!w[0])
			return 1;
		tp = (__s64)w[1];
		if (tp < 0 && tp > -OTEL_TP_OFF_MAX) {
			*var = fsbase + w[1];
			return 0;
		}
		if (ss_read_user(arg, sizeof(arg), w[1]) || arg[1] != o->dtv_off)
			return -1;
		modid = arg[0];
	} else if (o->mode == OTEL_TLS_DTPMOD || o->mode == OTEL_TLS_TPOFF) {
		if (ss_read_user(w, sizeof(w[0]), o->got))
			return -1;
		if (!w[0])
			return 1;
		if (o->mode == OTEL_TLS_TPOFF) {
			tp = (__s64)w[0];
			if (tp >= 0 || tp <= -OTEL_TP_OFF_MAX)
				return -1;
			*var = fsbase + w[0];
			return 0;
		}
		modid = w[0];
	} else {
		return -1;
	}
	if (!modid || modid > 0xffff)
		return -1;
	if (ss_read_user(&dtv, sizeof(dtv), fsbase + OTEL_TCB_DTV) || !dtv ||
	    ss_read_user(&block, sizeof(block), dtv + 16 * modid))
		return -1;
	/* glibc: -1 (TLS_DTV_UNALLOCATED) until the thread first touches the module's TLS */
	if (!block || block == ~0ULL)
		return 1;
	*var = block + off;
	return 0;
}

/* The thread's span into rec->trace (state OTEL_TRACE_NONE before). */
static __always_inline int otel_thread_ctx(struct sample_record *rec, __u32 pid, __u64 fsbase)
{
	struct interp_proc *p;
	__u64 var, ptr, head[4] = {}, head2[4] = {};
	__u8 *h = (__u8 *)head;
	__u32 attrs_sz;
	int r;

	if (!rec)
		return 0;
	p = ss_interp_proc(pid, FRAME_KIND_OTEL);
	if (!p || !fsbase)
		return 0;
	r = otel_tls_var(&p->otel, fsbase, &var);
	if (r > 0)
		return 0;
	if (r < 0 || ss_read_user(&ptr, sizeof(ptr), var)) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_TLS_UNREADABLE);
		rec->trace.state = OTEL_TRACE_BAD;
		return 0;
	}
	if (!ptr)
		return 0;
	if (ptr & 1) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_MISALIGNED);
		rec->trace.state = OTEL_TRACE_BAD;
		return 0;
	}
	if (ss_read_user(head, OTEL_RECORD_HEAD, ptr)) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_RECORD_UNREADABLE);
		rec->trace.state = OTEL_TRACE_BAD;
		return 0;
	}
	if (h[OTEL_RECORD_VALID_OFF] != 1) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_NOT_VALID);
		return 0;
	}
	attrs_sz = h[26] | (__u32)h[27] << 8; /* attrs-data-size, little-endian host */
	if (attrs_sz > SS_TRACE_ATTRS_LEN) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_ATTRS_CUT);
		attrs_sz = SS_TRACE_ATTRS_LEN;
	}
	if (attrs_sz && ss_read_user(rec->trace.attrs, attrs_sz, ptr + OTEL_RECORD_HEAD)) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_RECORD_UNREADABLE);
		attrs_sz = 0;
	}
	/* the second read: the same head (a pointer switched meanwhile left the record read
	 * whole: the span that was attached; attrs-data-size unchanged: the attributes too)
	 */
	if (ss_read_user(head2, OTEL_RECORD_HEAD, ptr) || head[0] != head2[0] ||
	    head[1] != head2[1] || head[2] != head2[2] || head[3] != head2[3]) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_CHANGED);
		rec->trace.state = OTEL_TRACE_BAD;
		return 0;
	}
	if (!head[0] && !head[1]) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_NO_TRACE);
		return 0;
	}
	__builtin_memcpy(rec->trace.trace_id, h, 16);
	__builtin_memcpy(rec->trace.span_id, h + 16, 8);
	rec->trace.flags = h[25];
	rec->trace.attrs_sz = (__u16)attrs_sz;
	rec->trace.state = OTEL_TRACE_SET;
	ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_SET);
	return 0;
}

/* otel_thread_ctx() as a global function: verified once, not per unwinding outcome. */
__noinline int ss_otel_thread_ctx(struct sample_record *rec, __u32 pid, __u64 fsbase)
{
	return otel_thread_ctx(rec, pid, fsbase);
}

/* The same as a static function, for the tail-call walker's programs (5.10: no pointer
 * arguments of global functions).
 */
static __noinline int ss_otel_thread_ctx_static(struct sample_record *rec, __u32 pid, __u64 fsbase)
{
	return otel_thread_ctx(rec, pid, fsbase);
}

#endif
