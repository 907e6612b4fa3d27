/* The span a sample was taken in (OpenTelemetry's thread context, struct sample_trace of
 * bpf/abi.h, read by bpf/interp/otel/thread_ctx.h) as the sample's labels trace_id and
 * span_id (profile/trace_label.h).
 */
#ifndef STACKSCOPE_SAMPLE_TRACE_H
#define STACKSCOPE_SAMPLE_TRACE_H

#include <stdint.h>

#include "abi.h"
#include "profile/profile.h"

#define SAMPLE_TRACE_LABELS 2

/* Texts the labels point into: owned by the caller, alive as long as the labels. */
struct sample_trace_text {
	char trace_id[33];
	char span_id[17];
};

/* The record's span as labels out[0..2) (texts in *text): how many (0: none published, or
 * not readable, which eBPF counted).
 */
uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out);

#endif
