/* The symbolization state of every executable file, keyed by its file_id: the ELF symbol table
 * (and the names already copied out of it), the Go .gopclntab, and the DWARF found for the file
 * (through debuginfo, with a debuginfod fetch that may still be pending). Each is read from the
 * registry's executable (proc/executable.h: its fd, elf, path and root) on first use.
 *
 * Invariants:
 *  - at most one state per file_id, and at most `file_cap` states: a new file past the cap
 *    takes the place of another one, whose state is read again if that file is asked for later.
 *  - a state borrows its executable's elf (the symbol names are its pages): forget a file
 *    before the registry frees its executable (exe_registry_ops.forget), and free the table
 *    before the registry.
 *  - a file that shrank while being read (elf_file__changed) gives no names nor lines.
 * Strings returned are borrowed: valid until the next call on the table. Not thread-safe.
 */
#ifndef STACKSCOPE_FILE_SYMBOLS_H
#define STACKSCOPE_FILE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct executable;
struct debuginfo;
struct dwarf_line;
struct go_frame;
struct file_symbols;

#define FILE_SYMBOLS_DEFAULT_CAP 65536

/* A table of at most file_cap files (0: FILE_SYMBOLS_DEFAULT_CAP); NULL with errno ENOMEM. */
struct file_symbols *file_symbols__new(size_t file_cap);
void file_symbols__free(struct file_symbols *fs);
/* Drop the state of file_id (no-op if none): its executable is about to be freed. */
void file_symbols__forget(struct file_symbols *fs, uint64_t file_id);

/* Symbol containing ELF vaddr `addr` of exe (.symtab/.dynsym loaded on first use, then the
 * symbols of its MiniDebugInfo; the entry point's block is "_start"), with addr's offset in it,
 * or NULL.
 */
const char *file_symbols__symbol(struct file_symbols *fs, const struct executable *exe,
				 uint64_t addr, uint64_t *offset);
/* When no symbol names addr: the start of the function that contains it, from exe's .eh_frame
 * FDEs (read on first use; symbolize/function_starts.h). 0 (*start set) or -ENOENT.
 */
int file_symbols__function_start(struct file_symbols *fs, const struct executable *exe,
				 uint64_t addr, uint64_t *start);
/* Go source positions at ELF vaddr addr from exe's .gopclntab (opened on first use),
 * innermost first (gopclntab__lookup() contract): count >= 1, or -ENOENT when the file is not
 * Go or addr is in no Go function.
 */
int file_symbols__go_lines(struct file_symbols *fs, const struct executable *exe, uint64_t addr,
			   struct go_frame *out, size_t cap);
/* DWARF source positions at ELF vaddr addr, innermost first (dwarf_file__lookup() contract):
 * count >= 1, -ENOENT (no debug info / nothing there), -EAGAIN (a debuginfod fetch is pending:
 * ask again later). Debug info is looked up through di on first use (di outlives the table).
 */
int file_symbols__dwarf_lines(struct file_symbols *fs, const struct executable *exe,
			      struct debuginfo *di, uint64_t addr, const struct dwarf_line **lines);

#endif
