/* V8's embedded builtins in a binary whose symbols are gone (Debian's libnode.so.N keeps only
 * its dynamic symbols: no Builtins_*, no v8_Default_embedded_blob_code_): where the code blob
 * lies, each builtin's extent and name, and where the bytecode handlers start, all from the
 * binary's own data.
 *
 * What V8 puts there (src/snapshot/embedded/embedded-data.h, embedded-file-writer.cc;
 * src/builtins/builtins.cc), checked against NodeSource's Node 20 whose symbols name it:
 *  - the code blob: each builtin's instructions, followed by at least one int3 (0xcc) up to
 *    the next kCodeAlignment (32 or 64) boundary, the builtins back to back;
 *  - its address and size come back from four tiny accessors (DefaultEmbeddedBlobCode,
 *    ...CodeSize, ...Data, ...DataSize, 16 bytes apart in isolate.cc) that return a label
 *    (V8 11+), a pointer variable (V8 9-10) or a 32-bit size (x86-64's or arm64's code:
 *    v8_blob__accessor(), v8_blob__accessor_arm64()); V8 7-8 keep one blob
 *    (v8_Default_embedded_blob_, code after its table) and export its symbols;
 *  - the data blob: hashes (header bytes), then one LayoutDescription per builtin, in builtin
 *    order, beginning {instruction offset, instruction length} (its size varies: 8 bytes in
 *    V8 7.8, 12 in 13.6, 28 in 10.2, 32 in 11.3): found as the one (alignment, header, size)
 *    whose entries tile the code blob exactly, each ending on an int3;
 *  - the names: Builtins::name() reads builtin_metadata[], {name, kind, data} (24 bytes) per
 *    builtin; its name pointers are R_X86_64_RELATIVE (R_AARCH64_RELATIVE) relocations, in
 *    read-only data (arm64: in the text's segment), except in entries gcc
 *    initialises at start-up (`lea name(%rip), %reg; mov %reg, entry(%rip)` in a static
 *    constructor): both are read; the table is the run of named entries around "JSEntry"'s
 *    that has as many entries as the layout;
 *  - the bytecode handlers are the last builtins ("WideHandler" first, names ending in
 *    "Handler"); they count as the blob's tail only when they occupy exactly its tail.
 * Anything that does not check out leaves the part it concerns unknown (no names, no
 * handlers, no blob), never a guess.
 */
#ifndef STACKSCOPE_V8_BLOB_H
#define STACKSCOPE_V8_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

#define V8_BUILTINS_MAX 8192    /* builtins of a blob (V8 13.6: 2384) */
#define V8_BUILTIN_NAME_MAX 256 /* bytes of a builtin's name (Torque's generics are long) */

struct v8_builtin {
	uint32_t off, size; /* in the code blob; size padded to the next builtin */
	uint32_t name;      /* offset of "[v8] <name>" in the blob's names, UINT32_MAX: none */
};

struct v8_blob {
	uint64_t code, code_sz; /* ELF vaddr and size of the code blob (code_sz 0: not found) */
	uint64_t handlers_lo;   /* vaddr of the first bytecode handler, 0: unknown; they end at
				 * the blob's end */
	struct v8_builtin *builtins; /* by offset (NULL: extents not known) */
	size_t builtin_cnt;
	char *names; /* NULL: no names */
};

/* What an accessor returns: its kind and the address it works from. */
enum v8_accessor_kind {
	V8_ACC_ADDR = 1, /* the address itself (a label) */
	V8_ACC_PTR,      /* the 64-bit pointer stored there */
	V8_ACC_U32,      /* the 32-bit value stored there */
};

struct v8_accessor {
	enum v8_accessor_kind kind;
	uint64_t where; /* vaddr (of a GOT slot holding it when via_got) */
	bool via_got;
};

/* The function at vaddr whose bytes are code[0..n): one of the accessor shapes (optional
 * endbr64; `lea d(%rip), %rax` or `mov d(%rip), %rax` (GOT), then ret, `mov (%rax), %rax;
 * ret` or `mov (%rax), %eax; ret`; or `mov d(%rip), %eax; ret`), into *out; 0 or -ENOENT.
 */
int v8_blob__accessor(const uint8_t *code, size_t n, uint64_t vaddr, struct v8_accessor *out);

/* The same accessors in an arm64 file (`adrp x0` with `add`/`ldr` of the page offset, then
 * ret or one more load: v8_blob.c says which shapes); 0 or -ENOENT.
 */
int v8_blob__accessor_arm64(const uint8_t *code, size_t n, uint64_t vaddr, struct v8_accessor *out);

/* The layout table of a data blob (as above). */
struct v8_blob_table {
	uint32_t align, header, stride, cnt;
	uint64_t code_base; /* where instruction offsets count from, in `code` */
};

/* The table in data[0..data_sz) whose entries tile code[0..code_sz) (single: one blob of V8
 * 7-8, code == data, the instructions after the table at the next alignment); 0 with *out,
 * or -ENOENT.
 */
int v8_blob__table(const uint8_t *data, size_t data_sz, const uint8_t *code, size_t code_sz,
		   bool single, struct v8_blob_table *out);

/* Entry i of the table: instruction offset (from code_base) and length. */
void v8_blob__entry(const uint8_t *data, const struct v8_blob_table *t, uint32_t i, uint32_t *off,
		    uint32_t *len);

/* The builtins of ef (as above) into *out (zeroed first). 0 when the code blob was found
 * (names and handlers may still be unknown), -ENOENT or -ENOMEM; v8_blob__free() either way.
 */
int v8_blob__find(struct elf_file *ef, struct v8_blob *out);

/* "[v8] <name>" of the builtin holding vaddr, or NULL. Borrowed from b. */
const char *v8_blob__name(const struct v8_blob *b, uint64_t vaddr);

void v8_blob__free(struct v8_blob *b);

#endif
