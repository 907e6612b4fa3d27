/* Kernel symbols from /proc/kallsyms (or a file in its format, for tests):
 * "<hex address> <type letter> <name>[\t[<module>]]" per line.
 *
 * Text symbols (types t, T, w, W) get names; every other symbol is kept only as a boundary that
 * ends the text symbol before it. A text symbol covers [its address, the next distinct symbol
 * address); when it or the next symbol belongs to a module (including the pseudo-modules
 * "bpf" and "__builtin__ftrace"), or it is the last one, the extent is also capped at
 * KALLSYMS_MODULE_SYM_MAX bytes, since the gaps between modules are not code. At one address
 * the first text symbol in file order is the name reported.
 */
#ifndef STACKSCOPE_KALLSYMS_H
#define STACKSCOPE_KALLSYMS_H

#include <stdint.h>
#include <stddef.h>

#define KALLSYMS_PATH "/proc/kallsyms"
#define KALLSYMS_MODULE_SYM_MAX (64 * 1024)

struct kallsyms;

/* Load and sort the symbols of path (KALLSYMS_PATH for the running kernel). NULL with errno:
 * ENOENT/EACCES from open; EPERM when every address reads as zero (kptr_restrict hides them
 * from this user: run as root or lower /proc/sys/kernel/kptr_restrict); ENOEXEC if no line
 * parses; EFBIG beyond 256 MiB of text; ENOMEM. Malformed lines (and any over 64 KiB: a
 * kernel name stops at 512 bytes) are skipped.
 */
struct kallsyms *kallsyms__load(const char *path);
void kallsyms__free(struct kallsyms *ks);

/* Number of distinct symbol addresses kept (text and boundaries). */
size_t kallsyms__cnt(const struct kallsyms *ks);

/* Name of the text symbol containing addr, or NULL. offset (may be NULL) gets addr's offset
 * into it; module (may be NULL) gets the module name, or NULL for the core kernel. Returned
 * strings are borrowed and valid until kallsyms__free().
 */
const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, uint64_t *offset,
			     const char **module);

#endif
