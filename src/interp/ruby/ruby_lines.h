/* CRuby line tables: the position of an instruction in an instruction sequence (VALUEs from
 * iseq_encoded) -> source line, as CRuby 2.6+ looks it up (iseq.c get_insn_info): the
 * insns_info entries hold the lines; which entry covers a position is the rank of the
 * position in a bit vector of entry starts, stored as a "succinct index table" (an immediate
 * part for positions < 54, then 512-position blocks with a rank and popcounts), or, where a
 * build keeps them, a sorted array of entry start positions.
 *
 * Input is untrusted (read from another process): every read is bounded by the sizes given,
 * a table that does not cover a position gives -1, never a read outside the buffers.
 * Nothing allocates.
 */
#ifndef STACKSCOPE_RUBY_LINES_H
#define STACKSCOPE_RUBY_LINES_H

#include <stddef.h>
#include <stdint.h>

#define RUBY_SUCC_IMM_SIZE 54    /* positions in the immediate part (a multiple of 9) */
#define RUBY_SUCC_IMM_BYTES 48   /* uint64_t imm_part[54 / 9] */
#define RUBY_SUCC_BLOCK_BYTES 80 /* { unsigned rank; uint64_t small ranks; uint64_t bits[8] } */

struct ruby_line_table {
	const int32_t *lines; /* insns_info[i].line_no */
	size_t cnt;           /* insns_info.size */
	const uint8_t *succ;  /* the succinct index table's bytes, or NULL */
	size_t succ_sz;
	const uint32_t *positions; /* or the entry start positions, or NULL */
};

/* Bytes of the succinct index table CRuby allocates for an iseq of iseq_size VALUEs. */
size_t ruby_lines__succ_bytes(uint32_t iseq_size);

/* The line of the instruction at position pos (already moved back to the instruction itself:
 * a saved pc points past it); -1 when the table does not say.
 */
int ruby_lines__line(const struct ruby_line_table *t, uint32_t pos);

#endif
