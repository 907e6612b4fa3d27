/* Growable arrays: one overflow-checked reserve shared by every module that keeps a
 * (pointer, capacity) pair, and an exact resize for short lists kept without a capacity.
 * Capacities count elements and only grow, by doubling.
 */
#ifndef STACKSCOPE_ARRAY_H
#define STACKSCOPE_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Resizes *arr to exactly n elements of elem_sz bytes, for short lists that grow one by one
 * and are kept (no capacity beside them). 0 or -ENOMEM (the array is unchanged then).
 */
static inline int array__reserve_exact(void **arr, size_t n, size_t elem_sz)
{
	size_t bytes;
	void *tmp;

	if (__builtin_mul_overflow(n, elem_sz, &bytes))
		return -ENOMEM;
	tmp = realloc(*arr, bytes);
	if (!tmp)
		return -ENOMEM;
	*arr = tmp;
	return 0;
}

/* Grows *arr (capacity *cap elements of elem_sz bytes) to hold at least `need` elements:
 * doubling from *cap, or from first_cap for an empty array, and never past max_cap elements
 * (the last step stops at max_cap). 0, -E2BIG (need > max_cap) or -ENOMEM; the array is
 * unchanged on error.
 */
static inline int array__reserve_bounded(void **arr, size_t *cap, size_t need, size_t elem_sz,
					 size_t first_cap, size_t max_cap)
{
	size_t new_cap;

	if (need <= *cap)
		return 0;
	if (need > max_cap)
		return -E2BIG;
	new_cap = *cap ? *cap : first_cap ? first_cap : 1;
	while (new_cap < need)
		new_cap = new_cap > max_cap / 2 ? max_cap : new_cap * 2;
	if (new_cap > max_cap)
		new_cap = max_cap;
	if (array__reserve_exact(arr, new_cap, elem_sz))
		return -ENOMEM;
	*cap = new_cap;
	return 0;
}

/* The same without a cap, doubling from 16: 0 or -ENOMEM (the array is unchanged then). */
static inline int array__reserve(void **arr, size_t *cap, size_t need, size_t elem_sz)
{
	/* no array of bytes can hold SIZE_MAX / 2 elements of 2 bytes or more */
	if (need > SIZE_MAX / 2)
		return -ENOMEM;
	return array__reserve_bounded(arr, cap, need, elem_sz, 16, SIZE_MAX / 2);
}

#endif
