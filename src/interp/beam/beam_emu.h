/* The BEAM's emulator flavour (`emu`: OTP 23 on Debian 11, no JIT): where its loaded code and
 * atoms are, and the name, file and line of a pc in that code (the frames
 * bpf/interp/beam/walk.h emits from the interpreter loop).
 *
 * The loaded code of a module is one block of the emulator's heap, threaded code beginning with
 * its code header; the emulator finds a pc's module in its range table (beam_ranges.c's static
 * r[]: per code index, an array of {start, end} sorted by start, the active index in
 * the_active_code_index), its function by the header's sorted function table, its line by the
 * header's line table. Layout of OTP 23 (erts 11), read from beam.smp's own code (the table's
 * address from the lea in find_range, which erts_lookup_function_info calls first; the offsets
 * below are those its code uses, Debian's 23.2.6 build):
 *   struct ranges (32 bytes): Range *modules, n, allocated, mid; Range: start, end;
 *   BeamCodeHeader: num_functions at 0, line_table at 0x48, functions[num + 1] at 0x58;
 *   ErtsCodeInfo: {module, function, arity} (the MFA) at 0x10;
 *   BeamCodeLineTab: fname_ptr at 0, int loc_size at 8, loc_tab at 0x10, func_tab[num + 1] at
 *     0x18 (each an array of the positions of the function's line instructions, ending at the
 *     next's); a location is file << 24 | line, file 0 the module's name with ".erl", else
 *     fname_ptr[file - 1] (an atom); 0 is no location;
 *   erts_atom_table (IndexTable): seg_table at 0x78, pages of 1,024 Atom pointers; Atom: i16
 *     len at 0x18, name at 0x20; an atom term is index << 6 | 0x0b.
 *
 * Everything read from the process is untrusted: counts and lengths are capped, a binary
 * search reads at most its log2 of entries.
 */
#ifndef STACKSCOPE_BEAM_EMU_H
#define STACKSCOPE_BEAM_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_file;
struct elf_section;
struct interp_sym;

/* ELF vaddrs in beam.smp (the process's are these + its bias). */
struct beam_emu_layout {
	uint64_t ranges;     /* r[]: ERTS_NUM_CODE_IX struct ranges */
	uint64_t code_ix;    /* the_active_code_index (u32) */
	uint64_t atom_table; /* erts_atom_table */
	uint64_t first_cp;   /* &beam_apply[1]: the CP at the bottom of every process's stack */
};

/* A module's loaded code: [start, end), start its code header. */
struct beam_emu_range {
	uint64_t start, end;
};

#define BEAM_EMU_NAME_MAX 128

struct beam_emu_place {
	char function[BEAM_EMU_NAME_MAX]; /* "module:function/arity" */
	char file[BEAM_EMU_NAME_MAX];     /* "" when the module has no line for the pc */
	int line;
};

/* The layout from the file's symbols (erts_lookup_function_info, the_active_code_index,
 * erts_atom_table, beam_apply) and its .text: 0, or -ENOENT when it is not the one above.
 */
int beam_emu__layout(struct elf_file *ef, const struct elf_section *text,
		     const struct interp_sym *lookup_fn, const struct interp_sym *code_ix,
		     const struct interp_sym *atom_table, const struct interp_sym *apply,
		     struct beam_emu_layout *out);

/* Where the active code index's module ranges are: {code index, array, count} into head: 0 or
 * -errno (a module loaded or purged changes it: a cheap test for a new read).
 */
int beam_emu__table(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t head[3]);

/* The active code index's module ranges, sorted, into a new array *out (*n of them): 0 or
 * -errno.
 */
int beam_emu__ranges(pid_t reader, const struct beam_emu_layout *l, uint64_t bias,
		     struct beam_emu_range **out, size_t *n);

/* The place of pc in the module whose code header is at hdr: 0, or -errno with *why. */
int beam_emu__place(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t hdr,
		    uint64_t pc, struct beam_emu_place *out, const char **why);

#endif
