/* What the runtimes read from their interpreter's ELF file (see interp_elf.h). */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/symtab_pages.h"
#include "interp/common/interp_elf.h"

static void scan_symtab(struct elf_file *ef, const char *section, const char *const *names,
			size_t n, struct interp_sym *out)
{
	struct elf_section sym, str;
	struct symtab_pages pages;
	size_t idx, i, k;
	uint32_t link;

	if (elf_file__section_index(ef, section, &idx) ||
	    elf_file__section_at(ef, idx, &sym, NULL, &link) || !sym.data ||
	    elf_file__section_at(ef, link, &str, NULL, NULL) || !str.data)
		return;
	symtab_pages__init(&pages, ef, sym.data, sizeof(Elf64_Sym), str.data, str.size);
	for (i = 0; i < sym.size / sizeof(Elf64_Sym); i++) {
		Elf64_Sym s;
		const char *nm;
		size_t len;

		symtab_pages__at(&pages, i);
		memcpy(&s, (const uint8_t *)sym.data + i * sizeof(s), sizeof(s));
		if (s.st_shndx == SHN_UNDEF || (!s.st_value && ELF64_ST_TYPE(s.st_info) != STT_TLS))
			continue;
		nm = symtab_pages__name(&pages, s.st_name, &len);
		if (!nm)
			continue;
		for (k = 0; k < n; k++) {
			if (out[k].found || !names[k] || nm[0] != names[k][0] ||
			    strcmp(nm, names[k]))
				continue;
			out[k] = (struct interp_sym){ .addr = s.st_value,
						      .size = s.st_size,
						      .index = i,
						      .type = ELF64_ST_TYPE(s.st_info),
						      .found = true,
						      .in_dynsym = !strcmp(section, ".dynsym") };
		}
	}
	symtab_pages__end(&pages, sym.size / sizeof(Elf64_Sym));
}

void interp_elf__symbols(struct elf_file *ef, const char *const *names, size_t n,
			 struct interp_sym *out)
{
	size_t k;

	memset(out, 0, n * sizeof(*out));
	scan_symtab(ef, ".dynsym", names, n, out);
	for (k = 0; k < n && (out[k].found || !names[k]); k++)
		;
	if (k < n) /* some still missing */
		scan_symtab(ef, ".symtab", names, n, out);
}

const uint8_t *interp_elf__bytes(const struct elf_file *ef, uint64_t vaddr, size_t size)
{
	const void *data;
	size_t avail;

	if (elf_file__bytes_at_vaddr(ef, vaddr, &data, &avail) || avail < size)
		return NULL;
	return data;
}

int interp_elf__walk_fdes(struct elf_file *ef, eh_frame_fde_fn fn, void *ctx)
{
	struct cfi_section sec = { 0 };
	struct eh_frame_stats st = { 0 };
	struct elf_section eh, t;

	if (elf_file__section(ef, ".eh_frame", &eh) || !eh.data)
		return -ENOENT;
	sec.data = eh.data;
	sec.size = eh.size;
	sec.vaddr = eh.addr;
	sec.kind = CFI_SECTION_EH_FRAME;
	if (!elf_file__section(ef, ".text", &t))
		sec.text_vaddr = t.addr;
	if (!elf_file__section(ef, ".got", &t))
		sec.data_vaddr = t.addr;
	return eh_frame__walk(&sec, fn, ctx, &st);
}
