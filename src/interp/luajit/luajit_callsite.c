/* LuaJIT 2.1's call-site names (luajit_callsite.h). Facts from LuaJIT's lj_bc.h (the opcodes
 * up to JMP and their operand modes and metamethods, the same through 2.1's history: later
 * opcodes are bit operators, then the function headers, which a scan never passes), lj_obj.h
 * (GCproto, GCstr), lj_debug.c (what names a slot) and lj_debug.h (varinfo's internal names).
 *
 * Invariants: every read is bounds-checked against what was read; a scan is bounded by the
 * window read (LJ_CALLSITE_SCAN instructions) and a MOV chain cannot loop (each restart moves
 * strictly back).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/luajit/luajit_callsite.h"

#define PT_READ_MAX 128
#define UVINFO_MAX (4u << 10)
#define VARINFO_MAX (32u << 10)

/* Operand A's mode (lj_bc.h's BCMode: none, dst, base, var, rbase, uv). */
enum { MA_NONE, MA_DST, MA_BASE, MA_VAR, MA_RBASE, MA_UV };

/* The metamethod an instruction may run (lj_obj.h's MMS, in ORDER); MM_NONE: none. */
enum {
	MM_INDEX,
	MM_NEWINDEX,
	MM_GC,
	MM_MODE,
	MM_EQ,
	MM_LEN,
	MM_LT,
	MM_LE,
	MM_CONCAT,
	MM_CALL,
	MM_ADD,
	MM_SUB,
	MM_MUL,
	MM_DIV,
	MM_MOD,
	MM_POW,
	MM_UNM,
	MM_NONE
};

static const char *const mm_names[] = {
	"__index", "__newindex", "__gc",  "__mode", "__eq",  "__len", "__lt",  "__le",  "__concat",
	"__call",  "__add",      "__sub", "__mul",  "__div", "__mod", "__pow", "__unm",
};

enum {
	OP_MOV = 18,
	OP_KNIL = 44,
	OP_UGET = 45,
	OP_GGET = 54,
	OP_TGETS = 57,
	OP_ITERC = 69,
	OP_CNT = 89, /* through JMP */
};

/* Each opcode's (A mode, metamethod), in lj_bc.h's order. */
static const uint8_t op_mode[OP_CNT][2] = {
	/* ISLT ISGE ISLE ISGT */
	{ MA_VAR, MM_LT },
	{ MA_VAR, MM_LT },
	{ MA_VAR, MM_LE },
	{ MA_VAR, MM_LE },
	/* ISEQV ISNEV ISEQS ISNES ISEQN ISNEN ISEQP ISNEP */
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	{ MA_VAR, MM_EQ },
	/* ISTC ISFC IST ISF ISTYPE ISNUM */
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_NONE, MM_NONE },
	{ MA_NONE, MM_NONE },
	{ MA_VAR, MM_NONE },
	{ MA_VAR, MM_NONE },
	/* MOV NOT UNM LEN */
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_UNM },
	{ MA_DST, MM_LEN },
	/* ADDVN..MODVN, ADDNV..MODNV, ADDVV..MODVV */
	{ MA_DST, MM_ADD },
	{ MA_DST, MM_SUB },
	{ MA_DST, MM_MUL },
	{ MA_DST, MM_DIV },
	{ MA_DST, MM_MOD },
	{ MA_DST, MM_ADD },
	{ MA_DST, MM_SUB },
	{ MA_DST, MM_MUL },
	{ MA_DST, MM_DIV },
	{ MA_DST, MM_MOD },
	{ MA_DST, MM_ADD },
	{ MA_DST, MM_SUB },
	{ MA_DST, MM_MUL },
	{ MA_DST, MM_DIV },
	{ MA_DST, MM_MOD },
	/* POW CAT */
	{ MA_DST, MM_POW },
	{ MA_DST, MM_CONCAT },
	/* KSTR KCDATA KSHORT KNUM KPRI KNIL */
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_DST, MM_NONE },
	{ MA_BASE, MM_NONE },
	/* UGET USETV USETS USETN USETP UCLO FNEW */
	{ MA_DST, MM_NONE },
	{ MA_UV, MM_NONE },
	{ MA_UV, MM_NONE },
	{ MA_UV, MM_NONE },
	{ MA_UV, MM_NONE },
	{ MA_RBASE, MM_NONE },
	{ MA_DST, MM_GC },
	/* TNEW TDUP GGET GSET TGETV TGETS TGETB TGETR */
	{ MA_DST, MM_GC },
	{ MA_DST, MM_GC },
	{ MA_DST, MM_INDEX },
	{ MA_VAR, MM_NEWINDEX },
	{ MA_DST, MM_INDEX },
	{ MA_DST, MM_INDEX },
	{ MA_DST, MM_INDEX },
	{ MA_DST, MM_INDEX },
	/* TSETV TSETS TSETB TSETM TSETR */
	{ MA_VAR, MM_NEWINDEX },
	{ MA_VAR, MM_NEWINDEX },
	{ MA_VAR, MM_NEWINDEX },
	{ MA_BASE, MM_NEWINDEX },
	{ MA_VAR, MM_NEWINDEX },
	/* CALLM CALL CALLMT CALLT ITERC ITERN VARG ISNEXT */
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_CALL },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	/* RETM RET RET0 RET1 */
	{ MA_BASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
	/* FORI JFORI FORL IFORL JFORL ITERL IITERL JITERL */
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	{ MA_BASE, MM_NONE },
	/* LOOP ILOOP JLOOP JMP */
	{ MA_RBASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
	{ MA_RBASE, MM_NONE },
};

/* varinfo's internal names (VARNAME_FOR_IDX.. from 1; 0 ends the list) */
static const char *const varname_internal[] = {
	"(for index)",     "(for limit)", "(for step)",
	"(for generator)", "(for state)", "(for control)",
};
#define VARNAME_MAX 7

enum slot_kind { SLOT_NONE, SLOT_LOCAL, SLOT_GLOBAL, SLOT_FIELD, SLOT_METHOD, SLOT_UPVALUE };

/* What one call site's naming works on: the caller's proto as read. */
struct site {
	const struct lj_callsite_layout *l;
	lj_callsite_read_fn read;
	void *ctx;
	uint64_t k;          /* the split constant array */
	uint32_t lo, sizeuv; /* bc[0] is instruction lo */
	uint32_t *bc;        /* instructions lo .. the call's */
	uint8_t *uvinfo, *varinfo;
	size_t uvinfo_sz, varinfo_sz;
};

static inline uint32_t op_of(uint32_t ins)
{
	return ins & 0xff;
}
static inline uint32_t a_of(uint32_t ins)
{
	return ins >> 8 & 0xff;
}
static inline uint32_t c_of(uint32_t ins)
{
	return ins >> 16 & 0xff;
}
static inline uint32_t b_of(uint32_t ins)
{
	return ins >> 24;
}
static inline uint32_t d_of(uint32_t ins)
{
	return ins >> 16;
}

void lj_callsite_layout__init(struct lj_callsite_layout *l, bool gc64)
{
	*l = (struct lj_callsite_layout){
		.gc64 = gc64,
		.pt_size = gc64 ? 104 : 64,
		.pt_sizebc = gc64 ? 12 : 8,
		.pt_k = gc64 ? 32 : 16,
		.pt_sizept = gc64 ? 56 : 32,
		.pt_sizeuv = gc64 ? 60 : 36,
		.pt_uvinfo = gc64 ? 88 : 56,
		.pt_varinfo = gc64 ? 96 : 60,
		.str_data = gc64 ? 24 : 16,
	};
}

static uint64_t ref_at(const struct lj_callsite_layout *l, const uint8_t *b, size_t off)
{
	uint64_t v = 0;

	memcpy(&v, b + off, l->gc64 ? 8 : 4);
	return v;
}

/* The NUL-terminated string at addr into out (truncated to out_sz - 1 bytes), read in pieces
 * that stay within 64-byte blocks (its end may be followed by unmapped memory).
 */
static int read_str(const struct site *s, uint64_t addr, char *out, size_t out_sz)
{
	size_t n = 0, piece, i;
	char buf[64];

	while (n + 1 < out_sz) {
		piece = 64 - (size_t)((addr + n) & 63);
		if (piece > out_sz - 1 - n)
			piece = out_sz - 1 - n;
		if (s->read(s->ctx, addr + n, buf, piece))
			return -EFAULT;
		for (i = 0; i < piece && buf[i]; i++)
			out[n + i] = buf[i];
		n += i;
		if (i < piece)
			break;
	}
	out[n] = 0;
	return 0;
}

/* The string constant D (proto_kgc(pt, ~D)) into out. */
static int kgc_str(const struct site *s, uint32_t d, char *out, size_t out_sz)
{
	uint8_t ref[8];
	uint64_t str, w = s->l->gc64 ? 8 : 4;

	if (s->read(s->ctx, s->k - w * ((uint64_t)d + 1), ref, w))
		return -EFAULT;
	str = ref_at(s->l, ref, 0);
	if (str < 0x1000)
		return -EFAULT;
	return read_str(s, str + s->l->str_data, out, out_sz);
}

static uint32_t uleb128(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	int sh = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (sh < 32)
			v |= (uint32_t)(b & 0x7f) << sh;
		sh += 7;
		if (b < 0x80)
			break;
	}
	return v;
}

/* debug_varname: the local variable in `slot` live at instruction pc, into out. */
static bool varname(const struct site *s, uint32_t pc, uint32_t slot, char *out, size_t out_sz)
{
	const uint8_t *p = s->varinfo, *end = s->varinfo + s->varinfo_sz, *name;
	uint32_t lastpc = 0, startpc, endpc, vn;

	if (!p)
		return false;
	while (p < end) {
		name = p;
		vn = *p;
		if (vn == 0)
			break;
		if (vn >= VARNAME_MAX) {
			while (p < end && *p)
				p++;
			if (p >= end)
				break;
		}
		p++;
		startpc = lastpc = lastpc + uleb128(&p, end);
		if (startpc > pc)
			break;
		endpc = startpc + uleb128(&p, end);
		if (pc < endpc && slot-- == 0) {
			snprintf(out, out_sz, "%.*s", vn < VARNAME_MAX ? 64 : (int)(end - name),
				 vn < VARNAME_MAX ? varname_internal[vn - 1] : (const char *)name);
			return true;
		}
	}
	return false;
}

/* lj_debug_uvname: upvalue idx's name into out. */
static bool uvname(const struct site *s, uint32_t idx, char *out, size_t out_sz)
{
	const uint8_t *p = s->uvinfo, *end = s->uvinfo + s->uvinfo_sz, *e;

	if (!p || idx >= s->sizeuv)
		return false;
	for (; idx && p < end; p++)
		if (!*p)
			idx--;
	e = memchr(p, 0, (size_t)(end - p));
	if (!e || e == p)
		return false;
	snprintf(out, out_sz, "%s", (const char *)p);
	return true;
}

/* lj_debug_slotname: what loaded `slot` before instruction at (an index into s->bc), and its
 * name into out; for a field or method, the table's slot into *tslot and the instruction's
 * index into *tat.
 */
static enum slot_kind slotname(const struct site *s, uint32_t at, uint32_t slot, char *out,
			       size_t out_sz, uint32_t *tslot, uint32_t *tat)
{
	uint32_t ins, op, ra, insp;

restart:
	if (varname(s, s->lo + at, slot, out, out_sz))
		return SLOT_LOCAL;
	while (at > 0 && s->lo + at - 1 > 0) {
		ins = s->bc[--at];
		op = op_of(ins);
		ra = a_of(ins);
		if (op >= OP_CNT)
			return SLOT_NONE; /* not an opcode this knows: stop */
		if (op_mode[op][0] == MA_BASE) {
			if (slot >= ra && (op != OP_KNIL || slot <= d_of(ins)))
				return SLOT_NONE;
		} else if (op_mode[op][0] == MA_DST && ra == slot) {
			switch (op) {
			case OP_MOV:
				slot = d_of(ins);
				goto restart;
			case OP_GGET:
				return kgc_str(s, d_of(ins), out, out_sz) ? SLOT_NONE : SLOT_GLOBAL;
			case OP_TGETS:
				if (kgc_str(s, c_of(ins), out, out_sz))
					return SLOT_NONE;
				*tslot = b_of(ins);
				*tat = at;
				/* a method: obj:m() moves obj right above the function
				 * (two slots up with GC64's two-slot frames) */
				insp = at > 0 ? s->bc[at - 1] : 0;
				if (at > 0 && op_of(insp) == OP_MOV &&
				    a_of(insp) == ra + 1 + (s->l->gc64 ? 1 : 0) &&
				    d_of(insp) == b_of(ins))
					return SLOT_METHOD;
				return SLOT_FIELD;
			case OP_UGET:
				return uvname(s, d_of(ins), out, out_sz) ? SLOT_UPVALUE : SLOT_NONE;
			default:
				return SLOT_NONE;
			}
		}
	}
	return SLOT_NONE;
}

/* The name of the slot `slot` at instruction at: "tbl.key", "tbl:key" for a field or method
 * whose table is itself named by a local, global or upvalue, else the bare name.
 */
static int name_slot(const struct site *s, uint32_t at, uint32_t slot, char *out, size_t out_sz)
{
	char key[LJ_CALLSITE_NAME_MAX], tbl[LJ_CALLSITE_NAME_MAX];
	uint32_t tslot = 0, tat = 0, u1, u2;
	enum slot_kind k, tk;

	k = slotname(s, at, slot, key, sizeof(key), &tslot, &tat);
	if (k == SLOT_NONE)
		return -ENOENT;
	if (k == SLOT_FIELD || k == SLOT_METHOD) {
		tk = slotname(s, tat, tslot, tbl, sizeof(tbl), &u1, &u2);
		if (tk == SLOT_LOCAL || tk == SLOT_GLOBAL || tk == SLOT_UPVALUE) {
			snprintf(out, out_sz, "%s%c%s", tbl, k == SLOT_METHOD ? ':' : '.', key);
			return 0;
		}
	}
	snprintf(out, out_sz, "%s", key);
	return 0;
}

/* The proto's debug info: [addr, limit) read, at most cap bytes (NULL: none). */
static uint8_t *read_info(const struct site *s, uint64_t addr, uint64_t limit, size_t cap,
			  size_t *sz)
{
	uint8_t *b;

	*sz = 0;
	if (!addr || limit <= addr)
		return NULL;
	*sz = limit - addr > cap ? cap : (size_t)(limit - addr);
	b = malloc(*sz);
	if (b && s->read(s->ctx, addr, b, *sz)) {
		free(b);
		b = NULL;
	}
	if (!b)
		*sz = 0;
	return b;
}

int lj_callsite__name(const struct lj_callsite_layout *l, lj_callsite_read_fn read, void *ctx,
		      uint64_t pt, uint32_t pos, char *out, size_t out_sz)
{
	struct site s = { .l = l, .read = read, .ctx = ctx };
	uint8_t hdr[PT_READ_MAX];
	uint64_t uvinfo, varinfo, end;
	uint32_t sizebc, sizept, ins, op, slot, n;
	int err = -EFAULT;

	if (!out_sz || l->pt_size > sizeof(hdr))
		return -EINVAL;
	out[0] = 0;
	if (read(ctx, pt, hdr, l->pt_size))
		return -EFAULT;
	memcpy(&sizebc, hdr + l->pt_sizebc, 4);
	memcpy(&sizept, hdr + l->pt_sizept, 4);
	if (pos == 0 || pos >= sizebc || sizept < l->pt_size + 4 * (uint64_t)sizebc)
		return -EINVAL;
	s.k = ref_at(l, hdr, l->pt_k);
	s.sizeuv = hdr[l->pt_sizeuv];
	s.lo = pos > LJ_CALLSITE_SCAN ? pos - LJ_CALLSITE_SCAN : 0;
	n = pos - s.lo + 1;
	s.bc = malloc(4 * (size_t)n);
	if (!s.bc || read(ctx, pt + l->pt_size + 4 * (uint64_t)s.lo, s.bc, 4 * (size_t)n))
		goto cleanup;
	end = pt + sizept;
	uvinfo = ref_at(l, hdr, l->pt_uvinfo);
	varinfo = ref_at(l, hdr, l->pt_varinfo);
	s.uvinfo =
		read_info(&s, uvinfo, varinfo > uvinfo ? varinfo : end, UVINFO_MAX, &s.uvinfo_sz);
	s.varinfo = read_info(&s, varinfo, end, VARINFO_MAX, &s.varinfo_sz);
	ins = s.bc[n - 1];
	op = op_of(ins);
	err = -ENOENT;
	if (op >= OP_CNT || op_mode[op][1] == MM_NONE)
		goto cleanup;
	if (op_mode[op][1] != MM_CALL) {
		snprintf(out, out_sz, "%s", mm_names[op_mode[op][1]]);
		err = 0;
		goto cleanup;
	}
	slot = a_of(ins);
	if (op == OP_ITERC) {
		if (slot < 3)
			goto cleanup;
		slot -= 3;
	}
	err = name_slot(&s, n - 1, slot, out, out_sz);
cleanup:
	free(s.bc);
	free(s.uvinfo);
	free(s.varinfo);
	if (err)
		out[0] = 0;
	return err;
}
