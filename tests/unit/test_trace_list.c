/* serve/trace_list.c: the trace URL template's check and substitution, the trace table. */
#include "profile/profile.h"
#include "profile/trace_label.h"
#include "serve/json_out.h"
#include "serve/trace_list.h"
#include "test.h"

#define T1 "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e01"
#define T2 "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e02"
#define S1 "5a00000000000101"
#define S2 "5a00000000000102"

TEST(template_check)
{
	static const char *const good[] = {
		"https://tempo.example/trace/{trace_id}",
		"http://127.0.0.1:3000/explore?t={trace_id}&s={span_id}",
		"HTTPS://x.example/{span_id}/{trace_id}",
	};
	static const char *const bad[] = {
		"javascript:alert(1)//{trace_id}",
		"ftp://x.example/{trace_id}",
		"https://x.example/nothing",
		"https:///{trace_id}",
		"https://{trace_id}",
		"https://x.example/{trace_id}/{foo}",
		"https://x.example/{trace_id}}",
		"https://x.example/{trace_id}\"onclick=x",
		"https://x.example/{trace_id}'x",
		"https://x.example/{trace_id}<b>",
		"https://x.example/{trace_id} x",
		"https://x.example/{trace_id}\\x",
		"https://x.example/{trace_id}`",
		"https://x.example/{trace_id}\x01",
		"https://x.example/{trace_id}\xc3\xa9",
		"",
	};
	char why[128], big[TRACE_URL_MAX + 8];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_EQ_INT(trace_url__check(good[i], why, sizeof(why)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CHECK_EQ_INT(trace_url__check(bad[i], why, sizeof(why)), -EINVAL);
		CHECK(why[0]);
	}
	memset(big, 'a', sizeof(big));
	memcpy(big, "https://x/{trace_id}", 20);
	big[sizeof(big) - 1] = '\0';
	CHECK_EQ_INT(trace_url__check(big, why, sizeof(why)), -EINVAL);
}

TEST(template_expand)
{
	char out[128];

	CHECK_EQ_INT(trace_url__expand("https://x.example/t/{trace_id}?s={span_id}&k={trace_id}",
				       T1, S1, out, sizeof(out)),
		     0);
	CHECK_STR(out, "https://x.example/t/" T1 "?s=" S1 "&k=" T1);
	/* ids that are not lowercase hex of their length: no link */
	CHECK_EQ_INT(trace_url__expand("https://x/{trace_id}", "7E7E", NULL, out, sizeof(out)),
		     -EINVAL);
	CHECK_EQ_INT(trace_url__expand("https://x/{trace_id}", T1 "\"", NULL, out, sizeof(out)),
		     -EINVAL);
	CHECK_EQ_INT(trace_url__expand("https://x/{span_id}{trace_id}", T1, NULL, out, sizeof(out)),
		     -EINVAL);
	CHECK_EQ_INT(trace_url__expand("https://x/{span_id}{trace_id}", T1, "5a<", out,
				       sizeof(out)),
		     -EINVAL);
	CHECK_EQ_INT(trace_url__expand("https://x/{trace_id}", T1, NULL, out, 40), -E2BIG);
	CHECK_EQ_INT(trace_url__expand("https://x/{trace_id}", T1, NULL, out, 43), 0);
}

TEST(filter_label)
{
	char f[TRACE_LABEL_FILTER_SZ];

	CHECK(trace_label__filter("7E7E7E7E7E7E7E7E7E7E7E7E7E7E7E01", f));
	CHECK_STR(f, "trace_id=" T1);
	CHECK(!trace_label__filter("7e", f));
	CHECK(!trace_label__filter("00000000000000000000000000000000", f));
	CHECK(!trace_label__filter("7e7e7e7e7e7e7e7e7e7e7e7e7e7e7eZZ", f));
}

static void add(struct profile *p, uint32_t f, const char *trace, const char *span, uint64_t n)
{
	struct profile_label l[2] = { { TRACE_LABEL_TRACE, trace }, { TRACE_LABEL_SPAN, span } };

	REQUIRE(!profile__add_sample(p, &(struct profile_sample){ .frames = &f,
								  .frame_cnt = 1,
								  .pid = 1,
								  .count = n,
								  .labels = l,
								  .label_cnt = trace ? 2 : 0 }));
}

TEST(trace_table)
{
	struct profile_opts po = { .period_ns = 10000000 };
	struct profile *p = profile__new(&po);
	struct profile_line line[] = { { "work", "w.c", 1 } };
	struct json_out j;
	uint32_t f;
	char *js;
	size_t len;

	REQUIRE(p);
	f = profile__add_frame(p, &(struct profile_frame){ FRAME_NATIVE, 0, 0, line, 1, NULL });
	add(p, f, T1, S1, 3);
	add(p, f, T1, S2, 5);
	add(p, f, T2, S1, 2);
	add(p, f, "not-hex", S1, 1);
	add(p, f, NULL, NULL, 100);
	json_out__init(&j, 1 << 20);
	REQUIRE(!trace_list__json(p, "https://x.example/{trace_id}/{span_id}", 10, &j));
	js = json_out__take(&j, &len);
	REQUIRE(js);
	CHECK_STR(js,
		  "{\"trace_url\":\"https://x.example/{trace_id}/{span_id}\",\"traces\":["
		  "{\"trace_id\":\"" T1 "\",\"samples\":8,\"spans\":2,\"span_id\":\"" S2
		  "\",\"url\":\"https://x.example/" T1 "/" S2 "\"},"
		  "{\"trace_id\":\"" T2 "\",\"samples\":2,\"spans\":1,\"span_id\":\"" S1
		  "\",\"url\":\"https://x.example/" T2 "/" S1 "\"},"
		  "{\"trace_id\":\"not-hex\",\"samples\":1,\"spans\":1,\"span_id\":\"" S1 "\"}]}");
	free(js);
	json_out__init(&j, 1 << 20);
	REQUIRE(!trace_list__json(p, NULL, 1, &j));
	js = json_out__take(&j, &len);
	REQUIRE(js);
	CHECK_STR(js, "{\"trace_url\":null,\"traces\":[{\"trace_id\":\"" T1
		      "\",\"samples\":8,\"spans\":2,\"span_id\":\"" S2 "\"}]}");
	free(js);
	profile__free(p);
}

int main(void)
{
	RUN(template_check);
	RUN(template_expand);
	RUN(filter_label);
	RUN(trace_table);
	return test_summary();
}
