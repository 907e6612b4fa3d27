/* The span of a sample as its labels (sample_trace.h). */
#include <string.h>

#include "pipeline/sample_trace.h"

static void hex_of(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

uint32_t sample_trace__labels(const struct sample_trace *t, struct sample_trace_text *text,
			      struct profile_label *out)
{
	if (t->state != OTEL_TRACE_SET)
		return 0;
	hex_of(t->trace_id, sizeof(t->trace_id), text->trace_id);
	hex_of(t->span_id, sizeof(t->span_id), text->span_id);
	out[0] = (struct profile_label){ SAMPLE_TRACE_KEY_TRACE, text->trace_id };
	out[1] = (struct profile_label){ SAMPLE_TRACE_KEY_SPAN, text->span_id };
	return SAMPLE_TRACE_LABELS;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool sample_trace__parse_id(const char *hex, uint8_t *out, size_t n)
{
	uint8_t any = 0;
	size_t i;
	int hi, lo;

	if (!hex || strlen(hex) != 2 * n)
		return false;
	for (i = 0; i < n; i++) {
		hi = hex_digit(hex[2 * i]);
		lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
		any |= out[i];
	}
	return any != 0;
}
