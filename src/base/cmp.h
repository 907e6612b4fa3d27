/* Three-way comparison for qsort() comparators: -1, 0 or 1 as a is below, equal to or above b.
 * Keys chain with "?:", the most significant first:
 *	return cmp_u64(x->addr, y->addr) ?: cmp_u64(x->seq, y->seq);
 */
#ifndef STACKSCOPE_CMP_H
#define STACKSCOPE_CMP_H

#include <stdint.h>

static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

#endif
