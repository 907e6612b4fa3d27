/* Order: three-way comparison for qsort() comparators, and the binary search of what they
 * sorted.
 */
#ifndef STACKSCOPE_CMP_H
#define STACKSCOPE_CMP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* -1, 0 or 1 as a is below, equal to or above b. Keys chain with "?:", the most significant
 * first:
 *	return cmp_u64(x->addr, y->addr) ?: cmp_u64(x->seq, y->seq);
 */

static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* In the cnt elements of elem_sz bytes at base, sorted by the uint64_t at key_off in each
 * (offsetof; 0 for an array of uint64_t): how many have a key <= x, which is the index of the
 * first above x. The element before it, if any, is the last one starting at or below x.
 */
static inline size_t upper_bound_u64(const void *base, size_t cnt, size_t elem_sz, size_t key_off,
				     uint64_t x)
{
	const char *p = base;
	size_t lo = 0, hi = cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, p + mid * elem_sz + key_off, sizeof(key));
		if (key <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
