/* Tests of src/base/lru_sets.c: keys that share a set all keep their slots (the defect of a
 * direct-mapped cache: two hot keys evicting each other), the least recently used one is the
 * one replaced, a slot is stable while its key stays, and bad sizes are refused.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/lru_sets.h"
#include "test.h"

#define CAP 64

/* A key whose set is set, distinct by n (the set index is (key >> 32 ^ key) & (sets - 1)). */
static uint64_t key_in_set(size_t set, uint64_t n)
{
	return (n + 1) << 32 | (set ^ (n + 1));
}

/* Gives keys 0 .. LRU_WAYS - 1 of set their slots, in that order, into slots. */
static void fill_set(struct lru_sets *ls, size_t set, size_t *slots)
{
	size_t i;

	for (i = 0; i < LRU_WAYS; i++)
		slots[i] = lru_sets__slot(ls, key_in_set(set, i));
}

TEST(same_set_keys_coexist)
{
	struct lru_sets ls;
	size_t slots[LRU_WAYS], i, round;

	REQUIRE(lru_sets__init(&ls, CAP) == 0);
	fill_set(&ls, 3, slots);
	for (i = 0; i < LRU_WAYS; i++) {
		CHECK(slots[i] / LRU_WAYS == 3);
		CHECK(i == 0 || slots[i] != slots[i - 1]);
	}
	/* used in turn many times: each keeps its slot */
	for (round = 0; round < 100; round++)
		for (i = 0; i < LRU_WAYS; i++)
			CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(3, i)), slots[i]);
	lru_sets__free(&ls);
}

TEST(least_recently_used_replaced)
{
	struct lru_sets ls;
	size_t slots[LRU_WAYS], fresh;

	REQUIRE(lru_sets__init(&ls, CAP) == 0);
	fill_set(&ls, 5, slots);
	/* touch all but key 2: it is the oldest */
	lru_sets__slot(&ls, key_in_set(5, 0));
	lru_sets__slot(&ls, key_in_set(5, 1));
	lru_sets__slot(&ls, key_in_set(5, 3));
	fresh = lru_sets__slot(&ls, key_in_set(5, 9));
	CHECK_EQ_U64(fresh, slots[2]);
	/* the others stay; key 2 comes back in the now oldest slot (key 0's) */
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(5, 1)), slots[1]);
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(5, 3)), slots[3]);
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(5, 9)), fresh);
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(5, 2)), slots[0]);
	/* other sets untouched */
	CHECK(lru_sets__slot(&ls, key_in_set(6, 0)) / LRU_WAYS == 6);
	lru_sets__free(&ls);
}

TEST(clock_wrap)
{
	struct lru_sets ls;
	size_t slots[LRU_WAYS];

	REQUIRE(lru_sets__init(&ls, CAP) == 0);
	ls.clock = UINT32_MAX - 2; /* the stamps straddle the wrap */
	fill_set(&ls, 1, slots);
	/* key 0 was stamped before the wrap: still the oldest */
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(1, 7)), slots[0]);
	CHECK_EQ_U64(lru_sets__slot(&ls, key_in_set(1, 8)), slots[1]);
	lru_sets__free(&ls);
}

TEST(zero_key_and_sizes)
{
	struct lru_sets ls;

	CHECK_EQ_INT(lru_sets__init(&ls, 48), -EINVAL);
	CHECK_EQ_INT(lru_sets__init(&ls, 2), -EINVAL);
	REQUIRE(lru_sets__init(&ls, CAP) == 0);
	CHECK_EQ_U64(lru_sets__slot(&ls, 0), lru_sets__slot(&ls, 1));
	lru_sets__free(&ls);
	CHECK(ls.keys == NULL);
}

int main(void)
{
	RUN(same_set_keys_coexist);
	RUN(least_recently_used_replaced);
	RUN(clock_wrap);
	RUN(zero_key_and_sizes);
	return test_summary();
}
