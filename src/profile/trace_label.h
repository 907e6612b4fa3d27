/* A sample's span (OpenTelemetry trace context) as two of its labels: "trace_id" (16 bytes)
 * and "span_id" (8 bytes), lowercase hex as W3C Trace Context writes them. Whoever fills a
 * profile (pipeline/sample_trace.c: the thread context eBPF read) and whoever exports one
 * (export/otlp_link.c: the sample's Link; export/folded.c: a "[trace: ...]" frame when asked)
 * agree on them here.
 */
#ifndef STACKSCOPE_TRACE_LABEL_H
#define STACKSCOPE_TRACE_LABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_LABEL_TRACE "trace_id"
#define TRACE_LABEL_SPAN "span_id"

/* n bytes as 2n lowercase hex digits and a NUL into out[2n + 1]. */
void trace_label__hex(const uint8_t *in, size_t n, char *out);

/* 2n lowercase hex digits into out[n]; false when hex is not that, or all zero (an invalid
 * W3C id).
 */
bool trace_label__parse(const char *hex, uint8_t *out, size_t n);

/* The label filter "trace_id=<id>" of a trace id given as 32 hex digits of either case into
 * out[TRACE_LABEL_FILTER_SZ] (lowercase); false when id is not that, or all zero.
 */
#define TRACE_LABEL_FILTER_SZ (sizeof(TRACE_LABEL_TRACE) + 33)
bool trace_label__filter(const char *id, char *out);

/* Whether key is one of the two. */
bool trace_label__is_key(const char *key);

#endif
