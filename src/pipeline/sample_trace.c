/* The span of a sample as its labels (sample_trace.h). */
#include "pipeline/sample_trace.h"
#include "profile/trace_label.h"

uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out)
{
	if (t->state != OTEL_TRACE_SET)
		return 0;
	trace_label__hex(t->trace_id, sizeof(t->trace_id), text->trace_id);
	trace_label__hex(t->span_id, sizeof(t->span_id), text->span_id);
	out[0] = (struct profile_label){ TRACE_LABEL_TRACE, text->trace_id };
	out[1] = (struct profile_label){ TRACE_LABEL_SPAN, text->span_id };
	return SAMPLE_TRACE_LABELS;
}
