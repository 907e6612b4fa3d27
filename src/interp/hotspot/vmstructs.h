/* HotSpot's serviceability tables (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants),
 * read from a live JVM: the field offsets, static addresses, type sizes and constants the
 * JVM itself exports for debuggers. Every layout the HotSpot runtime uses comes from here,
 * never from a table per release.
 *
 * The tables and their entry-layout descriptors (…EntryArrayStride, …FieldNameOffset, ...)
 * are initialised by libjvm's static constructors, so they are read from process memory
 * (bounded: at most VMSTRUCTS_CAP entries per table, names of at most 127 bytes); the name
 * strings are read from the file when the pointer falls inside it (fewer system calls).
 * A table that is absent or malformed leaves the lookups failing; callers decide.
 */
#ifndef STACKSCOPE_HOTSPOT_VMSTRUCTS_H
#define STACKSCOPE_HOTSPOT_VMSTRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "interp/interp.h"

#define VMSTRUCTS_CAP 8192

struct elf_file;

/* Link-time addresses (ELF vaddrs) of the exported symbols, from the file: X(ID, "name")
 * entries (interp.h's INTERP_LIST_ENUM / INTERP_LIST_TEXT make the enum and vm_sym_names).
 */
#define VM_SYMS(X)                                                            \
	X(VM_SYM_STRUCTS, "gHotSpotVMStructs")                                \
	X(VM_SYM_STRUCT_STRIDE, "gHotSpotVMStructEntryArrayStride")           \
	X(VM_SYM_STRUCT_TYPE_NAME, "gHotSpotVMStructEntryTypeNameOffset")     \
	X(VM_SYM_STRUCT_FIELD_NAME, "gHotSpotVMStructEntryFieldNameOffset")   \
	X(VM_SYM_STRUCT_TYPE_STRING, "gHotSpotVMStructEntryTypeStringOffset") \
	X(VM_SYM_STRUCT_IS_STATIC, "gHotSpotVMStructEntryIsStaticOffset")     \
	X(VM_SYM_STRUCT_OFFSET, "gHotSpotVMStructEntryOffsetOffset")          \
	X(VM_SYM_STRUCT_ADDRESS, "gHotSpotVMStructEntryAddressOffset")        \
	X(VM_SYM_TYPES, "gHotSpotVMTypes")                                    \
	X(VM_SYM_TYPE_STRIDE, "gHotSpotVMTypeEntryArrayStride")               \
	X(VM_SYM_TYPE_NAME, "gHotSpotVMTypeEntryTypeNameOffset")              \
	X(VM_SYM_TYPE_SIZE, "gHotSpotVMTypeEntrySizeOffset")                  \
	X(VM_SYM_INTS, "gHotSpotVMIntConstants")                              \
	X(VM_SYM_INT_STRIDE, "gHotSpotVMIntConstantEntryArrayStride")         \
	X(VM_SYM_INT_NAME, "gHotSpotVMIntConstantEntryNameOffset")            \
	X(VM_SYM_INT_VALUE, "gHotSpotVMIntConstantEntryValueOffset")

enum vm_sym { VM_SYMS(INTERP_LIST_ENUM) VM_SYM_CNT };

extern const char *const vm_sym_names[VM_SYM_CNT];

struct vm_field {
	char *type, *field, *type_string;
	bool is_static;
	uint64_t offset;  /* instance field: byte offset */
	uint64_t address; /* static field: absolute address in the process it was read from */
};

/* A number by name: a type's size, an int constant's value (sign-extended). */
struct vm_number {
	char *name;
	uint64_t value;
};

struct vm_numbers {
	struct vm_number *entries;
	size_t cnt, cap;
};

struct vmstructs {
	struct vm_field *fields;
	size_t field_cnt, field_cap;
	struct vm_numbers types, ints;
};

/* Read the tables of process pid, whose libjvm (elf, may be NULL) is loaded at bias; syms are
 * the symbols' ELF vaddrs (0: absent). 0, or -errno (-ENOENT: a table is missing or empty,
 * e.g. libjvm not initialised yet).
 */
int vmstructs__read(struct vmstructs *vs, pid_t pid, struct elf_file *elf, uint64_t bias,
		    const uint64_t syms[VM_SYM_CNT]);
void vmstructs__free(struct vmstructs *vs);

/* Lookups: 0 with *out, or -ENOENT. */
int vmstructs__offset(const struct vmstructs *vs, const char *type, const char *field,
		      uint64_t *out);
int vmstructs__address(const struct vmstructs *vs, const char *type, const char *field,
		       uint64_t *out);
/* The field's declared type ("int", "address", "u2"...), or NULL. */
const char *vmstructs__field_type(const struct vmstructs *vs, const char *type, const char *field);
int vmstructs__size(const struct vmstructs *vs, const char *type, uint64_t *out);
int vmstructs__int(const struct vmstructs *vs, const char *name, int32_t *out);

#endif
