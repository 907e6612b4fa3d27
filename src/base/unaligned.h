/* Loads of host-endian integers from byte buffers at any alignment (parsers of other programs'
 * bytes: tables in ELF files, process memory). memcpy: no alignment trap, no aliasing issue;
 * compilers make it one move.
 */
#ifndef STACKSCOPE_UNALIGNED_H
#define STACKSCOPE_UNALIGNED_H

#include <stdint.h>
#include <string.h>

static inline uint16_t load_u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline int32_t load_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
