/* libFuzzer target for the OTel process context decoder (src/export/process_context_pb.c):
 * the input is a ProcessContext payload as a process publishes it. A decoded context must hold
 * at most PCTX_ATTR_MAX attributes, each with a non-empty key, printable valid UTF-8 strings
 * and a known type and source, and copy to an equal one. Nothing may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_process_context.sh (seeds: payloads made by this file
 * built with -DFUZZ_PCTX_SEEDS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "export/process_context_pb.h"
#include "export/protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const char *s)
{
	const unsigned char *c;

	if (!s || !utf8__valid(s, strlen(s)))
		abort();
	for (c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pctx_attrs a, c;
	size_t i;

	if (pctx_attrs__decode(data, size, &a))
		return 0;
	if (a.cnt > PCTX_ATTR_MAX)
		abort();
	for (i = 0; i < a.cnt; i++) {
		const struct pctx_attr *x = &a.attrs[i];

		check_string(x->key);
		check_string(x->str);
		if (!*x->key || x->type < PCTX_STRING || x->type > PCTX_DOUBLE ||
		    (x->source != PCTX_FROM_RESOURCE && x->source != PCTX_FROM_EXTRA) ||
		    pctx_attrs__find(&a, x->key) != x)
			abort();
	}
	if (a.key_map_cnt > PCTX_KEY_MAP_MAX || (a.key_map_cnt && !a.key_map))
		abort();
	for (i = 0; i < a.key_map_cnt; i++) {
		if (a.key_map[i])
			check_string(a.key_map[i]);
		if (a.key_map[i] && (!*a.key_map[i] || strlen(a.key_map[i]) > 3 * PCTX_KEY_MAX))
			abort();
	}
	if (pctx_attrs__copy(&c, &a) == 0) {
		if (c.cnt != a.cnt || c.key_map_cnt != a.key_map_cnt || !c.key_map != !a.key_map)
			abort();
		for (i = 0; i < c.key_map_cnt; i++)
			if (!c.key_map[i] != !a.key_map[i] ||
			    (c.key_map[i] && strcmp(c.key_map[i], a.key_map[i])))
				abort();
		for (i = 0; i < c.cnt; i++)
			if (strcmp(c.attrs[i].key, a.attrs[i].key) ||
			    strcmp(c.attrs[i].str, a.attrs[i].str))
				abort();
		pctx_attrs__clear(&c);
	}
	pctx_attrs__clear(&a);
	return 0;
}

#ifdef FUZZ_PCTX_SEEDS
static void kv(struct pb_buf *b, uint32_t field, const char *key, int kind, const char *s,
	       uint64_t v)
{
	size_t m, any;

	pb_buf__begin(b, field, &m);
	pb_buf__string(b, 1, key);
	pb_buf__begin(b, 2, &any);
	if (kind == 1)
		pb_buf__string(b, 1, s);
	else if (kind == 4)
		pb_buf__fixed64(b, 4, v);
	else
		pb_buf__varint(b, (uint32_t)kind, v);
	pb_buf__end(b, any);
	pb_buf__end(b, m);
}

/* Seed corpus: two contexts written into the folder argv[1]. */
int main(int argc, char **argv)
{
	struct pb_buf b;
	char path[4096];
	size_t r;
	int n;

	if (argc < 2)
		return 2;
	for (n = 0; n < 2; n++) {
		FILE *f;

		pb_buf__init(&b, 1 << 20);
		pb_buf__begin(&b, 1, &r);
		kv(&b, 1, "service.name", 1, n ? "checkout" : "a", 0);
		kv(&b, 1, "service.instance.id", 1, "0001", 0);
		kv(&b, 1, "pctx.int", 3, NULL, 42);
		kv(&b, 1, "pctx.bool", 2, NULL, 1);
		kv(&b, 1, "pctx.double", 4, NULL, 0x3fe0000000000000ull);
		pb_buf__end(&b, r);
		if (n) {
			size_t m, any, arr, el;

			kv(&b, 2, "threadlocal.schema_version", 1, "v1", 0);
			pb_buf__begin(&b, 2, &m); /* the thread context's key map: two names */
			pb_buf__string(&b, 1, PCTX_KEY_MAP);
			pb_buf__begin(&b, 2, &any);
			pb_buf__begin(&b, 5, &arr);
			pb_buf__begin(&b, 1, &el);
			pb_buf__string(&b, 1, "http.route");
			pb_buf__end(&b, el);
			pb_buf__begin(&b, 1, &el);
			pb_buf__string(&b, 1, "http.method");
			pb_buf__end(&b, el);
			pb_buf__end(&b, arr);
			pb_buf__end(&b, any);
			pb_buf__end(&b, m);
		}
		snprintf(path, sizeof(path), "%s/seed%d", argv[1], n);
		f = fopen(path, "wb");
		if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f))
			return 1;
		pb_buf__free(&b);
	}
	return 0;
}
#endif
