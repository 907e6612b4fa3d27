/* Growable arrays: one overflow-checked reserve shared by every module that keeps a
 * (pointer, capacity) pair.
 */
#ifndef STACKSCOPE_ARRAY_H
#define STACKSCOPE_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows *arr (capacity *cap elements) to hold at least `need` elements of elem_sz bytes,
 * doubling; 0 or -ENOMEM (the array is unchanged then).
 */
static inline int array__reserve(void **arr, size_t *cap, size_t need, size_t elem_sz)
{
	size_t new_cap;
	void *tmp;

	if (need <= *cap)
		return 0;
	new_cap = *cap ? *cap : 16;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2)
			return -ENOMEM;
		new_cap *= 2;
	}
	if (new_cap > SIZE_MAX / elem_sz)
		return -ENOMEM;
	tmp = realloc(*arr, new_cap * elem_sz);
	if (!tmp)
		return -ENOMEM;
	*arr = tmp;
	*cap = new_cap;
	return 0;
}

#endif
