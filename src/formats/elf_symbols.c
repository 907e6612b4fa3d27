/* Function symbol table of one ELF file (see elf_symbols.h for the selection and alias rules).
 *
 * Invariants: sym[] is sorted by start with unique starts; start < end for every entry; every
 * name points at a NUL-terminated name: inside names[], which the object owns, or (borrowed
 * tables) inside the elf_file's string table. A table that
 * is corrupt is skipped (the other one may still be good); only when no symbol survives does
 * the load fail.
 */
#include "formats/elf_symbols.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/cmp.h"
#include "formats/elf_file.h"
#include "formats/symtab_pages.h"

/* How many earlier entries lookup inspects for an enclosing symbol when the closest one ends
 * before the address (a function with a nested label symbol inside it).
 */
#define ELF_SYMBOLS_NEST_MAX 8

struct elf_sym {
	uint64_t start;
	uint64_t end; /* exclusive */
	const char *name;
};

struct elf_symbols {
	struct elf_sym *sym;
	size_t cnt;
	char *names;
};

/* A symbol as read from a table, before aliases are merged: 32 bytes, as a giant has hundreds
 * of thousands (node: 220,000 in .symtab and .dynsym).
 */
struct sym_cand {
	uint64_t start;
	uint64_t size;
	uint32_t name_off; /* in its table's string section (st_name) */
	uint32_t name_len;
	uint32_t seq;
	uint16_t shndx;    /* its section (SHN_ABS: none): the end of a zero-size symbol */
	uint8_t bind_rank; /* 0 global, 1 weak, 2 local, 3 other */
	uint8_t table;     /* enum sym_table: whose string section name_off is in */
};

enum sym_table { SYM_TABLE_SYMTAB, SYM_TABLE_DYNSYM, SYM_TABLE_CNT };

struct cand_vec {
	struct sym_cand *v;
	size_t cnt, cap;
};

static int cand_vec__push(struct cand_vec *cv, const struct sym_cand *c)
{
	int err = array__reserve_bounded((void **)&cv->v, &cv->cap, cv->cnt + 1, sizeof(*cv->v),
					 256, SIZE_MAX);

	if (err)
		return -ENOMEM;
	cv->v[cv->cnt++] = *c;
	return 0;
}

static uint8_t bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
	case STB_GNU_UNIQUE:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

/* Address order; within one address, the preferred alias first. */
static int cand_cmp(const void *a, const void *b)
{
	const struct sym_cand *x = a, *y = b;

	/* a known size (0) before none (1) */
	return cmp_u64(x->start, y->start) ?: cmp_u64(x->bind_rank, y->bind_rank) ?:
		cmp_u64(!x->size, !y->size) ?: cmp_u64(x->name_len, y->name_len) ?:
		cmp_u64(x->seq, y->seq);
}

/* Read the function symbols of one symbol table section into cv. -ENOENT if the file has no
 * such table, -ENOEXEC if it is corrupt.
 */
static int elf_symbols__read_table(struct elf_file *ef, const char *sec_name, uint32_t want_type,
				   enum sym_table table, struct cand_vec *cv, uint32_t *seq,
				   const char **strs)
{
	struct elf_section tab, str;
	struct symtab_pages pages;
	size_t idx, sym_cnt, len;
	uint32_t link;
	int err;

	err = elf_file__section_index(ef, sec_name, &idx);
	if (err)
		return err;
	err = elf_file__section_at(ef, idx, &tab, NULL, &link);
	if (err)
		return err;
	if (tab.type != want_type || !tab.data)
		return -ENOENT;
	err = elf_file__section_at(ef, link, &str, NULL, NULL);
	if (err)
		return -ENOEXEC;
	if (str.type != SHT_STRTAB || !str.data || str.size == 0)
		return -ENOEXEC;
	*strs = str.data;

	sym_cnt = tab.size / sizeof(Elf64_Sym);
	/* Read once: a giant's tables are not left resident behind the walk (names are read
	 * again at lookups, from the page cache).
	 */
	symtab_pages__init(&pages, ef, tab.data, sizeof(Elf64_Sym), str.data, str.size);
	for (size_t i = 1; i < sym_cnt; i++) {
		struct sym_cand c = { 0 };
		unsigned char type;
		const char *name;
		Elf64_Sym sym;

		symtab_pages__at(&pages, i);

		/* tables inside the image need not be aligned */
		memcpy(&sym, (const char *)tab.data + i * sizeof(sym), sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF ||
		    (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_ABS))
			continue;
		if (sym.st_name == 0)
			continue;
		name = symtab_pages__name(&pages, sym.st_name, &len);
		if (!name)
			continue;
		if (len > UINT32_MAX)
			continue; /* a 4 GiB name: nothing to show */

		c.start = sym.st_value;
		c.size = sym.st_size;
		c.name_off = sym.st_name;
		c.name_len = (uint32_t)len;
		c.shndx = sym.st_shndx;
		c.table = (uint8_t)table;
		c.seq = (*seq)++;
		c.bind_rank = bind_rank(ELF64_ST_BIND(sym.st_info));
		err = cand_vec__push(cv, &c);
		if (err)
			return err;
	}
	symtab_pages__end(&pages, sym_cnt);
	return 0;
}

static struct elf_symbols *load(struct elf_file *ef, bool borrow);

struct elf_symbols *elf_symbols__load(struct elf_file *ef)
{
	return load(ef, false);
}

struct elf_symbols *elf_symbols__load_borrowed(struct elf_file *ef)
{
	return load(ef, true);
}

static struct elf_symbols *load(struct elf_file *ef, bool borrow)
{
	struct elf_symbols *syms = NULL;
	struct cand_vec cv = { 0 };
	const char *strs[SYM_TABLE_CNT] = { NULL };
	size_t names_sz = 0, n = 0, off = 0, last_shndx = SIZE_MAX;
	uint64_t last_sec_end = 0;
	uint32_t seq = 0;
	bool corrupt = false;
	int err;

	err = elf_symbols__read_table(ef, ".symtab", SHT_SYMTAB, SYM_TABLE_SYMTAB, &cv, &seq,
				      &strs[SYM_TABLE_SYMTAB]);
	if (err == -ENOMEM)
		goto cleanup;
	corrupt |= err == -ENOEXEC;
	err = elf_symbols__read_table(ef, ".dynsym", SHT_DYNSYM, SYM_TABLE_DYNSYM, &cv, &seq,
				      &strs[SYM_TABLE_DYNSYM]);
	if (err == -ENOMEM)
		goto cleanup;
	corrupt |= err == -ENOEXEC;
	if (cv.cnt == 0) {
		err = corrupt ? -ENOEXEC : -ENOENT;
		goto cleanup;
	}

	qsort(cv.v, cv.cnt, sizeof(*cv.v), cand_cmp);

	/* collapse aliases: keep the first of each address, with the largest size of the group */
	for (size_t i = 0; i < cv.cnt; i++) {
		if (n && cv.v[n - 1].start == cv.v[i].start) {
			if (cv.v[i].size > cv.v[n - 1].size)
				cv.v[n - 1].size = cv.v[i].size;
			continue;
		}
		cv.v[n++] = cv.v[i];
	}

	err = -ENOMEM;
	syms = calloc(1, sizeof(*syms));
	if (!syms)
		goto cleanup;
	syms->sym = calloc(n, sizeof(*syms->sym));
	if (!syms->sym)
		goto cleanup;
	for (size_t i = 0; i < n && !borrow; i++) {
		/* each name lies inside the mapped file, so this sum cannot realistically wrap,
		 * but check anyway
		 */
		if (cv.v[i].name_len + 1 > SIZE_MAX - names_sz)
			goto cleanup;
		names_sz += cv.v[i].name_len + 1;
	}
	if (!borrow) {
		syms->names = malloc(names_sz ? names_sz : 1);
		if (!syms->names)
			goto cleanup;
	}

	for (size_t i = 0; i < n; i++) {
		const struct sym_cand *c = &cv.v[i];
		const char *name = strs[c->table] + c->name_off;
		uint64_t end;

		if (c->size) {
			end = c->start + c->size < c->start ? UINT64_MAX : c->start + c->size;
		} else {
			uint64_t sec_end = 0; /* the end of its section's addresses, 0 if unknown */

			if (c->shndx == SHN_ABS) {
				sec_end = 0;
			} else if (c->shndx == last_shndx) {
				sec_end = last_sec_end;
			} else {
				struct elf_section sec;

				if (!elf_file__section_at(ef, c->shndx, &sec, NULL, NULL) &&
				    sec.addr + sec.size > sec.addr)
					sec_end = sec.addr + sec.size;
				last_shndx = c->shndx;
				last_sec_end = sec_end;
			}
			end = i + 1 < n ? cv.v[i + 1].start : UINT64_MAX;
			if (sec_end > c->start && sec_end < end)
				end = sec_end;
			if (end == UINT64_MAX)
				end = c->start +
				      1; /* last symbol, extent unknown: its address only */
		}
		if (borrow) {
			/* read_table checked the terminating NUL inside the string table */
			syms->sym[i] =
				(struct elf_sym){ .start = c->start, .end = end, .name = name };
			continue;
		}
		syms->sym[i] = (struct elf_sym){ .start = c->start,
						 .end = end,
						 .name = syms->names + off };
		memcpy(syms->names + off, name, c->name_len);
		syms->names[off + c->name_len] = '\0';
		off += c->name_len + 1;
	}
	syms->cnt = n;
	err = 0;

cleanup:
	free(cv.v);
	if (err) {
		elf_symbols__free(syms);
		errno = -err;
		return NULL;
	}
	return syms;
}

void elf_symbols__free(struct elf_symbols *syms)
{
	if (!syms)
		return;
	free(syms->sym);
	free(syms->names);
	free(syms);
}

size_t elf_symbols__cnt(const struct elf_symbols *syms)
{
	return syms->cnt;
}

const char *elf_symbols__lookup(const struct elf_symbols *syms, uint64_t vaddr,
				uint64_t *offset_out)
{
	/* first entry with start > vaddr */
	size_t lo = upper_bound_u64(syms->sym, syms->cnt, sizeof(*syms->sym),
				    offsetof(struct elf_sym, start), vaddr);
	size_t i;

	for (size_t k = 0; k < ELF_SYMBOLS_NEST_MAX && k < lo; k++) {
		i = lo - 1 - k;
		if (vaddr < syms->sym[i].end) {
			if (offset_out)
				*offset_out = vaddr - syms->sym[i].start;
			return syms->sym[i].name;
		}
	}
	return NULL;
}
