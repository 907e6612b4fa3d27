/* UTF-8 validation and cleaning for strings that come from outside (process and thread
 * names, paths, symbol names) and go into protocols that require valid UTF-8 (protobuf
 * `string` fields: OTLP receivers reject a message with one bad string).
 *
 * Valid means RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF), nothing past
 * U+10FFFF, no truncated sequences. Cleaning replaces each maximal invalid subpart (the
 * Unicode "substitution of maximal subparts" rule, as browsers and Python do) with U+FFFD.
 * Nothing here allocates except utf8__sanitize().
 */
#ifndef STACKSCOPE_UTF8_H
#define STACKSCOPE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..len) is valid UTF-8. */
bool utf8__valid(const char *s, size_t len);

/* Length of the valid sequence starting at s[0] (1..4, at most len), or 0 when s[0] starts
 * an invalid sequence; then *bad_len (when not NULL) is the length of the maximal invalid
 * subpart to replace (1..3). len must be > 0.
 */
size_t utf8__seq_len(const char *s, size_t len, size_t *bad_len);

/* A new NUL-terminated copy of s[0..len) with every invalid subpart replaced by U+FFFD
 * (EF BF BD). Embedded NUL bytes are kept out: they are replaced too, so the result is a
 * C string with the same meaning. The caller frees it. NULL with errno ENOMEM on failure.
 */
char *utf8__sanitize(const char *s, size_t len);

#endif
