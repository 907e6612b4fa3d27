/* Symbol tables given back behind a one-pass walk. See symtab_pages.h. */
#include <stdint.h>

#include "formats/elf_file.h"
#include "formats/symtab_pages.h"

static void drop(struct symtab_pages *sp, size_t upto)
{
	elf_file__drop_range(sp->ef, sp->syms, upto * sp->sym_sz);
	if (sp->lo < sp->hi)
		elf_file__drop_range(sp->ef, sp->strs + sp->lo, sp->hi - sp->lo);
	sp->lo = SIZE_MAX;
	sp->hi = 0;
}

void symtab_pages__init(struct symtab_pages *sp, struct elf_file *ef, const void *syms,
			size_t sym_sz, const void *strs)
{
	sp->ef = ef;
	sp->syms = syms;
	sp->sym_sz = sym_sz ? sym_sz : 1;
	sp->strs = strs;
	sp->next_drop = SYMTAB_PAGES_WINDOW / sp->sym_sz;
	sp->lo = SIZE_MAX;
	sp->hi = 0;
}

void symtab_pages__name(struct symtab_pages *sp, size_t off, size_t len)
{
	if (off < sp->lo)
		sp->lo = off;
	if (off + len > sp->hi)
		sp->hi = off + len;
}

void symtab_pages__at(struct symtab_pages *sp, size_t i)
{
	if (i < sp->next_drop)
		return;
	drop(sp, i);
	sp->next_drop = i + SYMTAB_PAGES_WINDOW / sp->sym_sz;
}

void symtab_pages__end(struct symtab_pages *sp, size_t sym_cnt)
{
	if (sym_cnt * sp->sym_sz > SYMTAB_PAGES_WINDOW)
		drop(sp, sym_cnt);
}
