/* The span a sample was taken in (OpenTelemetry's thread context, struct sample_trace of
 * bpf/abi.h) as the sample's labels "trace_id" and "span_id": lowercase hex, as W3C Trace
 * Context writes them. The exports know these two keys: pprof keeps them as labels, OTLP makes
 * them the sample's Link (export/otlp.c), folded stacks a "[trace: ...]" frame when asked.
 */
#ifndef STACKSCOPE_SAMPLE_TRACE_H
#define STACKSCOPE_SAMPLE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "abi.h"
#include "profile/profile.h"

#define SAMPLE_TRACE_KEY_TRACE "trace_id"
#define SAMPLE_TRACE_KEY_SPAN "span_id"
#define SAMPLE_TRACE_LABELS 2

/* Texts the labels point into: owned by the caller, alive as long as the labels. */
struct sample_trace_text {
	char trace_id[33];
	char span_id[17];
};

/* The record's span as labels out[0..2) (texts in *text): how many (0: none published, or
 * not readable: state says which).
 */
uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out);

/* hex of n bytes (2n characters) into 2n + 1 bytes of out; false when it is not n bytes of
 * lowercase hex, or all zero (an invalid W3C id).
 */
bool sample_trace__parse_id(const char *hex, uint8_t *out, size_t n);

#endif
