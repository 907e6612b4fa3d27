/* Reader of a Go binary's `.gopclntab`: the table the Go runtime itself uses for tracebacks,
 * kept by the linker even in stripped binaries (`-ldflags='-s -w'` drops .symtab and DWARF,
 * not this). Gives, for a pc: the function (`main.(*Server).handle`), its file and line, the
 * calls the compiler inlined at that pc (FUNCDATA_InlTree + PCDATA_InlTreeIndex) as frames of
 * their own, and per function the stack-pointer delta table (pcsp) the unwinder derives its
 * rules from.
 *
 * Formats: the "go1.2" table of Go 1.2 to 1.15 (magic 0xfffffffb: one region addressed from
 * its start, absolute pcs, funcdata as addresses; inlined calls from Go 1.12), the pcHeader of
 * Go 1.18-1.19 (magic 0xfffffff0) and of Go 1.20 and later (0xfffffff1: `_func` gains
 * startLine, `inlinedCall` shrinks to 16 bytes and loses its call-site file/line), and between
 * them the table of Go 1.16-1.17 (0xfffffffa: 1.18's regions, 1.2's absolute function table
 * and funcdata addresses). 32-bit tables are refused (EPROTONOSUPPORT).
 *
 * Untrusted input: every read is bounded by the region it belongs to (function name table,
 * cutab, file table, pc-value tables, function table); varints are at most 5 bytes; a
 * pc-value walk ends at its table's end; an inline chain is cut at GO_MAX_FRAMES; the
 * function table is checked sorted at open (lookups binary-search it). A malformed function
 * or table makes that lookup fail, never a crash. Nothing is allocated after open; the
 * reader is immutable, so lookups may run from several threads.
 *
 * Strings handed out (names, files) point into the image given at open: they are valid as
 * long as that image is (for gopclntab__open(): as long as the elf_file).
 */
#ifndef STACKSCOPE_GOPCLNTAB_H
#define STACKSCOPE_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;
struct gopclntab;

#define GO_MAX_FRAMES 64 /* inline chain depth kept per pc (innermost first) */

enum gopclntab_version {
	GOPCLNTAB_V12 = 12,   /* Go 1.2 to 1.15 */
	GOPCLNTAB_V116 = 116, /* Go 1.16, 1.17 */
	GOPCLNTAB_V118 = 118, /* Go 1.18, 1.19 */
	GOPCLNTAB_V120 = 120, /* Go 1.20 and later */
};

/* Where a pclntab lives: its bytes, and optionally the bytes of the `go:func.*` data that
 * FUNCDATA offsets are relative to (moduledata.gofunc; without it, no inline tree). In the
 * Go 1.2 format FUNCDATA are addresses: gofunc is then the bytes at vaddr gofunc_addr that
 * hold the inline trees (the binary's .rodata).
 */
struct gopclntab_image {
	const void *pcln;
	size_t pcln_sz;
	const void *gofunc; /* nullable */
	size_t gofunc_sz;
	uint64_t gofunc_addr; /* Go 1.2 format only */
};

struct go_func {
	uint64_t entry, end; /* [entry, end): ELF vaddrs */
	const char *name;    /* NULL when the name is out of bounds */
	uint8_t func_id; /* the runtime's funcID (0: an ordinary function; numbered per version) */
	uint8_t flags;   /* GO_FUNC_* (the runtime's funcFlag; Go 1.2 format: derived) */
};

/* funcFlag bits (runtime/symtab.go, the same in 1.17 to 1.27). The Go 1.2 format has no
 * flags, nor has 1.16's: TOPFRAME is set for goexit, mstart and rt0_go, SPWRITE for the stack switches
 * (mcall, morestack, systemstack, asmcgocall, gogo, jmpdefer) and the vDSO callers
 * (nanotime1, walltime1), by their funcIDs (1.12-1.15's numbering) and names.
 */
#define GO_FUNC_TOPFRAME 0x1 /* the outermost frame of a stack: goexit, mstart, rt0_go */
#define GO_FUNC_SPWRITE 0x2  /* writes SP: stack switches (systemstack, mcall, morestack, ...) */

/* One source position, innermost first (the shape of profile_line). */
struct go_frame {
	const char *function; /* never NULL in a result ("?" when unreadable) */
	const char *file;     /* NULL when unknown */
	uint32_t line;        /* 0 = unknown */
};

/* The table of a Go ELF executable: section `.gopclntab` (`.data.rel.ro.gopclntab` in a
 * PIE), and the gofunc base found through the runtime's moduledata (a pointer to the table in
 * `.go.module` (Go 1.26), `.noptrdata` or `.data`; not found, e.g. in a PIE whose pointers are
 * relocations: names and lines work, inlined frames do not); for the Go 1.2 format, .rodata.
 * Go 1.26+ writes textStart 0: the base of the pcs is then moduledata's `text` (else the .text
 * section's start, which is not it when an external link put C code first).
 * NULL with errno: ENOENT (no .gopclntab: not Go), EPROTONOSUPPORT (Go 1.16-1.17's format or
 * a 32-bit table), ENOEXEC (corrupt header or function table; a Go 1.2 table whose pcs are
 * all zero: a PIE's, left to relocations), ENOMEM.
 */
struct gopclntab *gopclntab__open(struct elf_file *ef);
/* The same from bytes (tests, fuzzing); the image is borrowed, not copied. */
struct gopclntab *gopclntab__open_image(const struct gopclntab_image *img);
void gopclntab__free(struct gopclntab *t);

enum gopclntab_version gopclntab__version(const struct gopclntab *t);
/* Whether inlined frames can be expanded (the gofunc base was found). */
int gopclntab__has_inline(const struct gopclntab *t);

size_t gopclntab__func_cnt(const struct gopclntab *t);
/* Function idx (in address order); 0, -ENOENT (idx out of range), -ENOEXEC (corrupt). */
int gopclntab__func(const struct gopclntab *t, size_t idx, struct go_func *out);
/* Index of the function containing pc, or -ENOENT. */
long gopclntab__find(const struct gopclntab *t, uint64_t pc);

/* Source positions at pc, innermost first: the inlined calls, then the physical function
 * (its file and line are those of the call site of the inlined call above it, or of pc).
 * Returns the count (1..cap; the chain is cut to the innermost cap entries), -ENOENT (pc in
 * no function), -ENOEXEC (the function's tables are corrupt), -EINVAL (cap 0).
 * For a return address, pass the address minus one.
 */
int gopclntab__lookup(const struct gopclntab *t, uint64_t pc, struct go_frame *out, size_t cap);

/* The pcsp table of function idx: fn(ctx, start, end, sp_delta) for each run of pcs in
 * address order, sp_delta being the bytes the function has pushed on top of its return
 * address at those pcs (up to the end of the code: the padding after it has no run). fn's
 * nonzero return stops the walk and is returned; -ENOEXEC for a corrupt table or one that runs
 * past the function, -ENOENT for a function without one.
 */
typedef int (*gopclntab_sp_fn)(void *ctx, uint64_t start, uint64_t end, int32_t sp_delta);
int gopclntab__sp_deltas(const struct gopclntab *t, size_t idx, gopclntab_sp_fn fn, void *ctx);

#endif
