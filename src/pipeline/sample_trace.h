/* The span a sample was taken in (OpenTelemetry's thread context, struct sample_trace of
 * bpf/abi.h, read by bpf/interp/otel/thread_ctx.h, or OBI's map, obi_map.h) as the sample's
 * labels trace_id and span_id (profile/trace_label.h), and the thread context's attributes as
 * more labels.
 *
 * Attributes (OTEP 4947 attrs-data, the first SS_TRACE_ATTRS_LEN bytes eBPF kept): entries
 * {key index u8, length u8, value[length] (UTF-8)} packed; parsing stops at an entry the bytes
 * cannot hold whole; of a key index given twice the last value counts; at most
 * SAMPLE_TRACE_ATTRS_MAX keys per sample (the first ones seen). A key index names the process's
 * `threadlocal.attribute_key_map` entry (OTEP 4719's process context): with that map, indexes
 * outside it are ignored (as the OTEP says); without one, the label's key is
 * "thread.attr.<index>".
 */
#ifndef STACKSCOPE_SAMPLE_TRACE_H
#define STACKSCOPE_SAMPLE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "profile/profile.h"

/* The marker label of a sample whose thread context eBPF found but could not read whole (the
 * variable or record unreadable, misaligned, or changing under the read: OTEL_TRACE_BAD; the
 * reason is counted on record's `otel` line): otel.thread_context=unreadable, no ids.
 */
#define SAMPLE_TRACE_MARKER_KEY "otel.thread_context"
#define SAMPLE_TRACE_MARKER_VALUE "unreadable"
#define SAMPLE_TRACE_ATTRS_MAX 4
#define SAMPLE_TRACE_LABELS (2 + SAMPLE_TRACE_ATTRS_MAX)

/* Texts the labels point into: owned by the caller, alive as long as the labels. */
struct sample_trace_text {
	char trace_id[33];
	char span_id[17];
	char attr_key[SAMPLE_TRACE_ATTRS_MAX][sizeof("thread.attr.255")];
	char attr_value[SAMPLE_TRACE_ATTRS_MAX][SS_TRACE_ATTRS_LEN];
};

/* The record's span and attributes as labels out[0..SAMPLE_TRACE_LABELS) (texts in *text):
 * how many (0: none published; 1: the marker, not readable). Attribute keys named
 * "thread.attr.<index>".
 */
uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out);

/* The same with the process's attribute key map (key_cnt names, index order; a NULL name: an
 * index not known): attributes whose index it does not name are left out.
 */
uint32_t sample_trace__labels_keyed(const struct sample_trace *t, const char *const *keys,
				    size_t key_cnt, struct sample_trace_text *text,
				    struct profile_label *out);

#endif
