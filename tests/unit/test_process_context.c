/* Unit tests for OpenTelemetry's process context (OTEP 4719): the payload decoder
 * (export/process_context_pb.c) on good, hostile and capped payloads, the maps-name match
 * and the reader (proc/process_context.c) on this process's own memory: a consistent read,
 * an unchanged one, an update in progress, a bad header, a size of 2 GiB, a wild pointer,
 * and the probe finding a memfd mapping named OTEL_CTX; the table
 * (pipeline/process_context_table.c) probing a new process only once it had a sample.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "export/process_context_pb.h"
#include "export/protobuf.h"
#include "pipeline/process_context_table.h"
#include "proc/process.h"
#include "proc/process_context.h"
#include "test.h"

/* KeyValue { key; AnyValue { kind: 's' string, 'i' int, 'b' bool, 'd' double, 'a' array } } */
static void kv(struct pb_buf *b, uint32_t field, const char *key, char kind, const char *s,
	       int64_t i, double d)
{
	size_t m, v, a;
	uint64_t bits;

	pb_buf__begin(b, field, &m);
	pb_buf__string(b, 1, key);
	pb_buf__begin(b, 2, &v);
	if (kind == 's') {
		pb_buf__string(b, 1, s);
	} else if (kind == 'i' || kind == 'b') {
		pb_buf__varint(b, kind == 'i' ? 3 : 2, (uint64_t)i);
	} else if (kind == 'd') {
		memcpy(&bits, &d, 8);
		pb_buf__fixed64(b, 4, bits);
	} else {
		pb_buf__begin(b, 5, &a);
		pb_buf__end(b, a);
	}
	pb_buf__end(b, v);
	pb_buf__end(b, m);
}

static void good_payload(struct pb_buf *b)
{
	size_t r;

	pb_buf__init(b, 1 << 20);
	kv(b, 2, "threadlocal.schema_version", 's', "v1", 0, 0); /* before the resource */
	pb_buf__begin(b, 1, &r);
	kv(b, 1, "service.name", 's', "checkout", 0, 0);
	kv(b, 1, "pctx.int", 'i', NULL, -7, 0);
	kv(b, 1, "pctx.bool", 'b', NULL, 1, 0);
	kv(b, 1, "pctx.double", 'd', NULL, 0, 0.25);
	kv(b, 1, "pctx.array", 'a', NULL, 0, 0);
	kv(b, 1, "service.name", 's', "second", 0, 0);
	kv(b, 1, "pctx.ctl", 's', "a\tb\x01", 0, 0);
	kv(b, 1, "pctx.utf8", 's', "x\xff", 0, 0);
	pb_buf__varint(b, 2, 3); /* dropped_attributes_count */
	pb_buf__end(b, r);
}

TEST(decode_good)
{
	struct pctx_attrs a;
	struct pb_buf b;
	const struct pctx_attr *x;

	good_payload(&b);
	REQUIRE(!pb_buf__err(&b));
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK_EQ_INT(a.cnt, 7);
	CHECK_EQ_INT(a.skipped, 2); /* the array, the second service.name */
	REQUIRE(a.cnt == 7);
	CHECK_STR(a.attrs[0].key, "service.name"); /* the resource's first */
	CHECK_STR(a.attrs[0].str, "checkout");
	CHECK_EQ_INT(a.attrs[0].source, PCTX_FROM_RESOURCE);
	CHECK_EQ_INT(a.attrs[1].type, PCTX_INT);
	CHECK_EQ_INT(a.attrs[1].i, -7);
	CHECK_STR(a.attrs[1].str, "-7");
	CHECK_EQ_INT(a.attrs[2].type, PCTX_BOOL);
	CHECK_STR(a.attrs[2].str, "true");
	CHECK_EQ_INT(a.attrs[3].type, PCTX_DOUBLE);
	CHECK(a.attrs[3].d == 0.25);
	CHECK_STR(a.attrs[4].str, "a?b?");
	CHECK_STR(a.attrs[5].str, "x\xef\xbf\xbd");
	CHECK_STR(a.attrs[6].key, "threadlocal.schema_version");
	CHECK_EQ_INT(a.attrs[6].source, PCTX_FROM_EXTRA);
	x = pctx_attrs__find(&a, "pctx.bool");
	CHECK(x && x->b);
	CHECK(!pctx_attrs__find(&a, "pctx.array"));
	{
		struct pctx_attrs c;

		REQUIRE(pctx_attrs__copy(&c, &a) == 0);
		CHECK_EQ_INT(c.cnt, a.cnt);
		CHECK_STR(c.attrs[6].str, "v1");
		pctx_attrs__clear(&c);
	}
	pctx_attrs__clear(&a);
	pctx_attrs__clear(&a); /* twice: harmless */
	pb_buf__free(&b);
	/* empty: a valid context with nothing in it */
	REQUIRE(pctx_attrs__decode("", 0, &a) == 0);
	CHECK_EQ_INT(a.cnt, 0);
	pctx_attrs__clear(&a);
}

TEST(decode_hostile)
{
	/* resource { KeyValue { key: length 1000 in 12 bytes } } */
	static const uint8_t lie[] = { 0x0a, 0x11, 0x0a, 0x0f, 0x0a, 0xe8, 0x07, 's', 'e', 'r',
				       'v',  'i',  'c',  'e',  '.',  'n',  'a',  'm', 'e' };
	/* resource as a varint: a wrong wire type for a known field */
	static const uint8_t wire[] = { 0x08, 0x01 };
	/* a value's string as a varint */
	static const uint8_t wire2[] = { 0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 0x08 };
	struct pctx_attrs a;
	struct pb_buf b;
	size_t r, i;
	uint8_t *big;
	char key[32], longkey[PCTX_KEY_MAX + 2];

	CHECK_EQ_INT(pctx_attrs__decode(lie, sizeof(lie), &a), -EBADMSG);
	CHECK(a.cnt == 0 && !a.attrs);
	CHECK_EQ_INT(pctx_attrs__decode(wire, sizeof(wire), &a), -EBADMSG);
	CHECK_EQ_INT(pctx_attrs__decode(wire2, sizeof(wire2), &a), -EBADMSG);
	/* every truncation of a good payload: refused or decoded, never more than it holds */
	good_payload(&b);
	for (i = 0; i < b.len; i++) {
		int err = pctx_attrs__decode(b.data, i, &a);

		CHECK(err == 0 || err == -EBADMSG);
		CHECK(a.cnt <= 7);
		pctx_attrs__clear(&a);
	}
	pb_buf__free(&b);
	/* over the size cap: refused unread */
	big = calloc(1, PCTX_PAYLOAD_MAX + 1);
	REQUIRE(big);
	CHECK_EQ_INT(pctx_attrs__decode(big, PCTX_PAYLOAD_MAX + 1, &a), -EBADMSG);
	free(big);
	/* caps: attribute count, key length */
	pb_buf__init(&b, 1 << 20);
	pb_buf__begin(&b, 1, &r);
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	kv(&b, 1, longkey, 's', "v", 0, 0);
	kv(&b, 1, "", 's', "empty key", 0, 0);
	for (i = 0; i < PCTX_ATTR_MAX + 10; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		kv(&b, 1, key, 'i', NULL, (int64_t)i, 0);
	}
	pb_buf__end(&b, r);
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK_EQ_INT(a.cnt, PCTX_ATTR_MAX);
	CHECK_EQ_INT(a.skipped, 12);
	CHECK_STR(a.attrs[0].key, "k0");
	pctx_attrs__clear(&a);
	pb_buf__free(&b);
	/* deep nesting is skipped unread: 3000 arrays inside one value */
	pb_buf__init(&b, 1 << 20);
	{
		size_t marks[3000], m, v;

		pb_buf__begin(&b, 1, &r);
		pb_buf__begin(&b, 1, &m);
		pb_buf__string(&b, 1, "deep");
		pb_buf__begin(&b, 2, &v);
		for (i = 0; i < 3000; i++)
			pb_buf__begin(&b, i % 2 ? 1 : 5, &marks[i]);
		while (i--)
			pb_buf__end(&b, marks[i]);
		pb_buf__end(&b, v);
		pb_buf__end(&b, m);
		kv(&b, 1, "service.name", 's', "after", 0, 0);
		pb_buf__end(&b, r);
	}
	REQUIRE(!pb_buf__err(&b));
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK_EQ_INT(a.cnt, 1);
	CHECK_EQ_INT(a.skipped, 1);
	CHECK_STR(pctx_attrs__find(&a, "service.name")->str, "after");
	pctx_attrs__clear(&a);
	pb_buf__free(&b);
}

/* ProcessContext.attributes' key map: an ArrayValue of the AnyValues given as a kind string
 * ('s': the next name, 'i': an int, 'e': an empty string, 'n': nothing set, 'x': a string
 * field with a varint's wire type).
 */
static void key_map(struct pb_buf *b, const char *kinds, const char *const *names)
{
	size_t m, v, a, el;

	pb_buf__begin(b, 2, &m);
	pb_buf__string(b, 1, PCTX_KEY_MAP);
	pb_buf__begin(b, 2, &v);
	pb_buf__begin(b, 5, &a);
	for (; *kinds; kinds++) {
		pb_buf__begin(b, 1, &el);
		if (*kinds == 's')
			pb_buf__string(b, 1, *names++);
		else if (*kinds == 'e')
			pb_buf__string(b, 1, "");
		else if (*kinds == 'i')
			pb_buf__varint(b, 3, 7);
		else if (*kinds == 'x')
			pb_buf__varint(b, 1, 1);
		pb_buf__end(b, el);
	}
	pb_buf__end(b, a);
	pb_buf__end(b, v);
	pb_buf__end(b, m);
}

TEST(decode_key_map)
{
	static const char *const names[] = { "http.route", "http.method", "user\x01id", "later" };
	struct pctx_attrs a, c;
	struct pb_buf b;
	size_t i, r;

	pb_buf__init(&b, 1 << 20);
	pb_buf__begin(&b, 1, &r);
	kv(&b, 1, "service.name", 's', "checkout", 0, 0);
	pb_buf__end(&b, r);
	key_map(&b, "sien", names);
	key_map(&b, "s", names + 3); /* given twice: the first wins, the second skipped */
	REQUIRE(!pb_buf__err(&b));
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK_EQ_INT(a.cnt, 1); /* the map is not an attribute */
	CHECK_EQ_INT(a.skipped, 1);
	REQUIRE(a.key_map);
	CHECK_EQ_INT(a.key_map_cnt, 4);
	CHECK_STR(a.key_map[0], "http.route");
	CHECK(!a.key_map[1]); /* an int names nothing */
	CHECK(!a.key_map[2]); /* nor does an empty string */
	CHECK(!a.key_map[3]); /* nor an unset value */
	REQUIRE(pctx_attrs__copy(&c, &a) == 0);
	CHECK_EQ_INT(c.key_map_cnt, 4);
	CHECK_STR(c.key_map[0], "http.route");
	CHECK(c.key_map[0] != a.key_map[0]);
	CHECK(!c.key_map[1]);
	pctx_attrs__clear(&c);
	pctx_attrs__clear(&a);
	pb_buf__free(&b);

	/* over 256 names: the first 256 kept, the rest still checked; control bytes made '?' */
	pb_buf__init(&b, 1 << 20);
	{
		char kinds[PCTX_KEY_MAP_MAX + 11];
		const char *many[PCTX_KEY_MAP_MAX + 10];

		memset(kinds, 's', sizeof(kinds) - 1);
		kinds[sizeof(kinds) - 1] = '\0';
		for (i = 0; i < PCTX_KEY_MAP_MAX + 10; i++)
			many[i] = i == 2 ? names[2] : names[i % 2];
		key_map(&b, kinds, many);
	}
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK_EQ_INT(a.key_map_cnt, PCTX_KEY_MAP_MAX);
	CHECK_STR(a.key_map[255], "http.method");
	CHECK_STR(a.key_map[2], "user?id");
	pctx_attrs__clear(&a);
	/* a truncation anywhere: refused or decoded, never a map past its elements */
	for (i = 0; i < b.len; i++) {
		int err = pctx_attrs__decode(b.data, i, &a);

		CHECK(err == 0 || err == -EBADMSG);
		CHECK(a.key_map_cnt <= PCTX_KEY_MAP_MAX);
		pctx_attrs__clear(&a);
	}
	pb_buf__free(&b);

	/* an element's string as a varint: the whole context refused */
	pb_buf__init(&b, 1 << 20);
	key_map(&b, "sx", names);
	REQUIRE(!pb_buf__err(&b));
	CHECK_EQ_INT(pctx_attrs__decode(b.data, b.len, &a), -EBADMSG);
	CHECK(!a.key_map && !a.key_map_cnt);
	pb_buf__free(&b);
	/* a key map that is a string: an extra attribute like any other, no map */
	pb_buf__init(&b, 1 << 20);
	kv(&b, 2, PCTX_KEY_MAP, 's', "http.route", 0, 0);
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK(!a.key_map);
	CHECK_EQ_INT(a.cnt, 1);
	pctx_attrs__clear(&a);
	pb_buf__free(&b);
	/* an empty array: a map that names nothing */
	pb_buf__init(&b, 1 << 20);
	key_map(&b, "", names);
	REQUIRE(pctx_attrs__decode(b.data, b.len, &a) == 0);
	CHECK(a.key_map != NULL);
	CHECK_EQ_INT(a.key_map_cnt, 0);
	pctx_attrs__clear(&a);
	pb_buf__free(&b);
}

TEST(maps_names)
{
	CHECK_EQ_U64(process_context__find_in_maps(
			     "55d0c0a00000-55d0c0a02000 r--p 00000000 fd:01 131 /usr/bin/x\n"
			     "7f0000001000-7f0000002000 rw-p 00000000 00:00 0   [anon:OTEL_CTX]\n"),
		     0x7f0000001000);
	CHECK_EQ_U64(
		process_context__find_in_maps(
			"7f0000003000-7f0000004000 rw-s 00000000 00:01 77 [anon_shmem:OTEL_CTX]"),
		0x7f0000003000);
	CHECK_EQ_U64(process_context__find_in_maps(
			     "7f0000005000-7f0000006000 rw-p 00000000 00:01 1029 "
			     "/memfd:OTEL_CTX (deleted)\n"),
		     0x7f0000005000);
	/* the name elsewhere in a path, or another name */
	CHECK_EQ_U64(process_context__find_in_maps(
			     "7f0000007000-7f0000008000 rw-p 00000000 fd:01 9 /tmp/memfd:OTEL_CTX\n"
			     "7f0000009000-7f000000a000 rw-p 00000000 00:00 0 [anon:OTEL_CTXX]\n"
			     "7f000000b000-7f000000c000 rw-p 00000000 00:00 0 [anon:other]\n"),
		     0);
	/* a name that starts with one of the three: the OTEP's rule */
	CHECK_EQ_U64(process_context__find_in_maps(
			     "7f000000d000-7f000000e000 rw-p 00000000 00:00 0 [anon:OTEL_CTX] x\n"),
		     0x7f000000d000);
	CHECK_EQ_U64(process_context__find_in_maps("OTEL_CTX"), 0);
	CHECK_EQ_U64(process_context__find_in_maps(""), 0);
}

struct test_header {
	char signature[8];
	uint32_t version, payload_size;
	uint64_t published_ns, payload;
};

/* This process publishes good_payload() (into *b) at published_ns: the header in a memfd
 * mapping named OTEL_CTX (one page, munmap() it), or NULL.
 */
static struct test_header *publish(struct pb_buf *b, uint64_t published_ns)
{
	struct test_header *h;
	int fd;

	fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	h = ftruncate(fd, 4096) ? MAP_FAILED
				: mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return NULL;
	good_payload(b);
	memcpy(h->signature, "OTEL_CTX", 8);
	h->version = 2;
	h->payload_size = (uint32_t)b->len;
	h->payload = (uint64_t)(uintptr_t)b->data;
	h->published_ns = published_ns;
	return h;
}

TEST(read_own_memory)
{
	struct test_header *h;
	struct pb_buf b;
	static uint8_t buf[PCTX_PAYLOAD_MAX];
	unsigned int tries;
	uint64_t ts;
	size_t len;

	h = publish(&b, 1234);
	REQUIRE(h);
	CHECK_EQ_U64(process_context__probe(getpid()), (uint64_t)(uintptr_t)h);
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_OK);
	CHECK_EQ_INT(len, b.len);
	CHECK_EQ_U64(ts, 1234);
	CHECK_EQ_INT(tries, 1);
	CHECK(!memcmp(buf, b.data, b.len));
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 1234, buf, &len, &ts, &tries),
		     PCTX_UNCHANGED);
	h->published_ns = 0; /* an update in progress, forever */
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 1234, buf, &len, &ts, &tries),
		     PCTX_TORN);
	CHECK_EQ_INT(tries, PCTX_READ_TRIES);
	h->published_ns = 99;
	h->payload_size = 0x80000000u;
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_TOO_BIG);
	CHECK_EQ_U64(ts, 99);
	h->payload_size = 100;
	h->payload = 0x10;
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_BAD_PAYLOAD);
	h->payload = UINT64_MAX - 10; /* wraps */
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_BAD_PAYLOAD);
	memset(h, 0, sizeof(*h)); /* mapped, not yet written */
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_NOT_READY);
	memcpy(h->signature, "OTEL_CTX", 8);
	h->published_ns = 5;
	h->version = 3;
	CHECK_EQ_INT(process_context__read(getpid(), (uintptr_t)h, 0, buf, &len, &ts, &tries),
		     PCTX_BAD_HEADER);
	CHECK_EQ_INT(process_context__read(getpid(), 0x10, 0, buf, &len, &ts, &tries), PCTX_GONE);
	munmap(h, 4096);
	CHECK_EQ_U64(process_context__probe(getpid()), 0);
	pb_buf__free(&b);
}

/* A new process's maps are probed at the due times only when it had a sample since the last
 * one: unsampled, nothing is read (counted); sampled, the next due probe finds its context.
 */
TEST(table_probes_sampled_only)
{
	const struct pctx_stats *st;
	struct process p = { .pid = getpid() };
	struct pctx_table *t;
	struct test_header *h;
	const char *refused;
	struct pb_buf b;
	uint64_t t0 = 1000000000ULL;

	h = publish(&b, 77);
	REQUIRE(h);
	t = pctx_table__new();
	REQUIRE(t);
	st = pctx_table__stats(t);
	pctx_table__started(t);
	pctx_table__scanned(t, &p, t0); /* a new process, its scan saw no context */
	pctx_table__tick(t, t0 + PCTX_PROBE_FIRST_NS);
	CHECK_EQ_U64(st->v[PCTX_STAT_PROBES], 0);
	CHECK_EQ_U64(st->v[PCTX_STAT_PROBES_SKIPPED], 1);
	CHECK(!pctx_table__get(t, p.pid));
	/* a sample (before the context is known: no service yet) */
	CHECK(!pctx_table__service(t, p.pid, &refused));
	CHECK(!refused);
	pctx_table__tick(t, t0 + 2 * PCTX_PROBE_FIRST_NS); /* not due yet: the gap doubled */
	CHECK_EQ_U64(st->v[PCTX_STAT_PROBES], 0);
	pctx_table__tick(t, t0 + 3 * PCTX_PROBE_FIRST_NS);
	CHECK_EQ_U64(st->v[PCTX_STAT_PROBES], 1);
	CHECK_EQ_U64(st->v[PCTX_STAT_PROBES_SKIPPED], 1);
	CHECK_EQ_U64(st->v[PCTX_STAT_READ], 1);
	CHECK(pctx_table__get(t, p.pid) != NULL);
	CHECK_STR(pctx_table__service(t, p.pid, &refused), "checkout");
	pctx_table__free(t);
	munmap(h, 4096);
	pb_buf__free(&b);
}

int main(void)
{
	RUN(decode_good);
	RUN(decode_hostile);
	RUN(decode_key_map);
	RUN(maps_names);
	RUN(read_own_memory);
	RUN(table_probes_sampled_only);
	return test_summary();
}
