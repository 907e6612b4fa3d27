/* UTF-8 validation and cleaning (see utf8.h). The decoder follows the table of well-formed
 * byte sequences in the Unicode standard (ch. 3, table 3-7): the second byte's range
 * depends on the first byte, which rules out overlongs, surrogates and code points past
 * U+10FFFF without decoding the value.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

static const char utf8_replacement[] = "\xef\xbf\xbd";

size_t utf8__seq_len(const char *str, size_t len, size_t *bad_len)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 3;
		if (s[0] == 0xe0)
			lo = 0xa0; /* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 4;
		if (s[0] == 0xf0)
			lo = 0x90; /* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else {
		/* 0x80..0xc1 (continuation or overlong lead) and 0xf5..0xff */
		if (bad_len)
			*bad_len = 1;
		return 0;
	}
	for (i = 1; i < need; i++) {
		if (i >= len || s[i] < lo || s[i] > hi) {
			if (bad_len)
				*bad_len = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return need;
}

bool utf8__valid(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		n = utf8__seq_len(s + i, len - i, NULL);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *utf8__sanitize(const char *s, size_t len)
{
	size_t i = 0, o = 0, n, bad, out_sz;
	char *out;

	/* every input byte becomes at most 3 output bytes */
	if (len > (SIZE_MAX - 1) / 3) {
		errno = ENOMEM;
		return NULL;
	}
	out_sz = len * 3 + 1;
	out = malloc(out_sz);
	if (!out)
		return NULL;
	while (i < len) {
		n = utf8__seq_len(s + i, len - i, &bad);
		if (n && s[i] != '\0') {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		memcpy(out + o, utf8_replacement, 3);
		o += 3;
		i += n ? n : bad;
	}
	out[o] = '\0';
	return out;
}
