/* Go pclntab reader; see gopclntab.h.
 *
 * Layout, Go 1.18+ (offsets of the pcHeader are from the start of the table):
 *   pcHeader: magic u32, pad u8 x2, minLC u8, ptrSize u8, nfunc, nfiles, textStart,
 *             funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset (8 bytes each)
 *   funcnametab: NUL-terminated names; cutab: u32 file offsets per compile unit;
 *   filetab: NUL-terminated paths; pctab: pc-value tables (zigzag value delta, pc delta in
 *   units of minLC, both varints, ending with a zero value delta);
 *   pclntab: functab (nfunc + 1 pairs of u32 entry offset from textStart, u32 `_func` offset
 *   from the pclntab region; the last entry's pc is the end of text), then the `_func`s.
 *   _func: entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset
 *   (u32/i32 each), [startLine i32: 1.20+], funcID u8, flag u8, pad u8, nfuncdata u8, then
 *   npcdata u32 pctab offsets and nfuncdata u32 gofunc offsets (~0: none).
 *   inlinedCall 1.18: parent i16, funcID u8, pad, file i32, line i32, nameOff i32,
 *   parentPc i32 (20 bytes); 1.20+: funcID u8, pad x3, nameOff i32, parentPc i32,
 *   startLine i32 (16 bytes).
 * Layout, Go 1.16 and 1.17 (magic 0xfffffffa): the regions of 1.18 with a header of 64 bytes
 * (no textStart: funcnameOffset at 24), and the function table and `_func` of 1.2 inside the
 * pclntab region: nfunc pairs of u64 entry pc (absolute), u64 `_func` offset from that region,
 *   then the end of text u64; _func: entry u64, nameOff, args, deferreturn, pcsp, pcfile, pcln,
 *   npcdata, cuOffset (u32/i32 each), funcID u8, [1.17: flag u8; 1.16: pad], pad u8,
 *   nfuncdata u8 (44 bytes), npcdata u32 offsets, padding to 8, nfuncdata u64 addresses;
 *   files through cutab as in 1.18; the inline tree (FUNCDATA 3) an address in .rodata,
 *   entries of 20 bytes as in 1.18. Which of the two wrote it: 1.16's pad byte is 0 in every
 *   function, 1.17 flags goexit, mstart, rt0_go and the stack switches.
 * Layout, Go 1.2 to 1.15 ("go1.2", magic 0xfffffffb; every offset is from the table's start,
 * which holds the names, the pc-value tables and the file names among the `_func`s):
 *   header: magic u32, pad u8 x2, minLC u8, ptrSize u8, nfunc u64;
 *   functab: nfunc pairs of u64 entry pc (absolute), u64 `_func` offset (~0: a hole between
 *   text sections), then the end of text u64, then the filetab offset u32;
 *   filetab: u32 count, then count - 1 u32 offsets of the paths (file numbers start at 1);
 *   _func (8-aligned): entry u64, nameoff, args, deferreturn, pcsp, pcfile, pcln, npcdata
 *   (i32 each), funcID u8, pad u8 x2, nfuncdata u8 (40 bytes), then npcdata u32 offsets,
 *   padding to 8, nfuncdata u64 addresses (0: none);
 *   inlinedCall (Go 1.12+): the 20 bytes of 1.18, nameoff from the table's start, the tree
 *   at the address of funcdata 4 (FUNCDATA_InlTree of 1.12-1.15), indexed by pcdata 2.
 *   No funcFlag byte: TOPFRAME and SPWRITE are derived from 1.15's funcIDs and names.
 * The facts come from the Go runtime and linker (runtime/symtab.go, runtime2.go,
 * cmd/link/internal/ld/pcln.go) of the versions named; the code is written here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/unaligned.h"
#include "formats/elf_file.h"
#include "formats/gopclntab.h"
#include "formats/varint.h"

#define GO_MAGIC_12 0xfffffffbu
#define GO_MAGIC_116 0xfffffffau
#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u
#define GO_HEADER_SZ 72
#define GO116_HEADER_SZ 64
#define GO12_HEADER_SZ 16 /* magic, pad, minLC, ptrSize, nfunc */
#define GO_MAX_FUNCS (1u << 24)
#define GO_PCDATA_INLTREEINDEX 2
#define GO_FUNCDATA_INLTREE 3   /* Go 1.16 and later */
#define GO12_FUNCDATA_INLTREE 4 /* Go 1.12 to 1.15 (before them, no such funcdata) */
#define GO_INL_ENTRY_SZ_118 20  /* also 1.12 to 1.17 */
#define GO_INL_ENTRY_SZ_120 16

/* Go 1.15's funcIDs (runtime/symtab.go) that stand for the funcFlags of 1.17+. */
enum go12_func_id {
	GO12_FUNCID_GOEXIT = 2,
	GO12_FUNCID_JMPDEFER = 3,
	GO12_FUNCID_MCALL = 4,
	GO12_FUNCID_MORESTACK = 5,
	GO12_FUNCID_MSTART = 6,
	GO12_FUNCID_RT0_GO = 7,
	GO12_FUNCID_ASMCGOCALL = 8,
	GO12_FUNCID_SYSTEMSTACK = 13,
	GO12_FUNCID_GOGO = 15,
};

/* One region of the table. */
struct region {
	const uint8_t *p;
	size_t sz;
};

struct gopclntab {
	enum gopclntab_version version;
	uint8_t min_lc;
	uint64_t text_start; /* 1.18+: the base of the function table's pcs */
	uint32_t nfunc;
	size_t ftab_entry_sz; /* 8 (u32 pairs, 1.18+) or 16 (u64 pairs, 1.2) */
	size_t func_hdr_sz;   /* fixed part of a _func */
	size_t func_field;    /* offset of _func's second field (8 for 1.2's u64 entry, else 4) */
	size_t inl_entry_sz;  /* one inlinedCall */
	uint32_t inltree_fd;  /* FUNCDATA_InlTree */
	struct region ftab;   /* the function table: nfunc + 1 entries (only the pc of the last) */
	struct region funcs;  /* what _func offsets are relative to */
	struct region funcnames, cutab, filetab, pctab;
	struct region filenames; /* what the file table's offsets are relative to */
	uint32_t file_cnt;       /* 1.2: entries of the file table (its count included) */
	struct region gofunc;    /* sz 0: unknown */
	uint64_t gofunc_addr;    /* 1.2: the vaddr of gofunc.p (funcdata are addresses) */
	uint64_t funcnames_off;
	bool no_flags; /* the table has no funcFlag byte (1.2, 1.16): flags derived */
};

/* Go 1.2 to 1.17: the function table holds absolute u64 pcs and `_func` offsets, a `_func`
 * starts with its u64 entry, and funcdata are addresses.
 */
static bool abs_pcs(const struct gopclntab *t)
{
	return t->version == GOPCLNTAB_V12 || t->version == GOPCLNTAB_V116;
}

/* A NUL-terminated string at off inside r, or NULL. */
static const char *region_str(const struct region *r, uint64_t off)
{
	if (off >= r->sz || !memchr(r->p + off, 0, r->sz - off))
		return NULL;
	return (const char *)r->p + off;
}

/* Each region runs from its offset to the next offset that follows it, or the end. */
static int set_region(struct region *r, const uint8_t *base, size_t size, uint64_t off,
		      const uint64_t *offs, size_t n)
{
	uint64_t end = size;
	size_t i;

	if (off > size)
		return -ENOEXEC;
	for (i = 0; i < n; i++)
		if (offs[i] > off && offs[i] < end)
			end = offs[i];
	r->p = base + off;
	r->sz = (size_t)(end - off);
	return 0;
}

void gopclntab__free(struct gopclntab *t)
{
	free(t);
}

/* The pc of function table entry i (i <= nfunc; bounds checked at open). */
static uint64_t ftab_pc(const struct gopclntab *t, size_t i)
{
	if (abs_pcs(t))
		return load_u64(t->ftab.p + 16 * i);
	return t->text_start + load_u32(t->ftab.p + 8 * i);
}

/* The function table's entries must be sorted (the last one is the end of text). */
static int check_ftab(const struct gopclntab *t)
{
	uint64_t prev = 0, pc;
	uint32_t i;

	for (i = 0; i <= t->nfunc; i++) {
		pc = ftab_pc(t, i);
		if (i && pc < prev)
			return -ENOEXEC;
		prev = pc;
	}
	/* 1.2-1.17: a table of relocations not applied (PIE, shared) reads all zero */
	if (abs_pcs(t) && prev <= ftab_pc(t, 0))
		return -ENOEXEC;
	return 0;
}

/* Go 1.16+: the five regions the header's offsets start (names, cutab, file table, pc-value
 * tables, pclntab: the function table and the `_func`s).
 */
static int set_regions(struct gopclntab *t, const uint8_t *b, size_t sz, const uint64_t offs[5])
{
	t->funcnames_off = offs[0];
	if (set_region(&t->funcnames, b, sz, offs[0], offs, 5) ||
	    set_region(&t->cutab, b, sz, offs[1], offs, 5) ||
	    set_region(&t->filetab, b, sz, offs[2], offs, 5) ||
	    set_region(&t->pctab, b, sz, offs[3], offs, 5) ||
	    set_region(&t->funcs, b, sz, offs[4], offs, 5))
		return -ENOEXEC;
	t->filenames = t->filetab;
	t->ftab = t->funcs;
	return 0;
}

/* Go 1.18+: the pcHeader and its regions. */
static int open_118(struct gopclntab *t, const uint8_t *b, size_t sz, uint32_t magic)
{
	uint64_t offs[5], nfunc;
	size_t i;

	if (sz < GO_HEADER_SZ)
		return -ENOEXEC;
	t->version = magic == GO_MAGIC_118 ? GOPCLNTAB_V118 : GOPCLNTAB_V120;
	nfunc = load_u64(b + 8);
	t->text_start = load_u64(b + 24);
	for (i = 0; i < 5; i++)
		offs[i] = load_u64(b + 32 + 8 * i);
	/* the function table's u32 pcs are added to textStart */
	if (nfunc == 0 || nfunc > GO_MAX_FUNCS || t->text_start > UINT64_MAX - UINT32_MAX)
		return -ENOEXEC;
	t->nfunc = (uint32_t)nfunc;
	if (set_regions(t, b, sz, offs))
		return -ENOEXEC;
	t->ftab_entry_sz = 8;
	t->func_field = 4;
	t->func_hdr_sz = t->version == GOPCLNTAB_V118 ? 40 : 44;
	t->inl_entry_sz = t->version == GOPCLNTAB_V118 ? GO_INL_ENTRY_SZ_118 : GO_INL_ENTRY_SZ_120;
	t->inltree_fd = GO_FUNCDATA_INLTREE;
	/* nfunc + 1 entries */
	if (t->ftab.sz / 8 < (uint64_t)t->nfunc + 1)
		return -ENOEXEC;
	return 0;
}

/* Go 1.16-1.17: the regions of 1.18 without textStart, 1.2's function table in pclntab. */
static int open_116(struct gopclntab *t, const uint8_t *b, size_t sz)
{
	uint64_t offs[5], nfunc;
	size_t i;

	if (sz < GO116_HEADER_SZ)
		return -ENOEXEC;
	t->version = GOPCLNTAB_V116;
	nfunc = load_u64(b + 8);
	for (i = 0; i < 5; i++)
		offs[i] = load_u64(b + 24 + 8 * i);
	if (nfunc == 0 || nfunc > GO_MAX_FUNCS)
		return -ENOEXEC;
	t->nfunc = (uint32_t)nfunc;
	if (set_regions(t, b, sz, offs))
		return -ENOEXEC;
	/* nfunc pairs and the end pc */
	if (t->ftab.sz < 16 * (uint64_t)t->nfunc + 8)
		return -ENOEXEC;
	t->ftab.sz = 16 * (size_t)t->nfunc + 8;
	t->ftab_entry_sz = 16;
	t->func_field = 8;
	t->func_hdr_sz = 44;
	t->inl_entry_sz = GO_INL_ENTRY_SZ_118;
	t->inltree_fd = GO_FUNCDATA_INLTREE;
	return 0;
}

/* Go 1.2-1.15: one region for everything, the function and file tables after the header. */
static int open_12(struct gopclntab *t, const uint8_t *b, size_t sz)
{
	uint64_t nfunc = load_u64(b + 8), ftab_sz, filetab_off;
	struct region whole = { b, sz };

	if (nfunc == 0 || nfunc > GO_MAX_FUNCS)
		return -ENOEXEC;
	t->version = GOPCLNTAB_V12;
	t->nfunc = (uint32_t)nfunc;
	/* nfunc pairs, the end pc, the filetab offset */
	ftab_sz = 16 * nfunc + 8;
	if (sz - GO12_HEADER_SZ < ftab_sz + 4)
		return -ENOEXEC;
	t->ftab.p = b + GO12_HEADER_SZ;
	t->ftab.sz = (size_t)ftab_sz;
	filetab_off = load_u32(b + GO12_HEADER_SZ + ftab_sz);
	if (filetab_off > sz || sz - filetab_off < 4)
		return -ENOEXEC;
	t->file_cnt = load_u32(b + filetab_off);
	if (t->file_cnt > (sz - filetab_off) / 4)
		return -ENOEXEC;
	t->filetab.p = b + filetab_off;
	t->filetab.sz = 4 * (size_t)t->file_cnt;
	t->funcs = whole;
	t->funcnames = whole;
	t->pctab = whole;
	t->filenames = whole;
	t->ftab_entry_sz = 16;
	t->func_field = 8;
	t->func_hdr_sz = 40;
	t->inl_entry_sz = GO_INL_ENTRY_SZ_118;
	t->inltree_fd = GO12_FUNCDATA_INLTREE;
	t->no_flags = true;
	return 0;
}

static bool any_flag(const struct gopclntab *t);

struct gopclntab *gopclntab__open_image(const struct gopclntab_image *img)
{
	const uint8_t *b = img ? img->pcln : NULL;
	struct gopclntab *t = NULL;
	uint32_t magic;
	int err = -ENOEXEC;

	if (!b || img->pcln_sz < GO12_HEADER_SZ) {
		errno = b ? ENOEXEC : EINVAL;
		return NULL;
	}
	magic = load_u32(b);
	if (magic != GO_MAGIC_118 && magic != GO_MAGIC_120 && magic != GO_MAGIC_12 &&
	    magic != GO_MAGIC_116) {
		/* a later format, or not a pclntab at all */
		err = (magic & 0xfffffff0u) == 0xfffffff0u ? -EPROTONOSUPPORT : -ENOEXEC;
		goto fail;
	}
	if (b[4] || b[5] || (b[6] != 1 && b[6] != 2 && b[6] != 4)) {
		err = -ENOEXEC;
		goto fail;
	}
	if (b[7] != 8) {
		err = -EPROTONOSUPPORT;
		goto fail;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto fail;
	}
	t->min_lc = b[6];
	err = magic == GO_MAGIC_12    ? open_12(t, b, img->pcln_sz)
	      : magic == GO_MAGIC_116 ? open_116(t, b, img->pcln_sz)
				      : open_118(t, b, img->pcln_sz, magic);
	if (!err)
		err = check_ftab(t);
	if (!err && t->version == GOPCLNTAB_V116)
		t->no_flags = !any_flag(t);
	if (err)
		goto fail;
	if (img->gofunc && img->gofunc_sz) {
		t->gofunc.p = img->gofunc;
		t->gofunc.sz = img->gofunc_sz;
		t->gofunc_addr = img->gofunc_addr;
	}
	return t;
fail:
	free(t);
	errno = -err;
	return NULL;
}

enum gopclntab_version gopclntab__version(const struct gopclntab *t)
{
	return t->version;
}

int gopclntab__has_inline(const struct gopclntab *t)
{
	return t->gofunc.sz != 0;
}

size_t gopclntab__func_cnt(const struct gopclntab *t)
{
	return t->nfunc;
}

/* A function's fixed header and its variable tail, checked to lie inside its region. */
struct func_view {
	const uint8_t *p;
	uint64_t entry, end;
	uint32_t npcdata, nfuncdata;
	size_t funcdata_at; /* offset of the funcdata array in the _func */
};

/* The 4-byte field k of a _func after its entry (0: nameoff, 3: pcsp, 4: pcfile, 5: pcln,
 * 6: npcdata, 7: cuOffset).
 */
static uint32_t func_u32(const struct gopclntab *t, const struct func_view *fv, size_t k)
{
	return load_u32(fv->p + t->func_field + 4 * k);
}

#define FUNC_NAME 0
#define FUNC_PCSP 3
#define FUNC_PCFILE 4
#define FUNC_PCLN 5
#define FUNC_NPCDATA 6
#define FUNC_CU 7

static int func_view(const struct gopclntab *t, size_t idx, struct func_view *fv)
{
	uint64_t off, tail;

	if (idx >= t->nfunc)
		return -ENOENT;
	fv->entry = ftab_pc(t, idx);
	fv->end = ftab_pc(t, idx + 1);
	if (abs_pcs(t)) {
		off = load_u64(t->ftab.p + 16 * idx + 8);
		if (off == UINT64_MAX)
			return -ENOENT; /* a hole between text sections */
	} else {
		off = load_u32(t->ftab.p + 8 * idx + 4);
	}
	if (off > t->funcs.sz || t->funcs.sz - off < t->func_hdr_sz)
		return -ENOEXEC;
	fv->p = t->funcs.p + off;
	fv->npcdata = func_u32(t, fv, FUNC_NPCDATA);
	fv->nfuncdata = fv->p[t->func_hdr_sz - 1];
	if (fv->npcdata > GO_MAX_FUNCS)
		return -ENOEXEC;
	fv->funcdata_at = t->func_hdr_sz + 4 * (size_t)fv->npcdata;
	if (abs_pcs(t)) {
		/* u64 addresses, 8-aligned (the _func is) */
		if (fv->nfuncdata && (fv->funcdata_at & 7))
			fv->funcdata_at += 4;
		tail = fv->funcdata_at - t->func_hdr_sz + 8 * (uint64_t)fv->nfuncdata;
	} else {
		tail = ((uint64_t)fv->npcdata + fv->nfuncdata) * 4;
	}
	if (tail > t->funcs.sz - off - t->func_hdr_sz)
		return -ENOEXEC;
	/* The entry stored in the _func must agree with the function table. */
	if (abs_pcs(t) ? load_u64(fv->p) != fv->entry
		       : t->text_start + load_u32(fv->p) != fv->entry)
		return -ENOEXEC;
	return 0;
}

/* Whether some function's funcFlag byte is set (1.16's table has a pad byte there: 0). */
static bool any_flag(const struct gopclntab *t)
{
	struct func_view fv;
	uint32_t i;

	for (i = 0; i < t->nfunc; i++)
		if (!func_view(t, i, &fv) && fv.p[t->func_hdr_sz - 3])
			return true;
	return false;
}

static const char *func_name(const struct gopclntab *t, int32_t name_off)
{
	return name_off < 0 ? NULL : region_str(&t->funcnames, (uint64_t)name_off);
}

/* Go 1.2-1.15's funcFlags, from what 1.17 marks: the outermost frames TOPFRAME, the
 * functions that write SP (the stack switches and the vDSO callers moving to g0) SPWRITE.
 */
static uint8_t go12_flags(uint8_t func_id, const char *name)
{
	switch (func_id) {
	case GO12_FUNCID_GOEXIT:
	case GO12_FUNCID_MSTART:
	case GO12_FUNCID_RT0_GO:
		return GO_FUNC_TOPFRAME;
	case GO12_FUNCID_JMPDEFER:
	case GO12_FUNCID_MCALL:
	case GO12_FUNCID_MORESTACK:
	case GO12_FUNCID_ASMCGOCALL:
	case GO12_FUNCID_SYSTEMSTACK:
	case GO12_FUNCID_GOGO:
		return GO_FUNC_SPWRITE;
	default:
		break;
	}
	if (name && (!strcmp(name, "runtime.nanotime1") || !strcmp(name, "runtime.walltime1")))
		return GO_FUNC_SPWRITE;
	return 0;
}

int gopclntab__func(const struct gopclntab *t, size_t idx, struct go_func *out)
{
	struct func_view fv;
	int err = func_view(t, idx, &fv);

	if (err)
		return err;
	out->entry = fv.entry;
	out->end = fv.end;
	out->name = func_name(t, (int32_t)func_u32(t, &fv, FUNC_NAME));
	out->func_id = fv.p[t->func_hdr_sz - 4];
	if (t->no_flags)
		out->flags = go12_flags(out->func_id, out->name);
	else
		out->flags = fv.p[t->func_hdr_sz - 3];
	return 0;
}

long gopclntab__find(const struct gopclntab *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nfunc; /* answer in [lo, hi) */

	if (pc >= ftab_pc(t, t->nfunc) || pc < ftab_pc(t, 0))
		return -ENOENT;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ftab_pc(t, mid) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}

/* Reads an unsigned varint that fits 32 bits (varint.h); false at the end of the table, on an
 * overlong one or on a larger value.
 */
static bool read_varint(const uint8_t **pos, const uint8_t *end, uint32_t *out)
{
	size_t off = 0;
	uint64_t v;
	int err = varint__get(*pos, (size_t)(end - *pos), &off, &v);

	*pos += off;
	if (err || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* A walk over one pc-value table of a function. */
struct pcvalue_it {
	const uint8_t *pos, *end;
	uint64_t pc; /* start of the next run */
	int32_t val;
	bool first;
};

static int pcvalue_start(const struct gopclntab *t, const struct func_view *fv, uint32_t off,
			 struct pcvalue_it *it)
{
	if (off == 0)
		return -ENOENT;
	if (off >= t->pctab.sz)
		return -ENOEXEC;
	it->pos = t->pctab.p + off;
	it->end = t->pctab.p + t->pctab.sz;
	it->pc = fv->entry;
	it->val = -1;
	it->first = true;
	return 0;
}

/* The next run [*start, it->pc) with value it->val: 1, 0 at the table's end, -ENOEXEC. */
static int pcvalue_next(const struct gopclntab *t, struct pcvalue_it *it, uint64_t *start)
{
	uint32_t uv, pcd;
	uint64_t step;

	if (!read_varint(&it->pos, it->end, &uv))
		return -ENOEXEC;
	if (uv == 0 && !it->first)
		return 0;
	it->first = false;
	if (!read_varint(&it->pos, it->end, &pcd))
		return -ENOEXEC;
	/* unsigned arithmetic: the runtime's int32 wrap-around without UB */
	it->val = (int32_t)((uint32_t)it->val + (uint32_t)zigzag__decode(uv));
	step = (uint64_t)pcd * t->min_lc;
	*start = it->pc;
	if (it->pc + step < it->pc)
		return -ENOEXEC;
	it->pc += step;
	return 1;
}

/* The value of table off at pc (the runtime's pcvalue): 0 and *val, -ENOENT, -ENOEXEC. */
static int pcvalue(const struct gopclntab *t, const struct func_view *fv, uint32_t off, uint64_t pc,
		   int32_t *val)
{
	struct pcvalue_it it;
	uint64_t start;
	int err = pcvalue_start(t, fv, off, &it);

	while (!err) {
		err = pcvalue_next(t, &it, &start);
		if (err == 1 && pc < it.pc) {
			*val = it.val;
			return 0;
		}
		err = err == 1 ? 0 : -ENOEXEC; /* the table ended before pc */
	}
	return err;
}

static uint32_t pcdata_off(const struct gopclntab *t, const struct func_view *fv, uint32_t i)
{
	return i < fv->npcdata ? load_u32(fv->p + t->func_hdr_sz + 4 * (size_t)i) : 0;
}

/* The path of file number fileno of function fv, or NULL. */
static const char *file_name(const struct gopclntab *t, const struct func_view *fv, int32_t fileno)
{
	uint64_t idx;
	uint32_t foff;

	if (fileno < 0)
		return NULL;
	if (t->version == GOPCLNTAB_V12) {
		/* entry 0 is the count */
		if (fileno == 0 || (uint32_t)fileno >= t->file_cnt)
			return NULL;
		foff = load_u32(t->filetab.p + 4 * (size_t)fileno);
	} else {
		idx = func_u32(t, fv, FUNC_CU) + (uint64_t)fileno;
		if (idx >= t->cutab.sz / 4)
			return NULL;
		foff = load_u32(t->cutab.p + 4 * idx);
		if (foff == UINT32_MAX)
			return NULL;
	}
	return region_str(&t->filenames, foff);
}

/* File and line of pc in the physical function fv (file NULL / line 0 when unknown). */
static void file_line(const struct gopclntab *t, const struct func_view *fv, uint64_t pc,
		      struct go_frame *f)
{
	int32_t fileno, line;

	f->file = NULL;
	f->line = 0;
	if (!pcvalue(t, fv, func_u32(t, fv, FUNC_PCLN), pc, &line) && line > 0)
		f->line = (uint32_t)line;
	if (!pcvalue(t, fv, func_u32(t, fv, FUNC_PCFILE), pc, &fileno))
		f->file = file_name(t, fv, fileno);
}

/* Where the inline tree of fv starts in gofunc, or false (none, out of bounds). */
static bool inl_tree(const struct gopclntab *t, const struct func_view *fv, uint64_t *at)
{
	uint64_t addr;
	uint32_t off;

	if (!t->gofunc.sz || fv->nfuncdata <= t->inltree_fd)
		return false;
	if (abs_pcs(t)) {
		addr = load_u64(fv->p + fv->funcdata_at + 8 * (size_t)t->inltree_fd);
		if (!addr || addr < t->gofunc_addr || addr - t->gofunc_addr >= t->gofunc.sz)
			return false;
		*at = addr - t->gofunc_addr;
		return true;
	}
	off = load_u32(fv->p + fv->funcdata_at + 4 * (size_t)t->inltree_fd);
	if (off == UINT32_MAX)
		return false;
	*at = off;
	return true;
}

/* The inline tree entry ix of fv: its name offset and parentPc; false when out of bounds. */
static bool inl_entry(const struct gopclntab *t, const struct func_view *fv, int32_t ix,
		      int32_t *name_off, int32_t *parent_pc)
{
	uint64_t at;
	const uint8_t *e;

	if (ix < 0 || !inl_tree(t, fv, &at))
		return false;
	at += (uint64_t)ix * t->inl_entry_sz;
	if (at > t->gofunc.sz || t->gofunc.sz - at < t->inl_entry_sz)
		return false;
	e = t->gofunc.p + at;
	if (t->inl_entry_sz == GO_INL_ENTRY_SZ_118) {
		*name_off = (int32_t)load_u32(e + 12);
		*parent_pc = (int32_t)load_u32(e + 16);
	} else {
		*name_off = (int32_t)load_u32(e + 4);
		*parent_pc = (int32_t)load_u32(e + 8);
	}
	return true;
}

int gopclntab__lookup(const struct gopclntab *t, uint64_t pc, struct go_frame *out, size_t cap)
{
	struct func_view fv;
	long idx;
	size_t n = 0, depth;
	int32_t ix = -1, name_off, parent_pc;
	uint32_t inl_tab;
	int err;

	if (!cap)
		return -EINVAL;
	idx = gopclntab__find(t, pc);
	if (idx < 0)
		return (int)idx;
	err = func_view(t, (size_t)idx, &fv);
	if (err)
		return err;
	inl_tab = pcdata_off(t, &fv, GO_PCDATA_INLTREEINDEX);
	if (inl_tab && t->gofunc.sz && pcvalue(t, &fv, inl_tab, pc, &ix))
		ix = -1;
	/* Each inlined call: its name, the position at pc; then pc moves to its call site. The
	 * chain is bounded by GO_MAX_FRAMES (a corrupt tree may loop).
	 */
	for (depth = 0; ix >= 0 && depth < GO_MAX_FRAMES; depth++) {
		uint64_t caller_pc;

		if (!inl_entry(t, &fv, ix, &name_off, &parent_pc))
			break;
		if (n == cap)
			return (int)n; /* cut: the innermost cap positions */
		out[n].function = func_name(t, name_off);
		if (!out[n].function)
			out[n].function = "?";
		file_line(t, &fv, pc, &out[n]);
		n++;
		caller_pc = fv.entry + (uint64_t)(uint32_t)parent_pc;
		if (parent_pc < 0 || caller_pc >= fv.end)
			return -ENOEXEC;
		pc = caller_pc;
		if (pcvalue(t, &fv, inl_tab, pc, &ix))
			ix = -1;
	}
	if (n == cap)
		return (int)n; /* cut: the innermost cap positions */
	out[n].function = func_name(t, (int32_t)func_u32(t, &fv, FUNC_NAME));
	if (!out[n].function)
		out[n].function = "?";
	file_line(t, &fv, pc, &out[n]);
	return (int)n + 1;
}

int gopclntab__sp_deltas(const struct gopclntab *t, size_t idx, gopclntab_sp_fn fn, void *ctx)
{
	struct func_view fv;
	struct pcvalue_it it;
	uint64_t start;
	int err = func_view(t, idx, &fv);

	if (!err)
		err = pcvalue_start(t, &fv, func_u32(t, &fv, FUNC_PCSP), &it);
	while (!err) {
		err = pcvalue_next(t, &it, &start);
		if (err != 1)
			break;
		if (it.pc > fv.end)
			return -ENOEXEC;
		if (it.pc > start)
			err = fn(ctx, start, it.pc, it.val);
	}
	return err; /* pcs after the table's end are the alignment padding after the code */
}

/* ---- ELF: the section and the runtime's moduledata ---- */

/* Word index of moduledata's funcnametab and .text, and the places gofunc has been at
 * (runtime/symtab.go): 38 in 1.18-1.19; 40 from 1.20 (covctrs and ecovctrs before `end`); 43
 * in 1.27 (typedesclen, itaboffset and itabsize added before rodata) with the same pclntab
 * magic as 1.20, so the word before gofunc, `rodata`, tells: an address at or below gofunc.
 */
#define MD_WORD_FUNCNAMETAB 1
#define MD_WORD_TEXT 22
static const size_t md_words_gofunc_118[] = { 38 };
static const size_t md_words_gofunc_120[] = { 40, 43 };

/* gofunc in moduledata md (words words long) as layout word gw has it, or 0: rodata, the word
 * before it, must be an address no higher than gofunc, and gofunc's bytes must be in the file.
 */
static uint64_t md_gofunc(struct elf_file *ef, const uint8_t *md, size_t words, size_t gw,
			  const void **data, size_t *avail)
{
	uint64_t rodata, gofunc;

	if (gw >= words)
		return 0;
	rodata = load_u64(md + 8 * (gw - 1));
	gofunc = load_u64(md + 8 * gw);
	if (!rodata || !gofunc || gofunc < rodata ||
	    elf_file__bytes_at_vaddr(ef, gofunc, data, avail))
		return 0;
	return gofunc;
}

/* Finds moduledata (its first word points at the pclntab, its second at the function name
 * table, its `text` is *text) in the data sections and returns gofunc. Go 1.26 writes
 * textStart 0 in the header: with *text 0, moduledata's `text` is taken and returned in *text
 * (the .text section's start is not it in an externally linked binary, C code first).
 * 0, or -ENOENT (no gofunc found; *text may still have been set).
 */
static int find_gofunc(struct elf_file *ef, const struct gopclntab *t, uint64_t pcln_vaddr,
		       uint64_t *text, const void **data, size_t *avail)
{
	static const char *const secs[] = { ".go.module", ".noptrdata", ".data", ".data.rel.ro" };
	const size_t *gws = t->version == GOPCLNTAB_V118 ? md_words_gofunc_118
							 : md_words_gofunc_120;
	size_t ngw = t->version == GOPCLNTAB_V118 ? 1 : 2;
	size_t k, w, g;

	for (k = 0; k < sizeof(secs) / sizeof(secs[0]); k++) {
		struct elf_section s;
		const uint8_t *d;
		size_t words;
		uint64_t md_text;

		if (elf_file__section(ef, secs[k], &s) || !s.data || s.size < 8 * (gws[0] + 1))
			continue;
		d = s.data;
		words = s.size / 8;
		for (w = 0; w + gws[0] < words; w++) {
			if (load_u64(d + 8 * w) != pcln_vaddr ||
			    load_u64(d + 8 * (w + MD_WORD_FUNCNAMETAB)) !=
				    pcln_vaddr + t->funcnames_off)
				continue;
			md_text = load_u64(d + 8 * (w + MD_WORD_TEXT));
			if (*text ? md_text != *text : !md_text)
				continue;
			*text = md_text;
			for (g = 0; g < ngw; g++)
				if (md_gofunc(ef, d + 8 * w, words - w, gws[g], data, avail))
					return 0;
		}
	}
	return -ENOENT;
}

struct gopclntab *gopclntab__open(struct elf_file *ef)
{
	struct gopclntab_image img = { 0 };
	struct gopclntab *t;
	struct elf_section s;
	const void *gofunc;
	size_t avail;

	/* PIE and shared builds put the table among the relocated read-only data. */
	if ((elf_file__section(ef, ".gopclntab", &s) &&
	     elf_file__section(ef, ".data.rel.ro.gopclntab", &s)) ||
	    !s.data || !s.size) {
		errno = ENOENT;
		return NULL;
	}
	img.pcln = s.data;
	img.pcln_sz = s.size;
	t = gopclntab__open_image(&img);
	if (!t)
		return NULL;
	if (abs_pcs(t)) {
		/* funcdata are addresses; the linker puts the inline trees (go.func.*) in .rodata */
		struct elf_section ro;

		if (!elf_file__section(ef, ".rodata", &ro) && ro.data && ro.size) {
			t->gofunc.p = ro.data;
			t->gofunc.sz = ro.size;
			t->gofunc_addr = ro.addr;
		}
	} else {
		uint64_t text = t->text_start;
		struct elf_section text_sec;

		if (!find_gofunc(ef, t, s.addr, &text, &gofunc, &avail)) {
			t->gofunc.p = gofunc;
			t->gofunc.sz = avail;
		}
		/* no moduledata either: the .text section's start */
		if (!text && !elf_file__section(ef, ".text", &text_sec))
			text = text_sec.addr;
		if (text > UINT64_MAX - UINT32_MAX) {
			gopclntab__free(t);
			errno = ENOEXEC;
			return NULL;
		}
		t->text_start = text;
	}
	return t;
}
