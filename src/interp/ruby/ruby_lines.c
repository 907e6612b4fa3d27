/* CRuby line tables (see ruby_lines.h). */
#include <string.h>

#include "interp/ruby/ruby_lines.h"

size_t ruby_lines__succ_bytes(uint32_t iseq_size)
{
	/* iseq.c succ_index_table_create(max_pos = iseq_size): imm_size u64s, succ_size blocks */
	size_t imm = (iseq_size < RUBY_SUCC_IMM_SIZE ? iseq_size + 8 : RUBY_SUCC_IMM_SIZE) / 9;
	size_t blocks =
		(iseq_size < RUBY_SUCC_IMM_SIZE ? 0 : (iseq_size - RUBY_SUCC_IMM_SIZE + 511)) / 512;

	if (!blocks)
		return imm * 8;
	return RUBY_SUCC_IMM_BYTES + blocks * RUBY_SUCC_BLOCK_BYTES;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* rank(pos): how many entries start at or before pos; -1 outside the table. */
static long succ_rank(const uint8_t *succ, size_t size, uint32_t pos)
{
	const uint8_t *block;
	uint32_t rank, bit, small;
	uint64_t small_ranks, bits, below;

	if (pos < RUBY_SUCC_IMM_SIZE) {
		if ((size_t)(pos / 9) * 8 + 8 > size)
			return -1;
		return (long)((u64_at(succ + (pos / 9) * 8) >> ((pos % 9) * 7)) & 0x7f);
	}
	pos -= RUBY_SUCC_IMM_SIZE;
	if (RUBY_SUCC_IMM_BYTES + (size_t)(pos / 512 + 1) * RUBY_SUCC_BLOCK_BYTES > size)
		return -1;
	block = succ + RUBY_SUCC_IMM_BYTES + (size_t)(pos / 512) * RUBY_SUCC_BLOCK_BYTES;
	memcpy(&rank, block, sizeof(rank));
	small_ranks = u64_at(block + 8);
	bit = pos % 512;
	small = bit / 64;
	bits = u64_at(block + 16 + small * 8);
	below = bits << (63 - bit % 64); /* the bits at or below pos in its 64-bit word */
	return (long)rank + (small ? (long)((small_ranks >> ((small - 1) * 9)) & 0x1ff) : 0) +
	       __builtin_popcountll(below);
}

int ruby_lines__line(const struct ruby_line_table *t, uint32_t pos)
{
	long idx;

	if (!t->lines || !t->cnt)
		return -1;
	if (t->cnt == 1)
		return t->lines[0];
	if (t->succ) {
		idx = succ_rank(t->succ, t->succ_sz, pos);
		if (idx < 1 || (size_t)idx > t->cnt)
			return -1;
		return t->lines[idx - 1];
	}
	if (t->positions) {
		size_t lo = 0, hi = t->cnt; /* the last entry starting at or before pos */

		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->positions[mid] <= pos)
				lo = mid;
			else
				hi = mid;
		}
		return t->lines[lo];
	}
	return -1;
}
