/* pipeline/sample_trace.c: a record's span and thread-context attributes as labels. */
#include "pipeline/sample_trace.h"
#include "test.h"

static struct sample_trace with_attrs(const void *attrs, size_t n)
{
	struct sample_trace t = { .state = OTEL_TRACE_SET, .attrs_sz = (uint16_t)n };

	memset(t.trace_id, 0x7e, sizeof(t.trace_id));
	t.span_id[0] = 0x5a;
	memcpy(t.attrs, attrs, n);
	return t;
}

TEST(ids_and_attrs)
{
	struct sample_trace t = with_attrs("\0\7/span/3\1\3GET", 14);
	struct profile_label l[SAMPLE_TRACE_LABELS];
	struct sample_trace_text text;

	REQUIRE(sample_trace__labels(&t, &text, l) == 4);
	CHECK_STR(l[0].key, "trace_id");
	CHECK_STR(l[0].value, "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e");
	CHECK_STR(l[1].key, "span_id");
	CHECK_STR(l[1].value, "5a00000000000000");
	CHECK_STR(l[2].key, "thread.attr.0");
	CHECK_STR(l[2].value, "/span/3");
	CHECK_STR(l[3].key, "thread.attr.1");
	CHECK_STR(l[3].value, "GET");
	t.state = OTEL_TRACE_BAD; /* found, not readable: the marker alone, no id */
	REQUIRE(sample_trace__labels(&t, &text, l) == 1);
	CHECK_STR(l[0].key, "otel.thread_context");
	CHECK_STR(l[0].value, "unreadable");
	t.state = OTEL_TRACE_NONE;
	CHECK_EQ_INT(sample_trace__labels(&t, &text, l), 0);
}

TEST(attr_rules)
{
	struct profile_label l[SAMPLE_TRACE_LABELS];
	struct sample_trace_text text;
	struct sample_trace t;
	static const char *const keys[] = { "http_route", NULL, "user_id" };

	/* the last value of a key counts; an entry cut short ends the parse */
	t = with_attrs("\2\1a\2\2bc\5\11xy", 11);
	REQUIRE(sample_trace__labels(&t, &text, l) == 3);
	CHECK_STR(l[2].key, "thread.attr.2");
	CHECK_STR(l[2].value, "bc");
	/* with the process's key map: named by it, indexes it does not name left out */
	t = with_attrs("\0\1r\1\1x\2\1u\7\1z", 12);
	REQUIRE(sample_trace__labels_keyed(&t, keys, 3, &text, l) == 4);
	CHECK_STR(l[2].key, "http_route");
	CHECK_STR(l[2].value, "r");
	CHECK_STR(l[3].key, "user_id");
	CHECK_STR(l[3].value, "u");
	/* a map that names nothing (published empty): no attribute */
	CHECK_EQ_INT(sample_trace__labels_keyed(&t, keys, 0, &text, l), 2);
	/* at most SAMPLE_TRACE_ATTRS_MAX keys; a value stops at a NUL */
	t = with_attrs("\0\1a\1\1b\2\1c\3\1d\4\1e\3\3x\0y", 20);
	REQUIRE(sample_trace__labels(&t, &text, l) == 2 + SAMPLE_TRACE_ATTRS_MAX);
	CHECK_STR(l[5].key, "thread.attr.3");
	CHECK_STR(l[5].value, "x");
	/* attrs_sz past what the record holds is bounded */
	t = with_attrs("\0\1a", 3);
	t.attrs_sz = 60000;
	CHECK(sample_trace__labels(&t, &text, l) >= 3);
}

int main(void)
{
	RUN(ids_and_attrs);
	RUN(attr_rules);
	return test_summary();
}
