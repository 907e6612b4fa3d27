/* A sample's span as labels (trace_label.h). */
#include <stdio.h>
#include <string.h>

#include "profile/trace_label.h"

void trace_label__hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool trace_label__parse(const char *hex, uint8_t *out, size_t n)
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

bool trace_label__filter(const char *id, char *out)
{
	uint8_t bytes[16];
	char hex[33];
	size_t i;

	if (!id || strlen(id) != 32)
		return false;
	for (i = 0; i < 32; i++)
		hex[i] = id[i] >= 'A' && id[i] <= 'F' ? (char)(id[i] - 'A' + 'a') : id[i];
	hex[32] = '\0';
	if (!trace_label__parse(hex, bytes, sizeof(bytes)))
		return false;
	snprintf(out, TRACE_LABEL_FILTER_SZ, "%s=%s", TRACE_LABEL_TRACE, hex);
	return true;
}

bool trace_label__is_key(const char *key)
{
	return !strcmp(key, TRACE_LABEL_TRACE) || !strcmp(key, TRACE_LABEL_SPAN);
}
