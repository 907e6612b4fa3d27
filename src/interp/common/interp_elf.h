/* What the runtimes read from their interpreter's ELF file at detection: symbols by name,
 * initialised bytes at an address, the .eh_frame FDEs (function extents in stripped files).
 * The file is untrusted: every read is bounded by the section or segment it comes from.
 */
#ifndef STACKSCOPE_INTERP_ELF_H
#define STACKSCOPE_INTERP_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/eh_frame.h"

struct elf_file;

struct interp_sym {
	uint64_t addr, size;
	size_t index; /* in its symbol table */
	uint8_t type; /* STT_* */
	bool found;
	bool in_dynsym; /* index is a .dynsym index (relocations name those) */
};

/* The defined symbols called names[0..n) into out[0..n), from .dynsym, then .symtab for the
 * ones still missing (the first definition of a name wins).
 */
void interp_elf__symbols(struct elf_file *ef, const char *const *names, size_t n,
			 struct interp_sym *out);
/* The file's bytes [vaddr, vaddr + size) of a loaded segment, or NULL. */
const uint8_t *interp_elf__bytes(const struct elf_file *ef, uint64_t vaddr, size_t size);
/* Every FDE of the file's .eh_frame to fn (eh_frame__walk's contract); -ENOENT without one. */
int interp_elf__walk_fdes(struct elf_file *ef, eh_frame_fde_fn fn, void *ctx);

#endif
