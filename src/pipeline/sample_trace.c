/* The span of a sample as its labels (sample_trace.h). */
#include <stdio.h>
#include <string.h>

#include "pipeline/sample_trace.h"
#include "profile/trace_label.h"

/* The attributes of attrs[0..n) into out (texts in text): how many. */
static uint32_t attr_labels(const uint8_t *attrs, size_t n, const char *const *keys, size_t key_cnt,
			    struct sample_trace_text *text, struct profile_label *out)
{
	int idx[SAMPLE_TRACE_ATTRS_MAX];
	uint32_t cnt = 0, i;
	size_t at = 0, len;

	while (at + 2 <= n) {
		uint8_t key = attrs[at];

		len = attrs[at + 1];
		if (at + 2 + len > n)
			break; /* cut by the record's end or by what eBPF kept */
		at += 2;
		if (keys && (key >= key_cnt || !keys[key])) {
			at += len;
			continue;
		}
		for (i = 0; i < cnt && idx[i] != key; i++)
			;
		if (i == cnt) {
			if (cnt == SAMPLE_TRACE_ATTRS_MAX) {
				at += len;
				continue;
			}
			idx[cnt++] = key;
		}
		/* a value ends at its length or at a NUL, whichever comes first */
		memcpy(text->attr_value[i], attrs + at, len);
		text->attr_value[i][len] = '\0';
		at += len;
	}
	for (i = 0; i < cnt; i++) {
		if (keys)
			out[i].key = keys[idx[i]];
		else {
			snprintf(text->attr_key[i], sizeof(text->attr_key[i]), "thread.attr.%d",
				 idx[i]);
			out[i].key = text->attr_key[i];
		}
		out[i].value = text->attr_value[i];
	}
	return cnt;
}

uint32_t sample_trace__labels_keyed(const struct sample_trace *t, const char *const *keys,
				    size_t key_cnt, struct sample_trace_text *text,
				    struct profile_label *out)
{
	size_t n = t->attrs_sz < sizeof(t->attrs) ? t->attrs_sz : sizeof(t->attrs);

	if (t->state == OTEL_TRACE_BAD) {
		out[0] = (struct profile_label){ SAMPLE_TRACE_MARKER_KEY,
						 SAMPLE_TRACE_MARKER_VALUE };
		return 1;
	}
	if (t->state != OTEL_TRACE_SET)
		return 0;
	trace_label__hex(t->trace_id, sizeof(t->trace_id), text->trace_id);
	trace_label__hex(t->span_id, sizeof(t->span_id), text->span_id);
	out[0] = (struct profile_label){ TRACE_LABEL_TRACE, text->trace_id };
	out[1] = (struct profile_label){ TRACE_LABEL_SPAN, text->span_id };
	return 2 + attr_labels(t->attrs, n, keys, key_cnt, text, out + 2);
}

uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out)
{
	return sample_trace__labels_keyed(t, NULL, 0, text, out);
}
