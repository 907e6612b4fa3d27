/* Reader of DWARF call-frame information sections: `.eh_frame` (GCC/LSB format) and
 * `.debug_frame` (DWARF 2-5 format), plus the `.eh_frame_hdr` header that locates `.eh_frame`
 * when a file has no section headers.
 *
 * Input is untrusted bytes: every read is bounded by the section and by the entry's own
 * length; nothing is ever read outside [data, data + size). A malformed CIE or FDE is skipped
 * and counted in struct eh_frame_stats; only a malformed entry *length* ends the walk (there
 * is no way to find the next entry). Nothing here allocates except the CIE cache, which is
 * capped (EH_FRAME_CIE_CAP entries) and owned by the walk.
 *
 * Invariants of what is handed out: an FDE has pc_begin < pc_end, its instruction bytes lie
 * inside the section, and its CIE was parsed successfully (version 1, 3 or 4; known
 * augmentation or 'z'-sized augmentation data; code_align != 0).
 */
#ifndef STACKSCOPE_EH_FRAME_H
#define STACKSCOPE_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DW_EH_PE_* pointer encodings (LSB 10.5.1; GCC unwind-pe.h values). */
enum dw_eh_pe {
	DW_EH_PE_absptr = 0x00,
	DW_EH_PE_uleb128 = 0x01,
	DW_EH_PE_udata2 = 0x02,
	DW_EH_PE_udata4 = 0x03,
	DW_EH_PE_udata8 = 0x04,
	DW_EH_PE_sleb128 = 0x09,
	DW_EH_PE_sdata2 = 0x0a,
	DW_EH_PE_sdata4 = 0x0b,
	DW_EH_PE_sdata8 = 0x0c,
	DW_EH_PE_pcrel = 0x10,
	DW_EH_PE_textrel = 0x20,
	DW_EH_PE_datarel = 0x30,
	DW_EH_PE_funcrel = 0x40,
	DW_EH_PE_aligned = 0x50,
	DW_EH_PE_indirect = 0x80,
	DW_EH_PE_omit = 0xff,
};

enum cfi_section_kind {
	CFI_SECTION_EH_FRAME = 0,
	CFI_SECTION_DEBUG_FRAME = 1,
};

/* One CFI section as bytes plus the addresses that relative pointer encodings need. */
struct cfi_section {
	const void *data;
	size_t size;
	uint64_t vaddr;      /* ELF vaddr of data[0] (base of DW_EH_PE_pcrel) */
	uint64_t text_vaddr; /* base of DW_EH_PE_textrel; 0 when unknown */
	uint64_t data_vaddr; /* base of DW_EH_PE_datarel; 0 when unknown */
	enum cfi_section_kind kind;
	bool stop_at_terminator; /* a zero length ends the walk (size is only an upper bound) */
};

/* A parsed Common Information Entry. `insns` points into the section. */
struct cfi_cie {
	uint64_t offset; /* of the entry in its section */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	const uint8_t *insns; /* initial instructions */
	size_t insns_sz;
	uint8_t version;
	uint8_t fde_enc;   /* DW_EH_PE_* of FDE addresses */
	uint8_t lsda_enc;  /* DW_EH_PE_* of the FDE's LSDA pointer, or DW_EH_PE_omit */
	uint8_t addr_size; /* bytes of an absptr / DW_CFA_set_loc operand */
	bool has_aug_data; /* 'z': FDEs carry an augmentation-data length */
	bool signal_frame; /* 'S': the FDEs describe signal trampolines */
};

/* A parsed Frame Description Entry. `insns` points into the section. */
struct cfi_fde {
	uint64_t offset; /* of the entry in its section */
	uint64_t pc_begin, pc_end;
	const uint8_t *insns;
	size_t insns_sz;
	const struct cfi_cie *cie; /* borrowed from the walk: valid during the callback only */
};

struct eh_frame_stats {
	size_t cie_cnt;        /* CIEs parsed */
	size_t fde_cnt;        /* FDEs handed to the callback */
	size_t bad_cie_cnt;    /* CIEs that could not be parsed (their FDEs count as bad too) */
	size_t bad_fde_cnt;    /* FDEs skipped: bad CIE pointer, truncated, bad encoding... */
	size_t empty_fde_cnt;  /* FDEs with pc_begin == 0 or an empty range (dropped, not bad) */
	size_t terminator_cnt; /* zero-length entries met */
	bool truncated;        /* the walk ended on a length running past the section */
};

/* Called once per valid FDE in section order. A nonzero return stops the walk and is
 * returned by eh_frame__walk().
 */
typedef int (*eh_frame_fde_fn)(void *ctx, const struct cfi_fde *fde);

/* Walk every entry of a CFI section; FDEs go to fn. Returns 0 when the section was walked
 * (corrupt entries are counted in *stats, which is added to, not cleared), fn's nonzero
 * result, -EINVAL for a NULL/empty section or -ENOMEM.
 */
int eh_frame__walk(const struct cfi_section *sec, eh_frame_fde_fn fn, void *ctx,
		   struct eh_frame_stats *stats);

/* Decode one pointer with encoding `enc` at *pos (advanced past it) bounded by end.
 * `pos_vaddr` is the vaddr of *pos (for pcrel), func_base the FDE start (for funcrel).
 * Indirect pointers are decoded to the address of the pointer and -EOPNOTSUPP is returned
 * (they cannot be followed without process memory); DW_EH_PE_omit gives -ENOENT; other
 * errors -EINVAL. An unsupported or unknown encoding never advances past end.
 */
int eh_frame__read_pointer(const uint8_t **pos, const uint8_t *end, uint8_t enc, uint64_t pos_vaddr,
			   const struct cfi_section *sec, uint64_t func_base, uint8_t addr_size,
			   uint64_t *out);

/* Parse an .eh_frame_hdr (version 1) located at vaddr: the vaddr of .eh_frame and the number
 * of entries in its binary-search table. 0, -EINVAL (corrupt) or -EOPNOTSUPP (encoding).
 */
int eh_frame_hdr__parse(const void *data, size_t size, uint64_t vaddr, uint64_t *eh_frame_vaddr,
			uint64_t *table_cnt);

/* LEB128 helpers shared with the CFI interpreter; 0 or -EINVAL (truncated/overlong). */
int dwarf__uleb(const uint8_t **pos, const uint8_t *end, uint64_t *out);
int dwarf__sleb(const uint8_t **pos, const uint8_t *end, int64_t *out);

#endif
