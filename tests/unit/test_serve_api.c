/* Unit tests for the web UI's server side (src/serve/), without sockets: the call tree of a
 * synthetic profile (inlined levels as nodes, a recursive function's total counted once,
 * frame types, the frame-type filter, a diff's two sides), its JSON (bad UTF-8 replaced),
 * and the API handler over a temporary store: intervals, flamegraph with filters, filters,
 * pprof download, the strict parameter checks (a time past int64 refused), 404 for anything
 * but the page and /api/, and 503 while the store does not exist. Uploads to POST /api/diff
 * (serve/upload.c): two real files compared; the hostile ones of issue 39 refused at once and
 * at a fixed cost (a gzip bomb, one sample of 200,000 frames naming a 100 KB function, a
 * sample whose names would cost the import 256 MiB of hashing), a truncated one, one sample
 * over the frame cap, and the CPU-time backstop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/http_server.h"
#include "export/pprof.h"
#include "export/pprof_fields.h"
#include "export/protobuf.h"
#include "profile/profile.h"
#include "serve/flame_tree.h"
#include "serve/json_out.h"
#include "serve/serve_api.h"
#include "serve/upload.h"
#include "store/store.h"
#include "test.h"

/* pid 10 "one": main;a(inlined helper);leaf x3 and main;a(inlined helper);[kernel] x1;
 * pid 20 "two": main;rec;rec;leaf x2 and main;py_handler (cpython) x1; a leaf named in bad
 * UTF-8 under main x1 (pid 20).
 */
static struct profile *make_profile(uint64_t t)
{
	struct profile_opts po = { .period_ns = 10000000, .start_time_ns = t };
	struct profile *p = profile__new(&po);
	struct profile_mapping exe = { "/usr/bin/app", NULL, 0x1000, 0x9000, 0x1000, NULL, NULL };
	struct profile_line l_main[] = { { "main", "app.c", 1 } };
	struct profile_line l_a[] = { { "helper", "app.c", 2 }, { "a", "app.c", 3 } };
	struct profile_line l_leaf[] = { { "leaf", "app.c", 4 } };
	struct profile_line l_rec[] = { { "rec", "app.c", 5 } };
	struct profile_line l_k[] = { { "do_syscall_64", NULL, 0 } };
	struct profile_line l_py[] = { { "py_handler", "app.py", 6 } };
	struct profile_line l_bad[] = { { "bad\xff\xfename\x01", NULL, 0 } };
	uint32_t m, f_main, f_a, f_leaf, f_rec, f_k, f_py, f_bad;
	uint32_t s1[3], s2[3], s3[4], s4[2], s5[2];

	REQUIRE(p);
	m = profile__add_mapping(p, &exe);
	f_main = profile__add_frame(p,
				    &(struct profile_frame){ FRAME_NATIVE, m, 0x1100, l_main, 1 });
	f_a = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x1200, l_a, 2 });
	f_leaf = profile__add_frame(p,
				    &(struct profile_frame){ FRAME_NATIVE, m, 0x1300, l_leaf, 1 });
	f_rec = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x1400, l_rec, 1 });
	f_k = profile__add_frame(p, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffffffff81000000ULL,
							     l_k, 1 });
	f_py = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, l_py, 1,
							      "cpython" });
	f_bad = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, m, 0x1500, l_bad, 1 });
	s1[0] = f_leaf, s1[1] = f_a, s1[2] = f_main;
	s2[0] = f_k, s2[1] = f_a, s2[2] = f_main;
	s3[0] = f_leaf, s3[1] = f_rec, s3[2] = f_rec, s3[3] = f_main;
	s4[0] = f_py, s4[1] = f_main;
	s5[0] = f_bad, s5[1] = f_main;
#define ADD(st, n, pid_, comm_, cnt)                                                    \
	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = st,         \
								  .frame_cnt = n,       \
								  .pid = pid_,          \
								  .tid = pid_,          \
								  .comm = comm_,        \
								  .thread_comm = comm_, \
								  .count = cnt }))
	ADD(s1, 3, 10, "one", 3);
	ADD(s2, 3, 10, "one", 1);
	ADD(s3, 4, 20, "two", 2);
	ADD(s4, 2, 20, "two", 1);
	ADD(s5, 2, 20, "two", 1);
#undef ADD
	profile__set_end_time(p, t + 1000000000ULL);
	return p;
}

static char *tree_json(struct flame_tree *t, unsigned slots, int top)
{
	struct json_out j;
	size_t len;

	json_out__init(&j, 1 << 20);
	json_out__raw(&j, "{");
	if (top)
		REQUIRE(!flame_tree__top_json(t, slots, 100, &j));
	else
		flame_tree__json(t, slots, 0, &j);
	json_out__raw(&j, "}");
	return json_out__take(&j, &len);
}

TEST(tree_and_top)
{
	struct profile *p = make_profile(1000);
	struct flame_tree *t = flame_tree__new();
	char *js, *top;

	REQUIRE(t);
	REQUIRE(!flame_tree__add(t, p, 0, NULL));
	CHECK_EQ_U64(flame_tree__total(t, 0), 8);
	js = tree_json(t, 1, 0);
	REQUIRE(js);
	/* names in order of first appearance; the inlined helper is a level under a */
	CHECK(strstr(js, "\"names\":[\"all\",\"main\",\"a\",\"helper\",\"leaf\","));
	CHECK(strstr(js, "\"types\":[\"root\",\"native\",\"kernel\",\"cpython\"]"));
	CHECK(strstr(js, "\"bad\\ufffd\\ufffdname\\u0001\""));
	CHECK(strstr(js,
		     "\"root\":{\"n\":0,\"t\":0,\"v\":8,\"s\":0,\"c\":[{\"n\":1,\"t\":1,\"v\":8,"));
	top = tree_json(t, 1, 1);
	REQUIRE(top);
	CHECK(strstr(top, "{\"name\":\"leaf\",\"type\":\"native\",\"self\":5,\"total\":5}"));
	/* rec is twice on one stack: its total is 2, not 4 */
	CHECK(strstr(top, "{\"name\":\"rec\",\"type\":\"native\",\"self\":0,\"total\":2}"));
	CHECK(strstr(top, "{\"name\":\"main\",\"type\":\"native\",\"self\":0,\"total\":8}"));
	CHECK(strstr(top, "{\"name\":\"py_handler\",\"type\":\"cpython\",\"self\":1,\"total\":1}"));
	CHECK(!strncmp(top, "{\"functions\":[{\"name\":\"leaf\"", 28)); /* most self first */
	free(js);
	free(top);
	flame_tree__free(t);

	/* the frame-type filter keeps the samples with a frame of that type */
	t = flame_tree__new();
	REQUIRE(t);
	REQUIRE(!flame_tree__add(t, p, 0, "kernel"));
	CHECK_EQ_U64(flame_tree__total(t, 0), 1);
	flame_tree__free(t);

	/* a diff: the same profile on both sides, then a second side with one more sample */
	t = flame_tree__new();
	REQUIRE(t);
	REQUIRE(!flame_tree__add(t, p, 0, NULL));
	REQUIRE(!flame_tree__add(t, p, 1, "cpython"));
	CHECK_EQ_U64(flame_tree__total(t, 1), 1);
	js = tree_json(t, 2, 0);
	REQUIRE(js);
	CHECK(strstr(js, "\"root\":{\"n\":0,\"t\":0,\"v\":8,\"s\":0,\"v2\":1,\"s2\":0,"));
	CHECK_EQ_INT(flame_tree__add(t, p, 2, NULL), -EINVAL);
	free(js);
	flame_tree__free(t);
	profile__free(p);
}

TEST(depth_is_bounded)
{
	struct profile_opts po = { .period_ns = 10000000 };
	struct profile *p = profile__new(&po);
	struct profile_line l[] = { { "deep", "d.c", 1 } };
	static uint32_t stack[FLAME_TREE_MAX_DEPTH + 500];
	struct flame_tree *t = flame_tree__new();
	uint32_t f, i;
	char *js, *top;

	REQUIRE(p && t);
	f = profile__add_frame(p, &(struct profile_frame){ FRAME_RUNTIME, 0, 0, l, 1, "cpython" });
	for (i = 0; i < sizeof(stack) / sizeof(stack[0]); i++)
		stack[i] = f;
	REQUIRE(!profile__add_sample(
		p, &(struct profile_sample){ .frames = stack,
					     .frame_cnt = sizeof(stack) / sizeof(stack[0]),
					     .pid = 1,
					     .count = 7 }));
	REQUIRE(!flame_tree__add(t, p, 0, NULL));
	js = tree_json(t, 1, 0);
	top = tree_json(t, 1, 1);
	REQUIRE(js && top);
	CHECK(strstr(js, "\"[deeper frames cut]\""));
	CHECK(strstr(top, "{\"name\":\"[deeper frames cut]\",\"type\":\"error\",\"self\":7,"));
	CHECK(strstr(top, "{\"name\":\"deep\",\"type\":\"cpython\",\"self\":0,\"total\":7}"));
	free(js);
	free(top);
	flame_tree__free(t);
	profile__free(p);
}

TEST(json_limits)
{
	struct json_out j;
	size_t len;

	json_out__init(&j, 8);
	json_out__str(&j, "0123456789");
	CHECK_EQ_INT(json_out__err(&j), -EMSGSIZE);
	CHECK(!json_out__take(&j, &len));
	json_out__init(&j, 64);
	json_out__str(&j, "q\"b\\\n\xc3\xa9");
	CHECK_STR(j.data, "\"q\\\"b\\\\\\u000a\xc3\xa9\"");
	json_out__free(&j);
}

struct answer {
	int status;
	char *body;
	size_t len;
	const char *type;
};

static struct answer ask(struct serve_api *a, const char *method, const char *path,
			 const char *query, const void *body, size_t body_len)
{
	struct http_request req = { method, path, query, body, body_len };
	struct http_response r = { 0 };
	struct answer out;

	serve_api__handle(a, &req, &r);
	out.status = r.status;
	out.type = r.content_type;
	out.len = r.body_len;
	out.body = malloc(r.body_len + 1);
	REQUIRE(out.body);
	memcpy(out.body, r.body ? (const void *)r.body : r.body_static, r.body_len);
	out.body[r.body_len] = '\0';
	free(r.body);
	return out;
}

static void expect(struct serve_api *a, const char *method, const char *path, const char *query,
		   int want_status, const char *want_text, int line)
{
	struct answer x = ask(a, method, path, query, NULL, 0);

	if (x.status != want_status)
		test__fail("line %d: %s?%s: status %d, not %d", line, path, query, x.status,
			   want_status);
	if (want_text && !strstr(x.body, want_text))
		test__fail("line %d: %s?%s: no %s in %.300s", line, path, query, want_text, x.body);
	free(x.body);
}

#define EXPECT(a, method, path, query, status, text) \
	expect(a, method, path, query, status, text, __LINE__)

TEST(api_over_a_store)
{
	char dir[] = "/tmp/test_serve_api.XXXXXX", path[128], q[128];
	struct store_opts so = { .path = path };
	struct serve_api *a;
	struct profile *p;
	struct store *st;
	struct answer x;
	char err[256];

	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.db", dir);
	a = serve_api__new(path);
	REQUIRE(a);
	/* no store yet: not available, and the page still loads */
	EXPECT(a, "GET", "/api/intervals", "", 503, "cannot open the store");
	EXPECT(a, "GET", "/", "", 200, "<title>stackscope</title>");
	st = store__open(&so, err, sizeof(err));
	REQUIRE(st);
	p = make_profile(5000000000ULL);
	REQUIRE(!store__write(st, p, NULL, NULL));
	profile__free(p);
	p = make_profile(7000000000ULL);
	REQUIRE(!store__write(st, p, NULL, NULL));
	profile__free(p);
	store__close(st);

	EXPECT(a, "GET", "/api/intervals", "", 200,
	       "{\"intervals\":[{\"id\":1,\"start\":5000000000,\"end\":6000000000,\"samples\":8},"
	       "{\"id\":2,\"start\":7000000000,\"end\":8000000000,\"samples\":8}]}");
	EXPECT(a, "GET", "/api/flamegraph", "", 200, "\"total\":16,");
	EXPECT(a, "GET", "/api/flamegraph", "from=7000000000", 200, "\"total\":8,");
	EXPECT(a, "GET", "/api/flamegraph", "pid=10", 200, "\"total\":8,");
	/* the same filter but the sample type: not the cached CPU profile (the store has none) */
	EXPECT(a, "GET", "/api/flamegraph", "pid=10&sample_type=inuse_space", 200, "\"total\":0,");
	EXPECT(a, "GET", "/api/flamegraph", "pid=10&sample_type=cpu", 200, "\"total\":8,");
	EXPECT(a, "GET", "/api/flamegraph", "comm=tw%6F&to=6000000000", 200, "\"total\":4,");
	EXPECT(a, "GET", "/api/flamegraph", "type=cpython", 200, "\"total\":2,");
	EXPECT(a, "GET", "/api/flamegraph", "fold=runtime", 200, "\"total\":16,");
	EXPECT(a, "GET", "/api/flamegraph", "fold=vm", 400, "bad parameter: fold");
	EXPECT(a, "GET", "/api/pprof", "fold=runtime", 400, "not fold");
	EXPECT(a, "GET", "/api/top", "limit=1", 200, "\"functions\":[{\"name\":\"leaf\"");
	EXPECT(a, "GET", "/api/filters", "", 200,
	       "\"processes\":[{\"pid\":10,\"comm\":\"one\",\"exe\":null,\"container\":null,"
	       "\"samples\":8},{\"pid\":20,");
	EXPECT(a, "GET", "/api/filters", "", 200, "{\"type\":\"cpython\",\"samples\":2}");
	snprintf(q, sizeof(q), "a_to=6000000000&b_from=7000000000&pid=20");
	EXPECT(a, "GET", "/api/diff", q, 200, "\"total\":4,\"total2\":4,");
	EXPECT(a, "GET", "/api/difftop", q, 200, "\"self2\":");
	x = ask(a, "GET", "/api/pprof", "pid=10", NULL, 0);
	CHECK_EQ_INT(x.status, 200);
	CHECK(x.len > 20 && (unsigned char)x.body[0] == 0x1f && (unsigned char)x.body[1] == 0x8b);
	free(x.body);
	/* strict parameters, and nothing but the page and the API */
	EXPECT(a, "GET", "/api/flamegraph", "bogus=1", 400, "bad parameter: bogus");
	EXPECT(a, "GET", "/api/flamegraph", "pid=1&pid=2", 400, "repeated parameter");
	EXPECT(a, "GET", "/api/flamegraph", "pid=-1", 400, "bad parameter: pid");
	EXPECT(a, "GET", "/api/flamegraph", "comm=a%00b", 400, "bad percent escape");
	EXPECT(a, "GET", "/api/flamegraph", "comm=%4", 400, "bad percent escape");
	EXPECT(a, "GET", "/api/flamegraph", "a_from=1", 400, "bad parameter: a_from");
	/* past int64 (issue 39): not an unfiltered answer */
	EXPECT(a, "GET", "/api/flamegraph", "from=9223372036854775808", 400, "bad parameter: from");
	EXPECT(a, "GET", "/api/flamegraph", "to=18446744073709551615", 400, "bad parameter: to");
	EXPECT(a, "GET", "/api/intervals", "from=9223372036854775808", 400, "bad parameter: from");
	EXPECT(a, "GET", "/api/diff", "b_to=9223372036854775809", 400, "bad parameter: b_to");
	EXPECT(a, "GET", "/api/flamegraph", "to=9223372036854775807", 200, "\"total\":16,");
	EXPECT(a, "GET", "/api/pprof", "type=kernel", 400, "not type");
	EXPECT(a, "GET", "/../../etc/passwd", "", 404, "no such page");
	EXPECT(a, "GET", "/api/../../etc/passwd", "", 404, "no such API");
	EXPECT(a, "GET", "/app.js/../index.html", "", 404, NULL);
	EXPECT(a, "POST", "/api/top", "", 405, NULL);
	x = ask(a, "POST", "/api/diff", "a_len=3", "abcdef", 6);
	CHECK_EQ_INT(x.status, 422);
	free(x.body);
	x = ask(a, "POST", "/api/diff", "a_len=6", "abcdef", 6);
	CHECK_EQ_INT(x.status, 400);
	free(x.body);
	serve_api__free(a);
	snprintf(q, sizeof(q), "rm -rf %s", dir);
	CHECK_EQ_INT(system(q), 0);
}

/* ---- uploads ---- */

/* gzip of in[0..len) repeated times times (one member), malloc()ed into *out. */
static size_t gzip_repeat(const void *in, size_t len, size_t times, uint8_t **out)
{
	z_stream z = { 0 };
	size_t cap = len * times / 100 + len + 4096, i;

	REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
	*out = malloc(cap);
	REQUIRE(*out);
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	for (i = 0; i < times; i++) {
		z.next_in = (Bytef *)in;
		z.avail_in = (uInt)len;
		REQUIRE(deflate(&z, i + 1 == times ? Z_FINISH : Z_NO_FLUSH) != Z_STREAM_ERROR);
		REQUIRE(z.avail_out);
	}
	REQUIRE(deflateEnd(&z) == Z_OK);
	return z.total_out;
}

/* A pprof message: sample type samples/count, location 1 in function 1 named name, then
 * cnt samples of depth frames of location 1 each.
 */
static void pprof_of(struct pb_buf *b, const char *name, size_t depth, size_t cnt)
{
	uint64_t *ids = calloc(depth ? depth : 1, sizeof(*ids)), one = 1;
	size_t i, m, m2;

	REQUIRE(ids);
	for (i = 0; i < depth; i++)
		ids[i] = 1;
	pb_buf__init(b, (size_t)1 << 30);
	pb_buf__begin(b, PROFILE_SAMPLE_TYPE, &m);
	pb_buf__varint(b, VALUE_TYPE_TYPE, 1);
	pb_buf__varint(b, VALUE_TYPE_UNIT, 2);
	pb_buf__end(b, m);
	for (i = 0; i < cnt; i++) {
		pb_buf__begin(b, PROFILE_SAMPLE, &m);
		pb_buf__packed_varints(b, SAMPLE_LOCATION_ID, ids, depth);
		pb_buf__packed_varints(b, SAMPLE_VALUE, &one, 1);
		pb_buf__end(b, m);
	}
	pb_buf__begin(b, PROFILE_LOCATION, &m);
	pb_buf__varint(b, LOCATION_ID, 1);
	pb_buf__begin(b, LOCATION_LINE, &m2);
	pb_buf__varint(b, LINE_FUNCTION_ID, 1);
	pb_buf__end(b, m2);
	pb_buf__end(b, m);
	pb_buf__begin(b, PROFILE_FUNCTION, &m);
	pb_buf__varint(b, FUNCTION_ID, 1);
	pb_buf__varint(b, FUNCTION_NAME, 3);
	pb_buf__end(b, m);
	pb_buf__string(b, PROFILE_STRING_TABLE, "");
	pb_buf__string(b, PROFILE_STRING_TABLE, "samples");
	pb_buf__string(b, PROFILE_STRING_TABLE, "count");
	pb_buf__string(b, PROFILE_STRING_TABLE, name);
	REQUIRE(!pb_buf__err(b));
	free(ids);
}

/* body = a ++ b; POST /api/diff?a_len=|a|; the answer, and its wall time in *ms. */
static struct answer post_diff(struct serve_api *api, const void *a, size_t a_len, const void *b,
			       size_t b_len, double *ms)
{
	uint8_t *body = malloc(a_len + b_len);
	struct timespec t0, t1;
	struct answer x;
	char q[64];

	REQUIRE(body);
	memcpy(body, a, a_len);
	memcpy(body + a_len, b, b_len);
	snprintf(q, sizeof(q), "a_len=%zu", a_len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	x = ask(api, "POST", "/api/diff", q, body, a_len + b_len);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	free(body);
	return x;
}

TEST(uploads)
{
	struct serve_api *api = serve_api__new("/nonexistent/test_serve_api.db");
	struct profile *p = make_profile(1000), *out[2];
	struct pb_buf good, hostile;
	static const uint8_t two_bytes[2] = { 0x12, 0x00 }; /* an empty sample */
	char name[100001], why[256];
	uint8_t *gz, *chunk;
	struct answer x;
	size_t gz_len, i;
	double ms;

	REQUIRE(api);
	pb_buf__init(&good, PPROF_MAX_SZ);
	REQUIRE(!pprof__encode(p, &good));
	/* two real files: compared */
	x = post_diff(api, good.data, good.len, good.data, good.len, &ms);
	CHECK_EQ_INT(x.status, 200);
	CHECK(strstr(x.body, "\"total\":8,\"total2\":8,"));
	free(x.body);

	/* the probe's gzip bomb: 64 MiB of empty samples in ~65 KB; the decoder would take
	 * 1.6 GB. Refused after inflating a few MiB, never kept.
	 */
	chunk = malloc(65536);
	REQUIRE(chunk);
	for (i = 0; i < 65536; i += 2)
		memcpy(chunk + i, two_bytes, 2);
	gz_len = gzip_repeat(chunk, 65536, 1024, &gz);
	printf("  gzip bomb: %zu bytes inflating to 64 MiB\n", gz_len);
	x = post_diff(api, good.data, good.len, gz, gz_len, &ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(strstr(x.body, "more than 524288 frames in all"));
	printf("  ... refused in %.0f ms\n", ms);
	free(x.body);
	free(gz);
	/* the same with strings of 64 KiB - 4 (within the cap of one): their arena passes the
	 * cap on the decoder's memory
	 */
	chunk[0] = 0x32; /* field 6 (string_table), LEN */
	chunk[1] = 0xfc;
	chunk[2] = 0xff;
	chunk[3] = 0x03; /* 65532 */
	memset(chunk + 4, 's', 65532);
	gz_len = gzip_repeat(chunk, 65536, 1024, &gz);
	x = post_diff(api, good.data, good.len, gz, gz_len, &ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(strstr(x.body, "decode to more than 96 MiB"));
	free(x.body);
	free(gz);
	free(chunk);

	/* one sample of 200,000 frames naming a 100 KB function (472 bytes gzipped): 17.6 s of
	 * the server's thread before; refused from its size now
	 */
	memset(name, 'f', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	pprof_of(&hostile, name, 200000, 1);
	gz_len = gzip_repeat(hostile.data, hostile.len, 1, &gz);
	pb_buf__free(&hostile);
	x = post_diff(api, good.data, good.len, gz, gz_len, &ms);
	printf("  %zu bytes: 200,000 frames of a 100 KB name: %d in %.0f ms\n", gz_len, x.status,
	       ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(ms < 5000);
	free(x.body);
	free(gz);
	/* under every size cap, but 4,096 frames of a 60 KB name: 240 MiB to hash */
	name[60000] = '\0';
	pprof_of(&hostile, name, 4096, 1);
	x = post_diff(api, good.data, good.len, hostile.data, hostile.len, &ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(strstr(x.body, "more than 64 MiB of functions and files"));
	CHECK(ms < 5000);
	free(x.body);
	pb_buf__free(&hostile);
	/* one frame over the cap of a sample; a 65 KiB name */
	pprof_of(&hostile, "f", UPLOAD_SAMPLE_FRAMES_MAX + 1, 1);
	x = post_diff(api, good.data, good.len, hostile.data, hostile.len, &ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(strstr(x.body, "a sample of more than 4096 frames"));
	free(x.body);
	pb_buf__free(&hostile);
	memset(name, 'g', 65537);
	name[65537] = '\0';
	pprof_of(&hostile, name, 1, 1);
	x = post_diff(api, hostile.data, hostile.len, good.data, good.len, &ms);
	CHECK_EQ_INT(x.status, 413);
	CHECK(strstr(x.body, "a string (a name) of more than 64 KiB"));
	free(x.body);
	pb_buf__free(&hostile);
	/* a file cut short, gzipped or not: not a pprof */
	gz_len = gzip_repeat(good.data, good.len, 1, &gz);
	x = post_diff(api, good.data, good.len, gz, gz_len - 9, &ms);
	CHECK_EQ_INT(x.status, 422);
	CHECK(strstr(x.body, "the second file is not a pprof"));
	free(x.body);
	x = post_diff(api, good.data, good.len - 1, gz, gz_len, &ms);
	CHECK_EQ_INT(x.status, 422);
	CHECK(strstr(x.body, "the first file is not a pprof"));
	free(x.body);
	/* the gzipped one whole: fine */
	x = post_diff(api, gz, gz_len, good.data, good.len, &ms);
	CHECK_EQ_INT(x.status, 200);
	free(x.body);
	free(gz);

	/* the CPU-time backstop: 50,000 frames take more than 0 ms to import */
	pprof_of(&hostile, "f", 1000, 50);
	{
		struct upload_limits lim = { .decoded_max = UPLOAD_DECODED_MAX,
					     .frames_max = UPLOAD_FRAMES_MAX,
					     .sample_frames_max = UPLOAD_SAMPLE_FRAMES_MAX,
					     .string_max = UPLOAD_STRING_MAX,
					     .intern_max = UPLOAD_INTERN_MAX };
		uint8_t *body = malloc(2 * hostile.len);

		REQUIRE(body);
		memcpy(body, hostile.data, hostile.len);
		memcpy(body + hostile.len, hostile.data, hostile.len);
		CHECK_EQ_INT(upload__import(body, 2 * hostile.len, hostile.len, &lim, out, why,
					    sizeof(why)),
			     503);
		CHECK(strstr(why, "of CPU") && !out[0] && !out[1]);
		lim.time_max_ms = 60000;
		lim.frames_max = 99999; /* two files of 50,000 frames */
		CHECK_EQ_INT(upload__import(body, 2 * hostile.len, hostile.len, &lim, out, why,
					    sizeof(why)),
			     413);
		CHECK(strstr(why, "more than 99999 frames"));
		lim.frames_max = 100000;
		CHECK_EQ_INT(upload__import(body, 2 * hostile.len, hostile.len, &lim, out, why,
					    sizeof(why)),
			     0);
		CHECK(out[0] && out[1] && profile__total_samples(out[1]) == 50);
		profile__free(out[0]);
		profile__free(out[1]);
		free(body);
	}
	pb_buf__free(&hostile);
	pb_buf__free(&good);
	profile__free(p);
	serve_api__free(api);
}

int main(void)
{
	RUN(tree_and_top);
	RUN(depth_is_bounded);
	RUN(json_limits);
	RUN(api_over_a_store);
	RUN(uploads);
	return test_summary();
}
