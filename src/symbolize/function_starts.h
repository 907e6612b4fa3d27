/* Where the functions of a file start, from its .eh_frame: every FDE's [pc_begin, pc_end), so
 * a pc that no symbol names (a stripped library's static functions) is still placed in its
 * function, and every pc of one function shows as the same frame (`libruby.so+0xb8000`, the
 * function's start) instead of one frame per address.
 *
 * Invariants: ranges are sorted by start; at most FUNCTION_STARTS_CAP of them (a file with more
 * FDEs has none kept: ENOSPC). The table owns its memory and does not reference the elf_file.
 */
#ifndef STACKSCOPE_FUNCTION_STARTS_H
#define STACKSCOPE_FUNCTION_STARTS_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct function_starts;

#define FUNCTION_STARTS_CAP (2u << 20) /* FDEs kept per file: 16 bytes each */

/* The FDE ranges of ef's .eh_frame (its pages dropped behind the walk). NULL with errno:
 * ENOENT (no .eh_frame, or no FDE in it), ENOSPC (more than FUNCTION_STARTS_CAP), ENOMEM.
 */
struct function_starts *function_starts__load(struct elf_file *ef);
void function_starts__free(struct function_starts *fs);
size_t function_starts__cnt(const struct function_starts *fs);

/* The start of the FDE range that contains ELF vaddr `addr`: 0 (*start set) or -ENOENT. */
int function_starts__lookup(const struct function_starts *fs, uint64_t addr, uint64_t *start);

#endif
