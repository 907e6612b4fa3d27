/* OBI's shared map traces_ctx_v1 (bpf_abi.h has its layout) into the sample record (included by
 * sampler.bpf.c after interp/otel/thread_ctx.h).
 *
 * The map belongs to another program (OBI), which may start after stackscope, stop, or pin a
 * new map when it restarts: the sampler cannot bind to it at load time. So the one-slot array
 * of maps "obi_maps" holds it: userspace (src/interp/otel/obi_map.c) puts the pinned map in slot
 * 0 once it has checked its type and sizes, and takes it out when it is gone. The kernel checks
 * the same again (an inner map must match the template's type, key and value sizes, flags).
 * Without the map the cost is one array lookup that returns NULL.
 *
 * The thread context wins: the map is looked up only for a sample whose thread published no
 * context of its own (state OTEL_TRACE_NONE; one that was unreadable or changing stays so).
 * OBI has no trace flags: the sample's are 0.
 *
 * Hooks the includer provides: ss_interp_count.
 */
#ifndef STACKSCOPE_OTEL_OBI_MAP_H
#define STACKSCOPE_OTEL_OBI_MAP_H

#include "interp/common.h"
#include "interp/otel/bpf_abi.h"

/* The template OBI's map must match (max_entries is not compared for a hash). The value as
 * bytes: clang leaves a struct reached through two pointers a forward declaration in BTF, whose
 * size libbpf cannot know.
 */
struct obi_ctx_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u8[OBI_MAP_VALUE_SZ]);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct obi_ctx_map);
} obi_maps SEC(".maps");

/* The span OBI recorded for the sampled thread into rec->trace, when the thread context left
 * none.
 */
static __always_inline void obi_map_span(struct sample_record *rec)
{
	struct obi_trace_ctx *v;
	__u32 zero = 0;
	__u64 key, id[3];
	void *m;

	if (rec->trace.state != OTEL_TRACE_NONE)
		return;
	m = bpf_map_lookup_elem(&obi_maps, &zero);
	if (!m)
		return;
	key = (__u64)rec->hdr.pid << 32 | rec->hdr.tid;
	v = bpf_map_lookup_elem(m, &key);
	if (!v)
		return;
	/* one copy: the ids are checked and stored from it, not from the live entry */
	__builtin_memcpy(id, v, sizeof(id));
	if (!id[0] && !id[1]) {
		ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_OBI_NO_TRACE);
		return;
	}
	__builtin_memcpy(rec->trace.trace_id, id, 16);
	__builtin_memcpy(rec->trace.span_id, &id[2], 8);
	rec->trace.flags = 0;
	rec->trace.state = OTEL_TRACE_SET;
	ss_interp_count(FRAME_KIND_OTEL, OTEL_COUNTER_OBI_SET);
}

#endif
