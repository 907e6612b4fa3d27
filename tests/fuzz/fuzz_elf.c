/* libFuzzer target for the ELF reader (src/formats/elf_file.c) and the function symbols built on
 * it (src/formats/elf_symbols.c): the input is an ELF image. Every accessor is called: the
 * identity (build id, file id), every segment, offset and vaddr translation, the bytes at the
 * entry point and at each segment's bounds, every section by index and by its own name (which
 * decompresses SHF_COMPRESSED and .zdebug_ sections), the well-known section names, the
 * debuglink; then the symbol table is loaded both ways and looked up around each symbol-bearing
 * segment. Every byte handed out is read, so ASan sees any out-of-bounds data pointer. Nothing
 * may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_elf.sh (seeds: small elf_* and cfi_* fixtures).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/elf_symbols.h"

#define FUZZ_SECTION_MAX 256 /* sections visited by index per input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t fuzz_sink;

/* Read every byte of a buffer handed out by the reader. */
static void touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t acc = 0;
	size_t i;

	for (i = 0; i < n; i++)
		acc ^= b[i];
	fuzz_sink ^= acc;
}

static void exercise_vaddr(struct elf_file *ef, uint64_t vaddr)
{
	const void *bytes;
	size_t avail;

	if (!elf_file__bytes_at_vaddr(ef, vaddr, &bytes, &avail))
		touch(bytes, avail < 4096 ? avail : 4096);
}

static void exercise_sections(struct elf_file *ef)
{
	static const char *const names[] = { ".eh_frame", ".eh_frame_hdr", ".debug_frame",
					     ".debug_info", ".debug_line", ".symtab", ".dynsym",
					     ".gnu_debuglink", ".note.gnu.build-id", ".text",
					     ".gnu_debugdata", "" };
	struct elf_section sec;
	const char *name;
	size_t i, cnt, idx;
	uint32_t link;

	cnt = elf_file__section_cnt(ef);
	for (i = 0; i < cnt && i < FUZZ_SECTION_MAX; i++) {
		if (elf_file__section_at(ef, i, &sec, &name, &link))
			continue;
		if (sec.data)
			touch(sec.data, sec.size);
		touch(name, strlen(name));
		if (!*name)
			continue; /* no name, or a name out of the string table */
		if (!elf_file__section_index(ef, name, &idx) && idx > i)
			abort(); /* the first section of that name cannot come after this one */
		if (!elf_file__section(ef, name, &sec) && sec.data)
			touch(sec.data, sec.size);
	}
	elf_file__section_at(ef, cnt, &sec, NULL, NULL); /* out of range: -ENOENT */
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elf_file__section(ef, names[i], &sec) && sec.data)
			touch(sec.data, sec.size);
		elf_file__section_index(ef, names[i], &idx);
	}
}

static void exercise_symbols(struct elf_file *ef)
{
	struct elf_symbols *syms, *borrowed;
	const struct elf_segment *seg;
	const char *name;
	uint64_t off;
	size_t i, j;

	syms = elf_symbols__load(ef);
	borrowed = elf_symbols__load_borrowed(ef);
	if (!syms != !borrowed || (syms && elf_symbols__cnt(syms) != elf_symbols__cnt(borrowed)))
		abort(); /* the two loads see the same tables */
	for (i = 0; syms && i < elf_file__segment_cnt(ef); i++) {
		seg = elf_file__segment(ef, i);
		for (j = 0; j < 32; j++) {
			name = elf_symbols__lookup(syms, seg->vaddr + j * (seg->memsz / 31 + 1), &off);
			if (name)
				touch(name, strlen(name));
			name = elf_symbols__lookup(borrowed, seg->vaddr + j, NULL);
			if (name)
				touch(name, strlen(name));
		}
	}
	elf_symbols__free(syms);
	elf_symbols__free(borrowed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hex[2 * ELF_BUILD_ID_MAX + 1];
	uint8_t id[ELF_BUILD_ID_MAX];
	const struct elf_segment *seg;
	const char *link_name;
	struct elf_file *ef;
	uint64_t entry = 0, vaddr;
	uint32_t crc;
	size_t i;
	int n;

	ef = elf_file__open_mem(data, size);
	if (!ef)
		return 0;
	elf_file__type(ef);
	elf_file__machine(ef);
	if (elf_file__size(ef) != size)
		abort();
	if (elf_file__changed(ef)) /* an in-memory image never shrinks */
		abort();
	n = elf_file__build_id(ef, id, sizeof(id));
	if (n > 0 && (n > ELF_BUILD_ID_MAX ||
		      elf_file__build_id_hex(ef, hex, sizeof(hex)) != 0 || strlen(hex) != 2 * (size_t)n))
		abort();
	if (!elf_file__debuglink(ef, &link_name, &crc))
		touch(link_name, strlen(link_name));

	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		seg = elf_file__segment(ef, i);
		if (!elf_file__offset_to_vaddr(ef, seg->offset, &vaddr))
			exercise_vaddr(ef, vaddr);
		elf_file__offset_to_vaddr(ef, seg->offset + seg->filesz, &vaddr);
		exercise_vaddr(ef, seg->vaddr);
		exercise_vaddr(ef, seg->vaddr + seg->filesz - 1);
		exercise_vaddr(ef, seg->vaddr + seg->memsz);
	}
	elf_file__segment(ef, elf_file__segment_cnt(ef)); /* out of range */
	if (size >= 0x20)
		memcpy(&entry, data + 0x18, sizeof(entry)); /* e_entry */
	exercise_vaddr(ef, entry);
	for (i = 0; i < 8 && size >= 8 * (i + 1); i++) {
		memcpy(&vaddr, data + size - 8 * (i + 1), sizeof(vaddr));
		exercise_vaddr(ef, vaddr);
		elf_file__offset_to_vaddr(ef, vaddr, &vaddr);
	}

	exercise_sections(ef);
	exercise_symbols(ef);
	elf_file__drop_pages(ef);
	elf_file__free(ef);
	return 0;
}
