/* Tests of src/base/array.h: growth by doubling from the first capacity, the cap (reached
 * exactly, never passed, -E2BIG beyond), size overflow as -ENOMEM, and the array left as it
 * was on every error.
 */
#include <errno.h>
#include <stdint.h>

#include "base/array.h"
#include "test.h"

TEST(doubles_from_first_cap)
{
	uint32_t *a = NULL;
	size_t cap = 0, i;

	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 0, sizeof(*a), 8, 100), 0);
	CHECK(!a && cap == 0); /* nothing needed, nothing allocated */
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 1, sizeof(*a), 8, 100), 0);
	CHECK_EQ_INT(cap, 8);
	for (i = 0; i < 8; i++)
		a[i] = (uint32_t)i;
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 9, sizeof(*a), 8, 100), 0);
	CHECK_EQ_INT(cap, 16);
	CHECK_EQ_INT(a[7], 7); /* contents kept */
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 33, sizeof(*a), 8, 100), 0);
	CHECK_EQ_INT(cap, 64);
	/* the last step stops at the cap */
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 65, sizeof(*a), 8, 100), 0);
	CHECK_EQ_INT(cap, 100);
	a[99] = 99;
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 100, sizeof(*a), 8, 100), 0);
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 101, sizeof(*a), 8, 100), -E2BIG);
	CHECK(cap == 100 && a[99] == 99 && a[7] == 7);
	free(a);
}

TEST(first_cap_over_the_cap_is_clamped)
{
	char *a = NULL;
	size_t cap = 0;

	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, 3, 1, 1024, 10), 0);
	CHECK_EQ_INT(cap, 10);
	free(a);
}

TEST(overflow_is_enomem)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	CHECK_EQ_INT(array__reserve((void **)&a, &cap, SIZE_MAX / 4, sizeof(*a)), -ENOMEM);
	CHECK(!a && cap == 0);
	CHECK_EQ_INT(array__reserve((void **)&a, &cap, SIZE_MAX, sizeof(*a)), -ENOMEM);
	CHECK_EQ_INT(array__reserve_bounded((void **)&a, &cap, SIZE_MAX / 2, sizeof(*a), 1,
					    SIZE_MAX),
		     -ENOMEM);
	CHECK(!a && cap == 0);
	CHECK_EQ_INT(array__reserve((void **)&a, &cap, 17, sizeof(*a)), 0);
	CHECK_EQ_INT(cap, 32); /* 16, doubled */
	free(a);
}

int main(void)
{
	RUN(doubles_from_first_cap);
	RUN(first_cap_over_the_cap_is_clamped);
	RUN(overflow_is_enomem);
	return test_summary();
}
