/* Read-only access to an ELF file (a mapped binary, a shared library, a debug file or the
 * vDSO image in memory): identity (build id), program headers, named sections.
 *
 * Untrusted input: every offset and size is checked against the file; a corrupt or truncated
 * file makes the accessors fail with -ENOEXEC/-ENOENT, never crash; a file truncated by someone
 * else while open reads as zeros past its new end (elf_file__changed()). A path is opened with
 * base/safe_open.h (never a FIFO or device). The content identity of a file (its file_id) is
 * proc/file_id.h's business. Section data returned by
 * elf_file__section() is borrowed and stays valid until elf_file__free() (compressed sections
 * are decompressed once and owned by the elf_file).
 */
#ifndef STACKSCOPE_ELF_FILE_H
#define STACKSCOPE_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_BUILD_ID_MAX 64

struct elf_file;

struct elf_section {
	const void *data; /* NULL for SHT_NOBITS */
	size_t size;
	uint64_t addr;   /* sh_addr */
	uint64_t offset; /* sh_offset */
	uint32_t type;   /* sh_type */
	uint64_t flags;  /* sh_flags (SHF_COMPRESSED cleared once decompressed) */
};

struct elf_segment {
	uint32_t type;  /* p_type */
	uint32_t flags; /* p_flags (PF_X...) */
	uint64_t offset, vaddr, filesz, memsz;
};

/* Open a file by path (or by an fd it dups, or an in-memory image it copies). NULL with errno:
 * ENOENT/EACCES from open, ENOEXEC for a file that is not a readable 64-bit ELF.
 */
struct elf_file *elf_file__open(const char *path);
struct elf_file *elf_file__open_fd(int fd);
struct elf_file *elf_file__open_mem(const void *image, size_t size);
void elf_file__free(struct elf_file *ef);
/* Give back the resident pages of a file-backed image (they stay in the page cache and come
 * back on the next access); decompressed sections are not affected. For callers that are done
 * with the file for a while, so an idle file costs no RSS.
 */
void elf_file__drop_pages(struct elf_file *ef);
/* The same for the whole pages inside [p, p + len) (clipped to the image), when p lies in the
 * file-backed image (a section being walked once: its pages need not stay resident behind the
 * walk); a no-op for an in-memory image, a decompressed section or a p outside the image.
 */
void elf_file__drop_range(struct elf_file *ef, const void *p, size_t len);

uint16_t elf_file__type(const struct elf_file *ef);    /* ET_EXEC, ET_DYN, ... */
uint16_t elf_file__machine(const struct elf_file *ef); /* EM_X86_64, ... */
uint64_t elf_file__entry(const struct elf_file *ef);   /* e_entry (0: none) */
/* Bytes at the entry point that are its thread root when nothing else describes them: enough
 * for the usual `mov %rsp, %rdi; call` (glibc's ld.so) or `xor %ebp, %ebp; mov ...` (crt1).
 * Unwinding stops there and, without a symbol, the frame is named `_start`.
 */
#define ELF_ENTRY_ROOT_SZ 16
/* Bytes at the entry point that are the entry's own code, to name a root frame `_start` when
 * nothing else names it: glibc's ld.so runs its whole start-up from one block (`call
 * _dl_start`, then `call _dl_init` for the constructors, then `jmp *%r12` to the program), so
 * a stack that ends in a constructor ends at entry + ~0x30. Up to the first `jmp *%r12` within
 * ELF_ENTRY_BLOCK_MAX bytes, else ELF_ENTRY_ROOT_SZ.
 */
#define ELF_ENTRY_BLOCK_MAX 96
uint64_t elf_file__entry_block_size(const struct elf_file *ef);
uint64_t elf_file__size(const struct elf_file *ef);

/* GNU build id bytes into out (cap >= ELF_BUILD_ID_MAX); returns its length or -ENOENT. */
int elf_file__build_id(const struct elf_file *ef, uint8_t *out, size_t cap);
/* Lowercase hex of the build id into out (cap >= 2 * ELF_BUILD_ID_MAX + 1); -ENOENT if none. */
int elf_file__build_id_hex(const struct elf_file *ef, char *out, size_t cap);

/* Whether the file shrank while open (some of its pages now read as zeros; base/file_map.h):
 * what was read from it since may be garbage, so treat the file as gone.
 */
bool elf_file__changed(const struct elf_file *ef);

size_t elf_file__segment_cnt(const struct elf_file *ef);
const struct elf_segment *elf_file__segment(const struct elf_file *ef, size_t i);

/* ELF virtual address of a file offset, through the PT_LOAD segment containing it. */
int elf_file__offset_to_vaddr(const struct elf_file *ef, uint64_t offset, uint64_t *vaddr);

/* The file bytes at ELF vaddr, through the PT_LOAD segment holding it: *data and the bytes
 * available up to the end of that segment's file image. 0, -ENOENT (not in a segment) or
 * -ENOEXEC (corrupt). For files without section headers (e.g. .eh_frame via PT_GNU_EH_FRAME).
 */
int elf_file__bytes_at_vaddr(const struct elf_file *ef, uint64_t vaddr, const void **data,
			     size_t *avail);

/* Find a section by name; 0 or -ENOENT (missing) / -ENOEXEC (corrupt, failed to decompress). */
int elf_file__section(struct elf_file *ef, const char *name, struct elf_section *out);

/* .gnu_debuglink file name and CRC; 0 or -ENOENT. The name is borrowed. */
int elf_file__debuglink(struct elf_file *ef, const char **name, uint32_t *crc);

/* Additions (elf_symbols and other section walkers). */

/* Number of section headers; 0 when the file has none or its section header table is corrupt
 * (elf_file__section() then fails with -ENOEXEC rather than -ENOENT).
 */
size_t elf_file__section_cnt(const struct elf_file *ef);
/* Section by header index, with the same contract as elf_file__section(); -ENOENT if idx is out
 * of range. name and link (sh_link) are optional outputs; the name is borrowed like the data.
 */
int elf_file__section_at(struct elf_file *ef, size_t idx, struct elf_section *out,
			 const char **name, uint32_t *link);
/* Header index of the first section called name; 0, -ENOENT, or -ENOEXEC if the section
 * header table is corrupt.
 */
int elf_file__section_index(const struct elf_file *ef, const char *name, size_t *idx);

#endif
