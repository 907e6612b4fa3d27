/* Tests of src/base/id_index.c: ids found again by hash and equality across growth, entries
 * sharing one hash told apart by the caller's equality, the load bound, and free/reuse.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/id_index.h"
#include "test.h"

#define N 5000

struct table {
	uint64_t keys[N + 1]; /* by id; [0] unused */
	size_t cnt;
	size_t eq_calls;
};

static bool key__eq(const void *ctx, uint32_t id, const void *key)
{
	struct table *t = (struct table *)ctx;

	t->eq_calls++;
	return t->keys[id] == *(const uint64_t *)key;
}

/* Id of key, added if new; 0 on ENOMEM. hash_of_key: a weak hash to force collisions. */
static uint32_t table__intern(struct table *t, struct id_index *ix, uint64_t key,
			      uint64_t (*hash_of_key)(uint64_t))
{
	uint64_t h = hash_of_key(key);
	uint32_t id = id_index__find(ix, h, key__eq, t, &key);

	if (id)
		return id;
	if (id_index__reserve(ix))
		return 0;
	t->keys[++t->cnt] = key;
	id_index__add(ix, h, (uint32_t)t->cnt);
	return (uint32_t)t->cnt;
}

static uint64_t hash_full(uint64_t k)
{
	return fnv64(&k, sizeof(k), FNV64_INIT);
}

static uint64_t hash_weak(uint64_t k)
{
	return k % 7; /* seven hashes for all keys */
}

static void intern_all(uint64_t (*hash_of_key)(uint64_t), size_t n)
{
	static struct table t;
	struct id_index ix = { 0 };
	uint64_t missing = 0xdeadbeef;
	size_t i;

	memset(&t, 0, sizeof(t));
	CHECK_EQ_INT(id_index__find(&ix, 1, key__eq, &t, &missing), 0); /* never reserved */
	for (i = 0; i < n; i++)
		REQUIRE(table__intern(&t, &ix, i * 1000003, hash_of_key) == i + 1);
	CHECK_EQ_INT(ix.cnt, n);
	CHECK(ix.cnt * 4 <= ix.cap * 3);
	CHECK((ix.cap & (ix.cap - 1)) == 0);
	/* every key again, after all the growth: the same id, nothing added */
	for (i = 0; i < n; i++)
		CHECK_EQ_INT(table__intern(&t, &ix, i * 1000003, hash_of_key), i + 1);
	CHECK_EQ_INT(t.cnt, n);
	CHECK_EQ_INT(id_index__find(&ix, hash_of_key(missing), key__eq, &t, &missing), 0);
	id_index__free(&ix);
	CHECK(ix.cap == 0 && ix.cnt == 0 && !ix.ids && !ix.hashes);
	/* usable again after free */
	CHECK_EQ_INT(id_index__find(&ix, hash_of_key(0), key__eq, &t, &t.keys[1]), 0);
	REQUIRE(id_index__reserve(&ix) == 0);
	id_index__add(&ix, hash_of_key(0), 1);
	CHECK_EQ_INT(id_index__find(&ix, hash_of_key(0), key__eq, &t, &t.keys[1]), 1);
	id_index__free(&ix);
	id_index__free(NULL);
}

TEST(ids_survive_growth)
{
	intern_all(hash_full, N);
}

TEST(equal_hashes_told_apart_by_eq)
{
	intern_all(hash_weak, 300);
}

TEST(eq_called_only_on_equal_hashes)
{
	static struct table t;
	struct id_index ix = { 0 };
	uint64_t k;
	size_t i;

	for (i = 0; i < 40; i++)
		REQUIRE(table__intern(&t, &ix, i, hash_full) == i + 1);
	t.eq_calls = 0;
	k = 12345;
	CHECK_EQ_INT(id_index__find(&ix, hash_full(k), key__eq, &t, &k), 0);
	CHECK_EQ_INT(t.eq_calls, 0); /* no stored hash equals it */
	k = 17;
	CHECK_EQ_INT(id_index__find(&ix, hash_full(k), key__eq, &t, &k), 18);
	CHECK_EQ_INT(t.eq_calls, 1);
	id_index__free(&ix);
}

int main(void)
{
	RUN(ids_survive_growth);
	RUN(equal_hashes_told_apart_by_eq);
	RUN(eq_called_only_on_equal_hashes);
	return test_summary();
}
