/* HotSpot's compressed line-number tables (ConstMethod: the table right after the bytecodes)
 * and their UNSIGNED5 integers, decoded from bytes copied out of a JVM.
 *
 * A pair is one byte (bci delta << 3 | line delta) or 0xff followed by two signed UNSIGNED5
 * numbers (bci delta, line delta); 0 ends the table. UNSIGNED5 changed in JDK 20: bytes are
 * offset by one so that 0 never occurs (excluded = 1; before: 0).
 */
#ifndef STACKSCOPE_HOTSPOT_LINES_H
#define STACKSCOPE_HOTSPOT_LINES_H

#include <stddef.h>
#include <stdint.h>

/* One UNSIGNED5 number at *pos (advanced); -1 when it runs past len. */
int hotspot_lines__unsigned5(const uint8_t *buf, size_t len, size_t *pos, unsigned excluded,
			     uint32_t *out);

/* The line of bytecode index bci (the last entry at or before it), or 0 when the table has
 * none; never reads past len.
 */
int hotspot_lines__line(const uint8_t *table, size_t len, unsigned excluded, uint32_t bci);

/* How many bytes of table form the whole table (through its terminating 0), or 0 if it does
 * not end within len.
 */
size_t hotspot_lines__table_len(const uint8_t *table, size_t len, unsigned excluded);

/* A table decoded once into entries sorted by bci (the order of the table kept among equal
 * bcis), for lookups in O(log n): what a method keeps in place of its compressed table.
 */
struct hotspot_line {
	uint32_t bci;
	int32_t line;
};

/* Entries decoded at most (a table of len bytes holds at most len pairs). */
#define HOTSPOT_LINES_INDEX_MAX 16384

/* The index of table (len bytes, through its terminating 0) into *out (malloc'd, *cnt
 * entries, the caller frees): 0, -EBADMSG (malformed, not ended within len or empty),
 * -ENOMEM. At most HOTSPOT_LINES_INDEX_MAX pairs: a longer table is refused.
 */
int hotspot_lines__index(const uint8_t *table, size_t len, unsigned excluded,
			 struct hotspot_line **out, size_t *cnt);

/* The line of bci in an index, exactly as hotspot_lines__line() on its table; 0: none. */
int hotspot_lines__index_line(const struct hotspot_line *idx, size_t cnt, uint32_t bci);

#endif
