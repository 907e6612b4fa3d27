/* CPython line tables: instruction byte offset -> source line, with the interpreter's own
 * semantics (PyCode_Addr2Line) for each of the three formats; and an index of a whole table,
 * decoded once per code object, that answers each frame's lookup in O(log n).
 *
 * Input is untrusted (read from another process): every read is bounded by the table, a
 * truncated or corrupt table ends the walk and gives the line reached so far or -1, never a
 * read outside [tab, tab + size); line arithmetic is checked (a line outside int's range ends
 * the table as corrupt). python_lines__line allocates nothing; an index holds at most the
 * max_ranges it was built with (8 bytes each).
 */
#ifndef STACKSCOPE_PYTHON_LINES_H
#define STACKSCOPE_PYTHON_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum python_line_format {
	PYTHON_LINES_LNOTAB = 0,    /* 3.6-3.9 co_lnotab: (byte delta, signed line delta) */
	PYTHON_LINES_LINETABLE = 1, /* 3.10 co_linetable (PEP 626): (byte delta, line delta or
				     * -128 for "no line") */
	PYTHON_LINES_LOCATIONS = 2, /* 3.11+ co_linetable (PEP 657 location table) */
};

/* The line of the instruction at byte offset `offset` of a code object whose first line is
 * `firstlineno`; -1 when the instruction has no line (or the table does not reach it, for
 * the 3.10+ formats, as CPython). An offset of UINT32_MAX (frame not started) gives
 * firstlineno.
 */
int python_lines__line(enum python_line_format fmt, const uint8_t *tab, size_t size,
		       int firstlineno, uint32_t offset);

/* One run of instructions on one line: offsets from the previous range's end (0 for the
 * first) up to `end`, excluded, are on `line` (-1: none). Adjacent ranges differ in line.
 */
struct python_line_range {
	uint32_t end;
	int32_t line;
};

/* A table decoded: ranges in increasing end; past the last, -1 (truncated: the table had more
 * ranges than the index was allowed to hold, and those offsets read as -1 too).
 */
struct python_line_index {
	struct python_line_range *ranges;
	uint32_t n;
	int32_t firstlineno;
	bool truncated;
};

/* Decodes tab into *ix (zeroed first), at most max_ranges ranges: 0, or -ENOMEM (*ix empty). */
int python_lines__index(enum python_line_format fmt, const uint8_t *tab, size_t size,
			int firstlineno, size_t max_ranges, struct python_line_index *ix);
/* python_lines__line's answer, from the index. */
int python_lines__lookup(const struct python_line_index *ix, uint32_t offset);
/* The bytes the index holds (for a cache's budget). */
size_t python_lines__index_bytes(const struct python_line_index *ix);
void python_lines__index_free(struct python_line_index *ix);

#endif
