/* V8 source positions: a code offset (bytecode offset of an interpreted frame) -> script
 * offset through the function's source-position table, and a script offset -> line and
 * column through the script's line ends.
 *
 * The source-position table (V8 src/codegen/source-position-table.cc) is a sequence of
 * entries, each two zigzag VLQ integers (7 bits a byte, least significant first, 0x80 =
 * more): the code-offset delta (negative, as -delta - 1, for a non-statement position) and
 * the source-position delta. The first entry may be the function-entry position at code
 * offset -1 (kFunctionEntryBytecodeOffset), a statement written as delta -1 (measured on
 * V8 11.3: `01 ac 08` = offset -1, script offset 266, then `02 4c` = offset 0). A source position (src/codegen/source-position.h) packs bit 0
 * "external", bits 1..30 the script offset + 1 (0: none) and bits 31..46 the inlining id + 1.
 *
 * Input is untrusted (read from another process): every read is bounded by the table, a
 * truncated or corrupt table ends the walk and gives the position reached so far or -1,
 * never a read outside [tab, tab + size). Nothing allocates.
 */
#ifndef STACKSCOPE_V8_LINES_H
#define STACKSCOPE_V8_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The raw source position (as above) of the code at `code_offset` (the last entry at or
 * before it), or -1 when the table gives none.
 */
int64_t v8_lines__position(const uint8_t *tab, size_t size, uint32_t code_offset);

/* Marks along a table, for lookups that walk at most V8_SPT_MARK_EVERY entries whatever the
 * table's size (a function of 60 KiB of positions in a deep recursion: every frame walked it
 * all): the walk's state after every V8_SPT_MARK_EVERY-th entry. A table of size bytes has
 * at most size / 2 entries (two varints each): size / (2 * V8_SPT_MARK_EVERY) marks.
 */
#define V8_SPT_MARK_EVERY 64

struct v8_spt_mark {
	uint32_t pos;   /* the next entry's byte offset */
	int64_t code;   /* the code offset of the entry walked last */
	int64_t source; /* ... its raw source position */
};

/* The marks of tab into out (at most cap); how many. */
size_t v8_lines__spt_marks(const uint8_t *tab, size_t size, struct v8_spt_mark *out, size_t cap);

/* v8_lines__position() and v8_lines__script_offset() through the table's marks: the same
 * answers, walking at most V8_SPT_MARK_EVERY entries.
 */
int64_t v8_lines__position_marked(const uint8_t *tab, size_t size, const struct v8_spt_mark *marks,
				  size_t n_marks, uint32_t code_offset);
int64_t v8_lines__script_offset_marked(const uint8_t *tab, size_t size,
				       const struct v8_spt_mark *marks, size_t n_marks,
				       uint32_t code_offset);

/* Optimised code inlines functions: a raw source position of its table names, through its
 * inlining id, an entry of the code's inlining positions (DeoptimizationData's
 * PodArray<InliningPosition>, src/codegen/source-position.h: the call's own source position,
 * 8 bytes, then the inlined function's index in the deoptimisation literals, int32, padded to
 * 16) in which the position is a script offset of that inlined function; the call's position
 * is again one of the function that inlined it, up to the code's own function (inlining id
 * none, V8's SourcePosition::InliningStack).
 */
#define V8_INLINING_POSITION_SIZE 16

struct v8_inlined_pos {
	int32_t function;      /* index in the literals, -1: the code's own function */
	int64_t script_offset; /* -1: none */
};

/* The frames at raw position `raw`, innermost first, the last the code's own function, into
 * out (at most cap); how many, 0 when the tables are inconsistent (an id past the inlining
 * positions, a function index past n_functions, a chain longer than cap): then no frame is
 * better than a wrong one.
 */
size_t v8_lines__inlining_stack(int64_t raw, const uint8_t *inlining, size_t inlining_len,
				size_t n_functions, struct v8_inlined_pos *out, size_t cap);

/* The script offset of the code at `code_offset` (the last entry at or before it, as V8's
 * AbstractCode::SourcePosition), or -1 when the table gives none.
 */
int64_t v8_lines__script_offset(const uint8_t *tab, size_t size, uint32_t code_offset);

/* The bytecode offset that baseline (Sparkplug) code runs at pc offset pc_off (V8's
 * Code::GetBytecodeOffsetForBaselinePC): the code's bytecode-offset table holds one
 * unsigned VLQ pc delta per bytecode, in bytecode order; pc_off lies in the range
 * (start, end] of the bytecode it belongs to (a return address: pass the leaf's pc + 1).
 * Bytecodes are walked with their sizes (sizes[scale * n_bytecodes + opcode], scale 0, 1, 2
 * for single, Wide and ExtraWide operands: V8's Bytecodes::kBytecodeSizes); the prefixes
 * (opcodes 0-3: Wide, ExtraWide and their DebugBreak forms) scale the bytecode after them.
 * -1 when the tables do not reach pc_off or are corrupt (no line, never another).
 */
int64_t v8_lines__baseline_offset(const uint8_t *table, size_t table_len, const uint8_t *bytecodes,
				  size_t bytecodes_len, const uint8_t *sizes, size_t n_bytecodes,
				  uint64_t pc_off);

/* The 1-based line (and 0-based column in *col) of script offset pos, from the offsets of
 * the script's line ends (line_ends[i]: offset of the '\n' ending line i + 1, ascending);
 * 0 when pos lies past the last line end or the table is empty.
 */
int v8_lines__line(const uint32_t *line_ends, size_t n, uint32_t pos, int *col);

/* The offsets of the '\n's of src[0, len) into out (at most cap) plus len itself as the end
 * of the last line (V8's Script::InitLineEnds): how many were written.
 */
size_t v8_lines__line_ends(const uint8_t *src, size_t len, size_t char_size, uint32_t *out,
			   size_t cap);

#endif
