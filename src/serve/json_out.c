/* JSON text output: see json_out.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "serve/json_out.h"

void json_out__init(struct json_out *j, size_t max_sz)
{
	*j = (struct json_out){ .max_sz = max_sz };
}

void json_out__free(struct json_out *j)
{
	free(j->data);
	j->data = NULL;
	j->len = j->cap = 0;
}

char *json_out__take(struct json_out *j, size_t *len)
{
	char *d = j->err ? NULL : j->data;

	if (j->err)
		free(j->data);
	*len = d ? j->len : 0;
	j->data = NULL;
	j->len = j->cap = 0;
	return d;
}

int json_out__err(const struct json_out *j)
{
	return j->err;
}

static void put(struct json_out *j, const char *s, size_t n)
{
	if (j->err)
		return;
	if (n > j->max_sz || j->len > j->max_sz - n) {
		j->err = -EMSGSIZE;
		return;
	}
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		char *d;

		while (cap < j->len + n + 1)
			cap *= 2;
		d = realloc(j->data, cap);
		if (!d) {
			j->err = -ENOMEM;
			return;
		}
		j->data = d;
		j->cap = cap;
	}
	memcpy(j->data + j->len, s, n);
	j->len += n;
	j->data[j->len] = '\0';
}

void json_out__raw(struct json_out *j, const char *s)
{
	put(j, s, strlen(s));
}

void json_out__str(struct json_out *j, const char *s)
{
	size_t len, i = 0, run = 0;

	if (!s) {
		put(j, "null", 4);
		return;
	}
	len = strlen(s);
	put(j, "\"", 1);
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		size_t bad = 0, n;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			i++;
			run++;
			continue;
		}
		put(j, s + i - run, run);
		run = 0;
		if (c < 0x80) {
			if (c == '"' || c == '\\')
				snprintf(esc, sizeof(esc), "\\%c", c);
			else
				snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(j, esc, strlen(esc));
			i++;
			continue;
		}
		n = utf8__seq_len(s + i, len - i, &bad);
		if (n) {
			put(j, s + i, n);
			i += n;
		} else {
			put(j, "\\ufffd", 6);
			i += bad ? bad : 1;
		}
	}
	put(j, s + i - run, run);
	put(j, "\"", 1);
}

void json_out__u64(struct json_out *j, uint64_t v)
{
	char num[20]; /* UINT64_MAX has 20 digits; written from the end, no NUL */
	size_t i = sizeof(num);

	do {
		num[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(j, num + i, sizeof(num) - i);
}

void json_out__raw_u64(struct json_out *j, const char *raw, uint64_t v)
{
	json_out__raw(j, raw);
	json_out__u64(j, v);
}

void json_out__key(struct json_out *j, const char *key)
{
	json_out__str(j, key);
	put(j, ":", 1);
}
