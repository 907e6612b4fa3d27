/* Function symbols of one ELF file, for turning an ELF virtual address into "name+offset".
 *
 * Built from .symtab and .dynsym (merged; either may be missing). Kept: defined STT_FUNC and
 * STT_GNU_IFUNC symbols. Symbols at the same address are aliases and collapse into one entry:
 * the preferred name is the one with the strongest binding (global, then weak, then local),
 * then a non-zero size, then the shortest name, then the first seen (.symtab before .dynsym,
 * table order within one); the merged entry takes the largest size among the aliases. A symbol
 * with a known size covers [value, value + size); a zero-size symbol covers up to the next
 * symbol's address or the end of its section, whichever is first. An address past the end of a
 * symbol nested inside a bigger one (up to 8 entries back) resolves to the enclosing symbol.
 *
 * The object owns copies of every name: it does not reference the elf_file, which may be freed
 * right after elf_symbols__load().
 */
#ifndef STACKSCOPE_ELF_SYMBOLS_H
#define STACKSCOPE_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct elf_symbols;

/* NULL with errno: ENOENT if the file has no function symbols at all, ENOEXEC if a symbol table
 * is corrupt (a truncated table, a string table out of bounds), ENOMEM.
 */
struct elf_symbols *elf_symbols__load(struct elf_file *ef);
/* The same, but names point into ef's string tables instead of being copied: ef must outlive
 * the table (and its pages stay reclaimable page cache instead of heap).
 */
struct elf_symbols *elf_symbols__load_borrowed(struct elf_file *ef);
void elf_symbols__free(struct elf_symbols *syms);

size_t elf_symbols__cnt(const struct elf_symbols *syms);

/* Name of the function containing ELF virtual address vaddr and vaddr's offset into it, or NULL
 * if vaddr is in no symbol. The name is borrowed and valid until elf_symbols__free().
 * offset_out may be NULL.
 */
const char *elf_symbols__lookup(const struct elf_symbols *syms, uint64_t vaddr,
				uint64_t *offset_out);

#endif
