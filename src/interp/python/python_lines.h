/* CPython line tables: instruction byte offset -> source line, with the interpreter's own
 * semantics (PyCode_Addr2Line) for each of the three formats.
 *
 * Input is untrusted (read from another process): every read is bounded by the table, a
 * truncated or corrupt table ends the walk and gives the line reached so far or -1, never a
 * read outside [tab, tab + size). Nothing allocates.
 */
#ifndef STACKSCOPE_PYTHON_LINES_H
#define STACKSCOPE_PYTHON_LINES_H

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

#endif
