/* Unit tests for the web UI's server side (src/serve/), without sockets: the call tree of a
 * synthetic profile (inlined levels as nodes, a recursive function's total counted once,
 * frame types, the frame-type filter, a diff's two sides), its JSON (bad UTF-8 replaced),
 * and the API handler over a temporary store: intervals, flamegraph with filters, filters,
 * pprof download, the strict parameter checks, 404 for anything but the page and /api/, and
 * 503 while the store does not exist.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/http_server.h"
#include "profile/profile.h"
#include "serve/flame_tree.h"
#include "serve/json_out.h"
#include "serve/serve_api.h"
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
	EXPECT(a, "GET", "/api/flamegraph", "comm=tw%6F&to=6000000000", 200, "\"total\":4,");
	EXPECT(a, "GET", "/api/flamegraph", "type=cpython", 200, "\"total\":2,");
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

int main(void)
{
	RUN(tree_and_top);
	RUN(depth_is_bounded);
	RUN(json_limits);
	RUN(api_over_a_store);
	return test_summary();
}
