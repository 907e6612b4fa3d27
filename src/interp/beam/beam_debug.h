/* The BEAM JIT's debugger records (OTP 24 and later): for every module it loads, and once for
 * the emulator itself, the JIT registers a record with the GDB JIT interface
 * (__jit_debug_descriptor: a list of entries, each pointing to its record). The records are the
 * emulator's own format, the same in OTP 25, 27 and 29 (measured):
 *   u32 kind (0: emulator, 1: module), 4 bytes of padding, then
 *   emulator: i32 frame layout (0: return addresses only, 1: frame pointers), padding,
 *             u64 normal_exit (the CP at the bottom of every process's stack);
 *   module:   u64 base, u32 range count, u32 code size, u16 name length, name (NUL included);
 *             at 32 + name length, its ranges: u32 start, u32 end (offsets from base), u32 line
 *             count, u16 name length, name ("mod:fun/arity", "mod:fun/arity-CodeInfoPrologue",
 *             "global::<fragment>"), the next at 16 + name length; after each range its lines:
 *             u32 start offset (from base), u32 line, u16 file length, file, the next at 12 +
 *             file length.
 * A module compiled without line information has ranges without lines.
 *
 * The record is untrusted (another process's memory): every length is checked against the
 * buffer, every string must be NUL-terminated inside it.
 */
#ifndef STACKSCOPE_BEAM_DEBUG_H
#define STACKSCOPE_BEAM_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#define BEAM_DEBUG_HDR_SZ 32 /* a record's header before the module name */

enum beam_debug_kind {
	BEAM_DEBUG_EMULATOR = 0,
	BEAM_DEBUG_MODULE = 1,
};

struct beam_debug_header {
	uint32_t kind;        /* enum beam_debug_kind */
	uint64_t base;        /* module: code start */
	uint32_t code_size;   /* module: bytes of code */
	uint32_t range_cnt;   /* module: ranges that follow */
	uint64_t normal_exit; /* emulator: the bottom CP */
};

/* The header of a record's first BEAM_DEBUG_HDR_SZ (or more) bytes: 0, or -EINVAL. */
int beam_debug__header(const uint8_t *buf, size_t len, struct beam_debug_header *out);

/* Where a pc lies, as a module's record says: strings borrowed from the record's buffer. */
struct beam_debug_place {
	const char *function; /* the range's name: "erl_chain:gamma/2" */
	const char *file;     /* NULL when the module has no line for it */
	int line;             /* 0 when unknown */
	int prologue;         /* the range is a function's entry (its name ends in
			       * BEAM_DEBUG_PROLOGUE): its line is the first of the body's range */
};

/* The name suffix of a function's entry range (its code info, breakpoint trampoline and
 * reduction check, before its first line).
 */
#define BEAM_DEBUG_PROLOGUE "-CodeInfoPrologue"

/* The range of the module record buf[len] holding code offset off, and its line (the last
 * line entry of that range at or before off; for a function's entry, the first line of the
 * range after it): 0, -ENOENT (no range holds it), -EINVAL (corrupt).
 */
int beam_debug__lookup(const uint8_t *buf, size_t len, uint64_t off, struct beam_debug_place *out);

/* The module name of the record buf[len] (borrowed from buf), or NULL when corrupt. */
const char *beam_debug__module(const uint8_t *buf, size_t len);

/* The range named name in the module record buf[len], as code offsets [*start, *end) from the
 * record's base: 0, -ENOENT (no such range), -EINVAL (corrupt).
 */
int beam_debug__range(const uint8_t *buf, size_t len, const char *name, uint32_t *start,
		      uint32_t *end);

#endif
