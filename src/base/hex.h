/* Hexadecimal digits: one digit's value (percent escapes, /proc/kallsyms addresses, header
 * values) and bytes written as lowercase hex (build ids, file ids).
 */
#ifndef STACKSCOPE_HEX_H
#define STACKSCOPE_HEX_H

#include <stddef.h>

/* The value of the hex digit c (either case), or -1 for any other character. */
static inline int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Writes bytes[0..n) as 2 * n lowercase digits and a NUL into out (2 * n + 1 bytes). */
static inline void hex_encode(const unsigned char *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

#endif
