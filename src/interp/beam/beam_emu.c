/* The BEAM's emulator flavour: layout and places (beam_emu.h has the layout). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unaligned.h"
#include "formats/elf_file.h"
#include "interp/beam/beam_emu.h"
#include "interp/common/interp_elf.h"
#include "interp/common/proc_memory.h"

#define EMU_CODE_IX_MAX 3     /* ERTS_NUM_CODE_IX */
#define EMU_RANGES_SZ 32      /* struct ranges */
#define EMU_MODULES_MAX 65536 /* modules per code index, at most */
#define EMU_FUNCTIONS_MAX (1u << 20)
#define EMU_HDR_LINE_TABLE 0x48
#define EMU_HDR_FUNCTIONS 0x58
#define EMU_CI_MFA 0x10
#define EMU_LT_FUNC_TAB 0x18
#define EMU_ATOM_SEG_TABLE 0x78
#define EMU_ATOM_PAGE_SHIFT 10
#define EMU_ATOM_LEN 0x18
#define EMU_ATOM_NAME 0x20
#define EMU_ATOM_MAX (1u << 26) /* atom indexes above: refused (the default limit is 1 M) */
#define EMU_SEARCH_STEPS 40     /* a binary search's reads, at most */
#define EMU_SCAN_BYTES 32       /* find_range's first bytes, searched for its two loads */

/* The target of the first `call rel32` in the first 64 bytes at vaddr (0: none). */
static uint64_t first_call(struct elf_file *ef, uint64_t vaddr)
{
	const uint8_t *t = interp_elf__bytes(ef, vaddr, 64);
	size_t i;

	if (!t)
		return 0;
	for (i = 0; i + 5 <= 64; i++)
		if (t[i] == 0xe8)
			return vaddr + i + 5 + (uint64_t)(int64_t)(int32_t)load_u32(t + i + 1);
	return 0;
}

/* In find_range's first bytes at vaddr: a 32-bit load of code_ix (`mov disp(%rip), %r32`) and
 * then the first `lea disp(%rip), %r64`, whose address it returns (0: not this shape).
 */
static uint64_t ranges_lea(struct elf_file *ef, uint64_t vaddr, uint64_t code_ix)
{
	const uint8_t *t = interp_elf__bytes(ef, vaddr, EMU_SCAN_BYTES + 7);
	bool loads_ix = false;
	size_t i, op;

	if (!t)
		return 0;
	for (i = 0; i < EMU_SCAN_BYTES; i++) {
		op = (t[i] & 0xf0) == 0x40 ? i + 1 : i; /* an optional REX prefix */
		if ((t[op + 1] & 0xc7) != 0x05)
			continue; /* not rip-relative */
		if (t[op] == 0x8b && op + 6 <= EMU_SCAN_BYTES + 6 &&
		    op + 6 + (uint64_t)(int64_t)(int32_t)load_u32(t + op + 2) + vaddr == code_ix) {
			loads_ix = true;
			i = op + 5;
			continue;
		}
		if (t[op] == 0x8d && op == i + 1 && (t[i] & 0x08) && loads_ix)
			return vaddr + op + 6 + (uint64_t)(int64_t)(int32_t)load_u32(t + op + 2);
	}
	return 0;
}

static bool in_section(struct elf_file *ef, const char *name, uint64_t addr, uint64_t size)
{
	struct elf_section s;

	return !elf_file__section(ef, name, &s) && addr >= s.addr && addr - s.addr <= s.size &&
	       size <= s.size - (addr - s.addr);
}

int beam_emu__layout(struct elf_file *ef, const struct elf_section *text,
		     const struct interp_sym *lookup_fn, const struct interp_sym *code_ix,
		     const struct interp_sym *atom_table, const struct interp_sym *apply,
		     struct beam_emu_layout *out)
{
	uint64_t find_range, r;

	if (!lookup_fn->found || !code_ix->found || !atom_table->found || !apply->found ||
	    apply->size < 16 || atom_table->size < EMU_ATOM_SEG_TABLE + 8)
		return -ENOENT;
	find_range = first_call(ef, lookup_fn->addr);
	if (!find_range || find_range < text->addr || find_range - text->addr >= text->size)
		return -ENOENT;
	r = ranges_lea(ef, find_range, code_ix->addr);
	if (!r || !(in_section(ef, ".bss", r, EMU_CODE_IX_MAX * EMU_RANGES_SZ) ||
		    in_section(ef, ".data", r, EMU_CODE_IX_MAX * EMU_RANGES_SZ)))
		return -ENOENT;
	*out = (struct beam_emu_layout){
		.ranges = r,
		.code_ix = code_ix->addr,
		.atom_table = atom_table->addr,
		.first_cp = apply->addr + 8,
	};
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct beam_emu_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int beam_emu__table(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t head[3])
{
	uint32_t ix;

	if (interp__read_mem(reader, l->code_ix + bias, &ix, sizeof(ix)) || ix >= EMU_CODE_IX_MAX ||
	    interp__read_mem(reader, l->ranges + bias + (uint64_t)ix * EMU_RANGES_SZ, head + 1,
			     2 * sizeof(*head)))
		return -EIO;
	head[0] = ix;
	if (!head[1] || !head[2] || head[2] > EMU_MODULES_MAX)
		return -ENOENT;
	return 0;
}

int beam_emu__ranges(pid_t reader, const struct beam_emu_layout *l, uint64_t bias,
		     struct beam_emu_range **out, size_t *n)
{
	struct beam_emu_range *m;
	uint64_t head[3];
	size_t i, k = 0;
	int err;

	err = beam_emu__table(reader, l, bias, head);
	if (err)
		return err;
	m = malloc((size_t)head[2] * sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (interp__read_mem(reader, head[1], m, (size_t)head[2] * sizeof(*m))) {
		free(m);
		return -EIO;
	}
	for (i = 0; i < head[2]; i++)
		if (m[i].start && m[i].start < m[i].end)
			m[k++] = m[i];
	qsort(m, k, sizeof(*m), range_cmp);
	*out = m;
	*n = k;
	return 0;
}

/* The index of the last of the n sorted addresses at arr that is <= pc, reading two at a time
 * (each entry's end is the next one): -1 when pc is before the first or past the last's end.
 */
static long search(pid_t reader, uint64_t arr, uint64_t n, uint64_t pc)
{
	uint64_t lo = 0, hi = n, mid, pair[2];
	int steps;

	for (steps = 0; lo < hi && steps < EMU_SEARCH_STEPS; steps++) {
		mid = lo + (hi - lo) / 2;
		if (interp__read_mem(reader, arr + 8 * mid, pair, sizeof(pair)))
			return -1;
		if (pc < pair[0])
			hi = mid;
		else if (pc < pair[1])
			return (long)mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* The text of the atom term a into buf[cap] (NUL-terminated): 0 or -errno. */
static int atom_text(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t a,
		     char *buf, size_t cap)
{
	uint64_t idx = a >> 6, seg, atom, name;
	int16_t len;

	if ((a & 0x3f) != 0x0b || idx >= EMU_ATOM_MAX ||
	    interp__read_u64(reader, l->atom_table + bias + EMU_ATOM_SEG_TABLE, &seg) ||
	    interp__read_u64(reader, seg + 8 * (idx >> EMU_ATOM_PAGE_SHIFT), &seg) ||
	    interp__read_u64(reader, seg + 8 * (idx & ((1u << EMU_ATOM_PAGE_SHIFT) - 1)), &atom) ||
	    interp__read_mem(reader, atom + EMU_ATOM_LEN, &len, sizeof(len)) ||
	    interp__read_u64(reader, atom + EMU_ATOM_NAME, &name))
		return -EIO;
	if (len < 0 || (size_t)len >= cap)
		return -ERANGE;
	if (interp__read_mem(reader, name, buf, (size_t)len))
		return -EIO;
	buf[len] = '\0';
	return 0;
}

/* The location of pc in function idx of the line table lt: file and line into out. */
static void line_of(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t lt,
		    uint64_t idx, uint64_t pc, const char *module, struct beam_emu_place *out)
{
	uint64_t head[3], tab[2], first, file, fname;
	uint32_t loc = 0;
	uint16_t loc2;
	long at;

	if (interp__read_mem(reader, lt, head, sizeof(head)) ||
	    interp__read_mem(reader, lt + EMU_LT_FUNC_TAB + 8 * idx, tab, sizeof(tab)) ||
	    interp__read_u64(reader, lt + EMU_LT_FUNC_TAB, &first) || tab[1] < tab[0] ||
	    tab[0] < first || (tab[1] - tab[0]) / 8 > EMU_FUNCTIONS_MAX)
		return;
	/* the last line instruction at or before pc (the table ends with the next function's) */
	at = search(reader, tab[0], (tab[1] - tab[0]) / 8, pc);
	if (at < 0)
		return;
	at += (long)((tab[0] - first) / 8);
	if ((uint32_t)head[1] == 2) {
		if (interp__read_mem(reader, head[2] + 2 * (uint64_t)at, &loc2, sizeof(loc2)))
			return;
		loc = loc2;
	} else if ((uint32_t)head[1] == 4) {
		if (interp__read_mem(reader, head[2] + 4 * (uint64_t)at, &loc, sizeof(loc)))
			return;
	}
	if (!loc)
		return;
	file = loc >> 24;
	if (!file)
		snprintf(out->file, sizeof(out->file), "%s.erl", module);
	else if (interp__read_u64(reader, head[0] + 8 * (file - 1), &fname) ||
		 atom_text(reader, l, bias, fname, out->file, sizeof(out->file)))
		return;
	out->line = (int)(loc & 0xffffff);
}

int beam_emu__place(pid_t reader, const struct beam_emu_layout *l, uint64_t bias, uint64_t hdr,
		    uint64_t pc, struct beam_emu_place *out, const char **why)
{
	char module[48], function[64]; /* with ":", "/" and 10 digits: below the name's 128 */
	uint64_t nfun, ci, mfa[3], lt;
	long idx;

	out->file[0] = '\0';
	out->line = 0;
	*why = "module unreadable";
	if (interp__read_u64(reader, hdr, &nfun) || !nfun || nfun > EMU_FUNCTIONS_MAX)
		return -EIO;
	/* functions[] holds num + 1 entries: the last one ends the last function */
	idx = search(reader, hdr + EMU_HDR_FUNCTIONS, nfun, pc);
	if (idx < 0) {
		*why = "code in no function";
		return -ENOENT;
	}
	if (interp__read_u64(reader, hdr + EMU_HDR_FUNCTIONS + 8 * (uint64_t)idx, &ci) ||
	    interp__read_mem(reader, ci + EMU_CI_MFA, mfa, sizeof(mfa)) || mfa[2] > 255 ||
	    atom_text(reader, l, bias, mfa[0], module, sizeof(module)) ||
	    atom_text(reader, l, bias, mfa[1], function, sizeof(function)))
		return -EIO;
	snprintf(out->function, sizeof(out->function), "%s:%s/%u", module, function,
		 (unsigned)mfa[2]);
	if (!interp__read_u64(reader, hdr + EMU_HDR_LINE_TABLE, &lt) && lt)
		line_of(reader, l, bias, lt, (uint64_t)idx, pc, module, out);
	return 0;
}
