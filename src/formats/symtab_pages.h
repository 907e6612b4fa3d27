/* A symbol table and its string table read once, front to back, with their pages given back
 * behind the walk.
 *
 * A giant's symbol sections are large (node: 17 MiB of .symtab, .strtab, .dynsym and .dynstr)
 * and a walk over them (the symbolizer's load, a runtime looking a few names up) reads each
 * byte once; left mapped, every page it touched stays in our RSS until the file is closed.
 * Every SYMTAB_PAGES_WINDOW bytes of symbols walked, the symbols behind and the names read
 * since the previous window are dropped (elf_file__drop_range(): the page cache keeps them,
 * a later read faults them back in). A no-op for tables not mapped from the file.
 * Invariant: only whole pages inside what was walked or read are dropped.
 */
#ifndef STACKSCOPE_SYMTAB_PAGES_H
#define STACKSCOPE_SYMTAB_PAGES_H

#include <stddef.h>

struct elf_file;

#define SYMTAB_PAGES_WINDOW ((size_t)256 << 10)

struct symtab_pages {
	struct elf_file *ef;
	const char *syms; /* the symbol table's bytes */
	size_t sym_sz;    /* bytes of one symbol */
	const char *strs; /* the string table's bytes */
	size_t str_sz;    /* and their count */
	size_t next_drop; /* the symbol at which the next window ends */
	size_t lo, hi;    /* the names read since the last drop: [lo, hi) of strs */
};

void symtab_pages__init(struct symtab_pages *sp, struct elf_file *ef, const void *syms,
			size_t sym_sz, const void *strs, size_t str_sz);
/* The name at offset off of the string table, its length in *len, its bytes noted as read;
 * NULL when off is outside the table or the name is not terminated inside it.
 */
const char *symtab_pages__name(struct symtab_pages *sp, size_t off, size_t *len);
/* Symbol i is about to be read: the window behind it is dropped when it is full. */
void symtab_pages__at(struct symtab_pages *sp, size_t i);
/* The walk ended after sym_cnt symbols: what it read is dropped. */
void symtab_pages__end(struct symtab_pages *sp, size_t sym_cnt);

#endif
