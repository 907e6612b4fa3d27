/* Source lines and inline chains from the DWARF of one ELF file (elfutils libdw).
 *
 * A dwarf_file maps an ELF virtual address of the ORIGINAL executable to the chain of source
 * positions at that address, innermost first, the last being the function that contains it
 * (pprof Location.line order). A separate debug file (objcopy --only-keep-debug, a .build-id
 * file, a debuginfod download) has the same address layout as its executable, so the same
 * address works on either. The result equals `eu-addr2line -f -i -e FILE ADDR`:
 *  - line 0: the innermost function (DW_TAG_inlined_subroutine or DW_TAG_subprogram, by its
 *    linkage name if it has one, else its name, through DW_AT_abstract_origin/specification),
 *    with the file and line of the line table row for the address;
 *  - line k > 0: the function that inlined line k-1's function, with the call site
 *    (DW_AT_call_file, DW_AT_call_line) of that inlined instance.
 * Without a DWARF function at the address, one line with the .symtab/.dynsym name (if any)
 * and no file.
 *
 * Invariants:
 *  - indexes are built lazily: the compile-unit range index on the first lookup, a unit's
 *    scope index (address ranges of its functions, inlined calls and blocks) on the first
 *    lookup in that unit; libdw reads each unit's line table and DIEs when first needed.
 *  - scope indexes share a byte budget fixed in dwarf.c (least recently used ones are
 *    dropped and rebuilt when needed); a unit that gets none is looked up by walking its DIEs
 *    at every address, as eu-addr2line does.
 *  - results are cached per address in a direct-mapped cache of cache_cap entries fixed at
 *    open (a colliding address evicts the older entry); the cache never grows.
 *  - an inline chain is cut at DWARF_MAX_LINES entries (innermost kept).
 *  - untrusted input: corrupt or truncated DWARF makes lookups fail (counted), never crash
 *    (as far as libdw holds up: the reader is fuzzed, tests/fuzz/fuzz_dwarf.c).
 * Not thread-safe: one owner per dwarf_file.
 */
#ifndef STACKSCOPE_DWARF_H
#define STACKSCOPE_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DWARF_MAX_LINES 64

struct dwarf_file;

/* One source position (the same shape as profile_line). */
struct dwarf_line {
	const char *function; /* never NULL in a result ("??" when DWARF has no name) */
	const char *file;     /* source path as the DWARF names it, or NULL */
	uint32_t line;        /* 0 = unknown */
};

struct dwarf_opts {
	size_t cache_cap; /* cached addresses; rounded up to a power of two; 0 = 4096 */
	bool demangle;    /* demangle C++ and Rust names (demangle.h) */
};

struct dwarf_stats {
	uint64_t lookups; /* dwarf_file__lookup() calls */
	uint64_t cache_hits;
	uint64_t not_found; /* addresses in no unit and no symbol */
	uint64_t errors;    /* corrupt DWARF met during a lookup */
	uint64_t evictions;
	size_t unit_cnt; /* compile units indexed */
	size_t index_sz; /* bytes held by the unit and scope indexes */
	size_t cache_sz; /* bytes held by the cache and its results */
};

/* Open path (an ELF with .debug_info, or without: symbols only). opts may be NULL.
 * NULL with errno: ENOENT/EACCES from open, ENOEXEC for a file that is not ELF, ENOMEM.
 */
struct dwarf_file *dwarf_file__open(const char *path, const struct dwarf_opts *opts);
/* The same for a file already open at fd (dup'ed: the caller keeps its fd); path is only for
 * messages. The file is mapped guarded: truncated while open, it reads zeros, never SIGBUS.
 */
struct dwarf_file *dwarf_file__open_fd(int fd, const char *path, const struct dwarf_opts *opts);
/* The same for an in-memory ELF image (MiniDebugInfo, a fuzz input); the image is copied. */
struct dwarf_file *dwarf_file__open_mem(const void *image, size_t size,
					const struct dwarf_opts *opts);
void dwarf_file__free(struct dwarf_file *df);

/* Whether the file has DWARF units (false: only symbol tables, or nothing usable). */
bool dwarf_file__has_dwarf(struct dwarf_file *df);

/* Source positions at ELF virtual address vaddr, innermost first. Returns their count (>= 1)
 * and points *lines at them, or -ENOENT (nothing known at vaddr), -ENOEXEC (corrupt DWARF for
 * vaddr), -ENOMEM. *lines and its strings are borrowed: valid until the next lookup on df or
 * dwarf_file__free(). For a return address, pass the address minus one.
 */
int dwarf_file__lookup(struct dwarf_file *df, uint64_t vaddr, const struct dwarf_line **lines);

void dwarf_file__stats(const struct dwarf_file *df, struct dwarf_stats *out);

#endif
