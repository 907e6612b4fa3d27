/* The innermost function of the sym_inline chain, in its own file so that the chain names
 * two source files (tests/system/test_symbolize.sh).
 */
#ifndef SYM_INLINE_H
#define SYM_INLINE_H

#define SYM_FORCE_INLINE static inline __attribute__((always_inline))

SYM_FORCE_INLINE unsigned long sym_leaf(unsigned long x, unsigned long n)
{ /* sym_leaf: body start */
	for (unsigned long i = 0; i < n; i++)
		x = (x ^ (x >> 11)) * 0x9e3779b97f4a7c15UL + i;
	return x;
} /* sym_leaf: body end */

#endif
