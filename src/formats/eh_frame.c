/* CIE/FDE walker for .eh_frame and .debug_frame; see eh_frame.h for the contract.
 *
 * Layout facts used here (DWARF 5 section 6.4.1, LSB 5.0 "Exception Frames"):
 * - every entry starts with an initial length: 32-bit, or 0xffffffff then 64-bit
 *   (64-bit DWARF, whose CIE id / CIE pointer is then 8 bytes wide too);
 * - .eh_frame: CIE id 0, an FDE's CIE pointer is the distance back from the pointer field;
 *   a zero length is a terminator;
 * - .debug_frame: CIE id all ones, an FDE's CIE pointer is an offset in the section, CIE
 *   version 4 adds address and segment-selector sizes, addresses are target-size absptr.
 *
 * CIEs are cached in a fixed-size direct-mapped table keyed by section offset; a miss parses
 * the CIE again, so memory stays bounded whatever the section holds.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "formats/eh_frame.h"

#define EH_FRAME_CIE_CAP 256 /* power of two */

struct cie_slot {
	bool used;
	bool bad;
	struct cfi_cie cie;
};

struct eh_frame_walk {
	const struct cfi_section *sec;
	const uint8_t *base;
	const uint8_t *end;
	struct cie_slot *cies; /* EH_FRAME_CIE_CAP entries */
};

static uint64_t rd_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The groups of a LEB128 at *pos (no length limit: DWARF pads with 0x80 bytes): the low 64 bits
 * in *v, the bits read in *shift, the last byte in *last; *dropped when a group past bit 63
 * held a set bit. 0 and *pos past it, or -EINVAL (it runs past end) with *pos unchanged.
 */
static int leb128_read(const uint8_t **pos, const uint8_t *end, uint64_t *v, unsigned int *shift,
		       uint8_t *last, bool *dropped)
{
	const uint8_t *p = *pos;
	uint8_t b;

	*v = 0;
	*shift = 0;
	*dropped = false;
	do {
		if (p >= end)
			return -EINVAL;
		b = *p++;
		if (*shift < 64)
			*v |= (uint64_t)(b & 0x7f) << *shift;
		else if (b & 0x7f)
			*dropped = true;
		*shift += 7;
	} while (b & 0x80);
	*pos = p;
	*last = b;
	return 0;
}

int dwarf__uleb(const uint8_t **pos, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pos;
	unsigned int shift;
	bool dropped;
	uint64_t v;
	uint8_t b;

	if (leb128_read(&p, end, &v, &shift, &b, &dropped) || dropped)
		return -EINVAL; /* truncated, or does not fit 64 bits */
	*pos = p;
	*out = v;
	return 0;
}

int dwarf__sleb(const uint8_t **pos, const uint8_t *end, int64_t *out)
{
	unsigned int shift;
	bool dropped; /* the sign's repeats past bit 63 */
	uint64_t v;
	uint8_t b;

	if (leb128_read(pos, end, &v, &shift, &b, &dropped))
		return -EINVAL;
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*out = (int64_t)v;
	return 0;
}

int eh_frame__read_pointer(const uint8_t **pos, const uint8_t *end, uint8_t enc, uint64_t pos_vaddr,
			   const struct cfi_section *sec, uint64_t func_base, uint8_t addr_size,
			   uint64_t *out)
{
	const uint8_t *p = *pos;
	uint64_t v = 0, base = 0;
	unsigned int n = 0;
	int64_t s;
	int err = 0;

	if (enc == DW_EH_PE_omit)
		return -ENOENT;
	if ((enc & 0x70) == DW_EH_PE_aligned) {
		uint64_t mis;

		/* Aligned absptr: skip to the next multiple of the address size (in vaddr terms). */
		if (addr_size != 4 && addr_size != 8)
			return -EINVAL;
		mis = pos_vaddr & (addr_size - 1);
		if (mis) {
			if ((size_t)(end - p) < addr_size - mis)
				return -EINVAL;
			p += addr_size - mis;
			pos_vaddr += addr_size - mis;
		}
		if ((size_t)(end - p) < addr_size)
			return -EINVAL;
		v = rd_le(p, addr_size);
		p += addr_size;
		goto apply;
	}

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		if (addr_size != 4 && addr_size != 8)
			return -EINVAL;
		n = addr_size;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_uleb128:
		if (dwarf__uleb(&p, end, &v))
			return -EINVAL;
		break;
	case DW_EH_PE_sleb128:
		if (dwarf__sleb(&p, end, &s))
			return -EINVAL;
		v = (uint64_t)s;
		break;
	default:
		return -EINVAL;
	}
	if (n) {
		if ((size_t)(end - p) < n)
			return -EINVAL;
		v = rd_le(p, n);
		p += n;
		/* Sign-extend the signed formats narrower than 64 bits. */
		if ((enc & 0x08) && n < 8 && (v >> (8 * n - 1)) & 1)
			v |= ~(uint64_t)0 << (8 * n);
	}

apply:
	switch (enc & 0x70) {
	case 0:
	case DW_EH_PE_aligned:
		break;
	case DW_EH_PE_pcrel:
		base = pos_vaddr;
		break;
	case DW_EH_PE_textrel:
		base = sec ? sec->text_vaddr : 0;
		if (!base)
			err = -EOPNOTSUPP;
		break;
	case DW_EH_PE_datarel:
		base = sec ? sec->data_vaddr : 0;
		if (!base)
			err = -EOPNOTSUPP;
		break;
	case DW_EH_PE_funcrel:
		base = func_base;
		break;
	default:
		return -EINVAL;
	}
	v += base; /* modular, as the encoding defines */
	if (addr_size == 4)
		v &= 0xffffffffu;
	if (enc & DW_EH_PE_indirect)
		err = -EOPNOTSUPP;
	*pos = p;
	*out = v;
	return err;
}

static inline uint64_t vaddr_of(const struct eh_frame_walk *w, const uint8_t *p)
{
	return w->sec->vaddr + (uint64_t)(p - w->base);
}

/* Read an entry header at off: its total end and where the id/pointer field starts.
 * 0 on success, 1 on a terminator, -EINVAL when the length cannot be trusted.
 */
static int read_entry_header(const struct eh_frame_walk *w, size_t off, size_t *id_off,
			     unsigned int *id_sz, size_t *entry_end)
{
	size_t left = (size_t)(w->end - w->base) - off;
	uint64_t len;
	size_t hdr;

	if (left < 4)
		return -EINVAL;
	len = rd_le(w->base + off, 4);
	if (len == 0)
		return 1;
	if (len == 0xffffffffu) {
		if (left < 12)
			return -EINVAL;
		len = rd_le(w->base + off + 4, 8);
		hdr = 12;
		*id_sz = 8;
	} else if (len >= 0xfffffff0u) {
		return -EINVAL; /* reserved initial-length values */
	} else {
		hdr = 4;
		*id_sz = 4;
	}
	if (len > left - hdr || len < *id_sz)
		return -EINVAL;
	*id_off = off + hdr;
	*entry_end = off + hdr + (size_t)len;
	return 0;
}

static bool is_cie_id(const struct eh_frame_walk *w, uint64_t id, unsigned int id_sz)
{
	if (w->sec->kind == CFI_SECTION_EH_FRAME)
		return id == 0;
	return id_sz == 4 ? id == 0xffffffffu : id == ~(uint64_t)0;
}

/* Parse the CIE body between p (just after the CIE id) and end. */
static int parse_cie(const struct eh_frame_walk *w, uint64_t offset, const uint8_t *p,
		     const uint8_t *end, struct cfi_cie *cie)
{
	const uint8_t *aug, *aug_end = NULL, *q;
	uint64_t u;
	size_t aug_len;

	memset(cie, 0, sizeof(*cie));
	cie->offset = offset;
	cie->lsda_enc = DW_EH_PE_omit;
	cie->fde_enc = DW_EH_PE_absptr;
	cie->addr_size = 8;
	if (p >= end)
		return -EINVAL;
	cie->version = *p++;
	if (cie->version != 1 && cie->version != 3 && cie->version != 4)
		return -EINVAL;
	aug = p;
	q = memchr(p, 0, (size_t)(end - p));
	if (!q)
		return -EINVAL;
	aug_len = (size_t)(q - aug);
	p = q + 1;
	if (cie->version >= 4) {
		if (end - p < 2)
			return -EINVAL;
		cie->addr_size = p[0];
		if (p[1] != 0 || (cie->addr_size != 4 && cie->addr_size != 8))
			return -EINVAL; /* segment selectors are not a thing on our targets */
		p += 2;
	}
	if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') {
		/* Ancient GCC "eh": an address-sized pointer to EH data follows the string. */
		if ((size_t)(end - p) < cie->addr_size)
			return -EINVAL;
		p += cie->addr_size;
	}
	if (dwarf__uleb(&p, end, &cie->code_align) || cie->code_align == 0)
		return -EINVAL;
	if (dwarf__sleb(&p, end, &cie->data_align))
		return -EINVAL;
	if (cie->version == 1) {
		if (p >= end)
			return -EINVAL;
		cie->ra_reg = *p++;
	} else if (dwarf__uleb(&p, end, &cie->ra_reg)) {
		return -EINVAL;
	}

	if (aug_len && aug[0] == 'z') {
		size_t i;

		if (dwarf__uleb(&p, end, &u) || u > (uint64_t)(end - p))
			return -EINVAL;
		aug_end = p + u;
		cie->has_aug_data = true;
		for (i = 1; i < aug_len; i++) {
			uint64_t ignored;
			uint8_t enc;
			int err;

			switch (aug[i]) {
			case 'L':
				if (p >= aug_end)
					return -EINVAL;
				cie->lsda_enc = *p++;
				break;
			case 'R':
				if (p >= aug_end)
					return -EINVAL;
				cie->fde_enc = *p++;
				break;
			case 'P':
				if (p >= aug_end)
					return -EINVAL;
				enc = *p++;
				/* The personality routine is usually indirect: skip it, don't follow. */
				err = eh_frame__read_pointer(&p, aug_end, enc, vaddr_of(w, p),
							     w->sec, 0, cie->addr_size, &ignored);
				if (err && err != -EOPNOTSUPP)
					return -EINVAL;
				break;
			case 'S':
				cie->signal_frame = true;
				break;
			case 'B': /* AArch64 BTI */
			case 'G': /* AArch64 MTE */
				break;
			default:
				/* Unknown letter: its data is covered by the 'z' length. */
				i = aug_len;
				break;
			}
		}
		p = aug_end;
	} else {
		size_t i;

		for (i = 0; i < aug_len; i++) {
			if (i == 0 && aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') {
				i++;
				continue;
			}
			if (aug[i] == 'S') {
				cie->signal_frame = true;
				continue;
			}
			return -EINVAL; /* unknown augmentation without a size: cannot go on */
		}
	}
	cie->insns = p;
	cie->insns_sz = (size_t)(end - p);
	return 0;
}

/* Find (or parse) the CIE at section offset cie_off. NULL if it is missing or bad. */
static const struct cfi_cie *get_cie(struct eh_frame_walk *w, uint64_t cie_off)
{
	struct cie_slot *slot;
	size_t id_off, entry_end;
	unsigned int id_sz;
	uint64_t id;
	size_t sec_sz = (size_t)(w->end - w->base);

	slot = &w->cies[(cie_off ^ (cie_off >> 8)) & (EH_FRAME_CIE_CAP - 1)];
	if (slot->used && slot->cie.offset == cie_off)
		return slot->bad ? NULL : &slot->cie;
	if (cie_off >= sec_sz)
		return NULL;
	slot->used = true;
	slot->bad = true;
	slot->cie.offset = cie_off;
	if (read_entry_header(w, (size_t)cie_off, &id_off, &id_sz, &entry_end) != 0)
		return NULL;
	id = rd_le(w->base + id_off, id_sz);
	if (!is_cie_id(w, id, id_sz))
		return NULL;
	if (parse_cie(w, cie_off, w->base + id_off + id_sz, w->base + entry_end, &slot->cie))
		return NULL;
	slot->bad = false;
	return &slot->cie;
}

static int parse_fde(struct eh_frame_walk *w, const struct cfi_cie *cie, uint64_t offset,
		     const uint8_t *p, const uint8_t *end, struct cfi_fde *fde)
{
	uint64_t range;
	uint8_t enc = cie->fde_enc;

	if (w->sec->kind == CFI_SECTION_DEBUG_FRAME && !cie->has_aug_data)
		enc = DW_EH_PE_absptr;
	if (eh_frame__read_pointer(&p, end, enc, vaddr_of(w, p), w->sec, 0, cie->addr_size,
				   &fde->pc_begin))
		return -EINVAL;
	/* The range has the pointer's format but no base. */
	if (eh_frame__read_pointer(&p, end, enc & 0x0f, vaddr_of(w, p), w->sec, 0, cie->addr_size,
				   &range))
		return -EINVAL;
	if (cie->has_aug_data) {
		uint64_t len;

		if (dwarf__uleb(&p, end, &len) || len > (uint64_t)(end - p))
			return -EINVAL;
		p += len;
	}
	fde->offset = offset;
	fde->pc_end = fde->pc_begin + range;
	fde->insns = p;
	fde->insns_sz = (size_t)(end - p);
	fde->cie = cie;
	if (fde->pc_end < fde->pc_begin)
		return -EINVAL;
	return 0;
}

int eh_frame__walk(const struct cfi_section *sec, eh_frame_fde_fn fn, void *ctx,
		   struct eh_frame_stats *stats)
{
	struct eh_frame_walk w = { 0 };
	size_t off = 0, sec_sz;
	int err = 0;

	if (!sec || !sec->data || !sec->size || !stats)
		return -EINVAL;
	w.sec = sec;
	w.base = sec->data;
	w.end = w.base + sec->size;
	sec_sz = sec->size;
	w.cies = calloc(EH_FRAME_CIE_CAP, sizeof(*w.cies));
	if (!w.cies)
		return -ENOMEM;

	while (off < sec_sz) {
		size_t id_off, entry_end;
		unsigned int id_sz;
		const uint8_t *body;
		const struct cfi_cie *cie;
		struct cfi_fde fde;
		uint64_t id, cie_off;
		int r;

		r = read_entry_header(&w, off, &id_off, &id_sz, &entry_end);
		if (r == 1) {
			stats->terminator_cnt++;
			if (sec->stop_at_terminator)
				break;
			off += 4;
			continue;
		}
		if (r < 0) {
			/* Trailing padding shorter than a header is not corruption. */
			if (sec_sz - off >= 4)
				stats->truncated = true;
			break;
		}
		id = rd_le(w.base + id_off, id_sz);
		body = w.base + id_off + id_sz;
		if (is_cie_id(&w, id, id_sz)) {
			if (!get_cie(&w, off))
				stats->bad_cie_cnt++;
			else
				stats->cie_cnt++;
			off = entry_end;
			continue;
		}
		if (sec->kind == CFI_SECTION_EH_FRAME) {
			if (id > id_off) {
				stats->bad_fde_cnt++;
				off = entry_end;
				continue;
			}
			cie_off = id_off - id;
		} else {
			cie_off = id;
		}
		cie = get_cie(&w, cie_off);
		if (!cie || parse_fde(&w, cie, off, body, w.base + entry_end, &fde)) {
			stats->bad_fde_cnt++;
			off = entry_end;
			continue;
		}
		off = entry_end;
		if (fde.pc_begin == 0 || fde.pc_begin == fde.pc_end) {
			/* Discarded functions (GC'd sections, COMDAT) keep FDEs at address 0. */
			stats->empty_fde_cnt++;
			continue;
		}
		stats->fde_cnt++;
		err = fn(ctx, &fde);
		if (err)
			break;
	}
	free(w.cies);
	return err;
}

int eh_frame_hdr__parse(const void *data, size_t size, uint64_t vaddr, uint64_t *eh_frame_vaddr,
			uint64_t *table_cnt)
{
	struct cfi_section sec = { .data = data, .size = size, .vaddr = vaddr, .data_vaddr = vaddr };
	const uint8_t *base = data, *p, *end;
	uint8_t ptr_enc, cnt_enc;
	int err;

	if (!data || size < 4 || base[0] != 1)
		return -EINVAL;
	ptr_enc = base[1];
	cnt_enc = base[2];
	p = base + 4;
	end = base + size;
	err = eh_frame__read_pointer(&p, end, ptr_enc, vaddr + 4, &sec, 0, 8, eh_frame_vaddr);
	if (err)
		return err == -EOPNOTSUPP ? err : -EINVAL;
	*table_cnt = 0;
	if (cnt_enc != DW_EH_PE_omit) {
		err = eh_frame__read_pointer(&p, end, cnt_enc, vaddr + (uint64_t)(p - base), &sec,
					     0, 8, table_cnt);
		if (err)
			return err == -EOPNOTSUPP ? err : -EINVAL;
	}
	return 0;
}
