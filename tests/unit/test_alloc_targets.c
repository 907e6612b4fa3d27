/* Unit tests for allocator discovery (sampler/alloc_targets.c) on the fixtures of
 * tests/data/alloc_targets.c: the allocator functions a file defines (aliases once), operator
 * new kept only beside a malloc, a file without visible symbols dropped, files known once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/alloc_targets.h"
#include "test.h"

static int probe(const char *name)
{
	size_t i;

	for (i = 0; i < alloc_probe_cnt; i++)
		if (!strcmp(alloc_probes[i].name, name))
			return (int)i;
	return -1;
}

static bool has(const struct alloc_target *t, const char *name)
{
	int i = probe(name);

	return i >= 0 && (t->mask & (1ULL << i));
}

TEST(own_malloc)
{
	struct alloc_targets *ts = calloc(1, sizeof(*ts));
	const struct alloc_target *t;

	REQUIRE(ts);
	REQUIRE(alloc_targets__add_file(ts, test_fixture("liballoc_own.so")) == 1);
	t = &ts->t[0];
	CHECK(has(t, "malloc") && has(t, "free") && has(t, "calloc") && has(t, "realloc"));
	/* aligned_alloc is memalign's alias: one probe at that address (the first name) */
	CHECK(has(t, "aligned_alloc") && !has(t, "memalign"));
	CHECK(has(t, "_Znwm") && has(t, "PyObject_Malloc") && has(t, "PyObject_Free"));
	CHECK(!has(t, "posix_memalign") && !has(t, "mallocx"));
	CHECK(ts->any_malloc_seen);
	CHECK(alloc_targets__malloc_owner(ts) == t);
	/* known once */
	CHECK_EQ_INT(alloc_targets__add_file(ts, test_fixture("liballoc_own.so")), 0);
	CHECK_EQ_INT((int)ts->cnt, 1);
	free(ts);
}

TEST(without_malloc)
{
	struct alloc_targets *ts = calloc(1, sizeof(*ts));

	REQUIRE(ts);
	/* operator new without a malloc (libstdc++'s calls malloc): not probed; pymalloc is */
	REQUIRE(alloc_targets__add_file(ts, test_fixture("liballoc_nomalloc.so")) == 1);
	CHECK(!has(&ts->t[0], "_Znwm") && has(&ts->t[0], "PyObject_Free"));
	CHECK(!ts->any_malloc_seen && !alloc_targets__malloc_owner(ts));
	/* no visible symbol: nothing to probe */
	CHECK_EQ_INT(alloc_targets__add_file(ts, test_fixture("liballoc_hidden.so")), 0);
	/* not ELF: counted */
	CHECK_EQ_INT(alloc_targets__add_file(ts, __FILE__), 0);
	CHECK_EQ_INT((int)ts->unreadable, 1);
	CHECK_EQ_INT(alloc_targets__add_file(ts, "/nonexistent/liballoc.so"), 0);
	CHECK_EQ_INT((int)ts->cnt, 1);
	free(ts);
}

int main(void)
{
	RUN(own_malloc);
	RUN(without_malloc);
	return test_summary();
}
