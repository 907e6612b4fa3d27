/* Reading V8 heap objects out of a Node process: the layout (from the binary's v8dbg_*
 * postmortem symbols, src/interp/v8/v8.c) and bounded readers of the objects symbolization
 * needs: an object's instance type, strings (sequential one- and two-byte, cons, thin,
 * sliced), Smi arrays (a script's line ends) and byte arrays (source-position tables).
 *
 * Objects are addressed by tagged pointer (address + 1, no pointer compression: 8-byte
 * tagged slots, Smis in the upper 32 bits). The heap is untrusted and moves under us: every
 * read is bounded (V8_STRING_MAX, the caller's capacity), an object of the wrong type or
 * size is an error (-EINVAL), an unreadable one -EFAULT; nothing is followed more than
 * V8_STRING_DEPTH deep.
 */
#ifndef STACKSCOPE_V8_HEAP_H
#define STACKSCOPE_V8_HEAP_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define V8_STRING_MAX 1024 /* bytes of a name read (UTF-8 out) */
#define V8_STRING_DEPTH 8  /* cons / thin / sliced strings followed */

struct v8_layout {
	/* instance types */
	uint16_t first_nonstring, type_sfi, type_script, type_scope_info, type_fixed_array,
		type_byte_array, type_bytecode, type_fn_lo, type_fn_hi;
	/* string representation and encoding bits of a string's instance type */
	uint16_t str_repr_mask, str_enc_mask, str_seq, str_cons, str_thin, str_sliced, str_one_byte;
	/* field offsets (bytes from the object's untagged address) */
	uint32_t map_type, fn_shared, sfi_name, sfi_script, sfi_function_data, script_name,
		script_source, script_line_ends, array_length, fixed_data, bc_spt, bc_data,
		str_length, seq_chars, cons_first, cons_second, thin_actual, sliced_parent,
		sliced_offset, scope_first_vars, scope_ncontext_locals;
	/* ScopeInfo: flags a raw uint32 rather than a Smi (V8 12.8+), the slot of the start
	 * position (0: after the names, V8 < 12.8), the scope types of a function and a class
	 */
	uint8_t scope_raw_flags, scope_positions, scope_function, scope_class;
	/* external strings: the tag, the uncached bit, the offset of a cached one's characters'
	 * address (ext_data 0: not read)
	 */
	uint16_t str_external, str_uncached;
	uint32_t ext_data;
	/* V8 7.8: its ScopeInfo layout (scope_info_facts_7), and a source-position table that
	 * may be wrapped in a SourcePositionTableWithFrameCache, its table first (0: none)
	 */
	bool scope_7;
	uint16_t type_spt_cache;
};

/* The instance type of the object at tagged pointer obj into *type; 0 or -errno. */
int v8_heap__type(pid_t pid, const struct v8_layout *l, uint64_t obj, uint16_t *type);

/* The string at tagged pointer obj as UTF-8 (NUL-terminated, at most cap - 1 bytes; longer
 * strings are cut at a character boundary); its instance type must be a string's. 0 or
 * -errno (-ENOTSUP: an external string).
 */
int v8_heap__string(pid_t pid, const struct v8_layout *l, uint64_t obj, char *out, size_t cap);

/* The raw characters of a sequential string (its first `max` characters) into a new buffer
 * (*out, malloc'd; *len characters of *char_size bytes), or of a cached external string
 * (where its resource keeps them, when the layout knows: ext_data). 0 or -errno
 * (-ENOTSUP: another representation).
 */
int v8_heap__seq_chars(pid_t pid, const struct v8_layout *l, uint64_t obj, size_t max,
		       uint8_t **out, size_t *len, size_t *char_size);

/* The length of the FixedArray or ByteArray at tagged pointer obj, of instance type `type`,
 * and the untagged address of its data; 0 or -errno.
 */
int v8_heap__array(pid_t pid, const struct v8_layout *l, uint64_t obj, uint16_t type,
		   uint64_t *data, size_t *len);

#endif
