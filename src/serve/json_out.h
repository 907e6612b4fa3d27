/* A JSON text being written into one growable buffer, for the UI's API answers.
 *
 * Invariants: the text never grows past max_sz bytes; errors are sticky (after the first,
 * nothing more is written and json_out__err() reports it: -ENOMEM or -EMSGSIZE); strings are
 * written as valid JSON whatever their bytes: control characters escaped, bytes that are
 * not UTF-8 replaced by U+FFFD. The caller writes the structure (commas included).
 */
#ifndef STACKSCOPE_JSON_OUT_H
#define STACKSCOPE_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

struct json_out {
	char *data; /* owned, NUL-terminated while err is 0 */
	size_t len, cap, max_sz;
	int err;
};

void json_out__init(struct json_out *j, size_t max_sz);
void json_out__free(struct json_out *j);
/* Hands the text over (caller frees) and leaves j empty; NULL after an error. */
char *json_out__take(struct json_out *j, size_t *len);
int json_out__err(const struct json_out *j);

/* Raw text (punctuation, keys known to need no escaping). */
void json_out__raw(struct json_out *j, const char *s);
/* A string value, quoted and escaped; NULL writes null. */
void json_out__str(struct json_out *j, const char *s);
void json_out__u64(struct json_out *j, uint64_t v);
/* Raw text then a number, e.g. (",\"v\":", 12) for ,"v":12 */
void json_out__raw_u64(struct json_out *j, const char *raw, uint64_t v);
/* "key": (the key escaped too) */
void json_out__key(struct json_out *j, const char *key);

#endif
