/* Inline helpers in their own file, so call sites and definitions name different files. */
#ifndef DWARF_INLINE_H
#define DWARF_INLINE_H

#define FORCE_INLINE static inline __attribute__((always_inline))

FORCE_INLINE unsigned long dw_mix(unsigned long x)
{
	x ^= x >> 13;
	x *= 0x9e3779b97f4a7c15UL;
	return x ^ (x >> 29);
}

FORCE_INLINE unsigned long dw_leaf(unsigned long x, int i)
{
	if (i & 1)
		return dw_mix(x + (unsigned long)i);
	return dw_mix(x ^ (unsigned long)i) + 1;
}

#endif
