/* Symbol tables given back behind a one-pass walk. See symtab_pages.h. */
#include <stdint.h>
#include <string.h>

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
			size_t sym_sz, const void *strs, size_t str_sz)
{
	sp->ef = ef;
	sp->syms = syms;
	sp->sym_sz = sym_sz ? sym_sz : 1;
	sp->strs = strs;
	sp->str_sz = str_sz;
	sp->next_drop = SYMTAB_PAGES_WINDOW / sp->sym_sz;
	sp->lo = SIZE_MAX;
	sp->hi = 0;
}

const char *symtab_pages__name(struct symtab_pages *sp, size_t off, size_t *len)
{
	size_t n;

	if (off >= sp->str_sz)
		return NULL;
	n = strnlen(sp->strs + off, sp->str_sz - off);
	if (off < sp->lo)
		sp->lo = off;
	if (off + n + 1 > sp->hi)
		sp->hi = off + n + 1;
	if (n == sp->str_sz - off)
		return NULL; /* not terminated inside the string table */
	*len = n;
	return sp->strs + off;
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
