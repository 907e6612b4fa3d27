/* V8's embedded builtins without their symbols (see v8_blob.h). */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unaligned.h"
#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/v8/v8_blob.h"

#define V8_META_SIZE 24    /* sizeof(BuiltinMetadata): name, kind, data */
#define V8_STORE_BACK 40   /* bytes searched back from a store for the lea of its value */
#define V8_ACCESSOR_GAP 16 /* the accessors' distance from one another */

int v8_blob__accessor(const uint8_t *c, size_t n, uint64_t vaddr, struct v8_accessor *out)
{
	const uint8_t *t;
	size_t i = 0, rest;
	uint64_t where;
	bool load;

	if (n >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		i = 4;                                        /* endbr64 */
	if (n >= i + 7 && c[i] == 0x8b && c[i + 1] == 0x05) { /* mov d(%rip), %eax */
		if (c[i + 6] != 0xc3)
			return -ENOENT;
		*out = (struct v8_accessor){
			.kind = V8_ACC_U32, .where = vaddr + i + 6 + (int64_t)load_s32(c + i + 2)
		};
		return 0;
	}
	/* lea d(%rip), %rax (the address) or mov d(%rip), %rax (the word there) */
	if (n < i + 8 || c[i] != 0x48 || (c[i + 1] != 0x8d && c[i + 1] != 0x8b) || c[i + 2] != 0x05)
		return -ENOENT;
	load = c[i + 1] == 0x8b;
	where = vaddr + i + 7 + (int64_t)load_s32(c + i + 3);
	t = c + i + 7;
	rest = n - i - 7;
	if (t[0] == 0xc3) { /* ret */
		*out = (struct v8_accessor){ .kind = load ? V8_ACC_PTR : V8_ACC_ADDR,
					     .where = where };
		return 0;
	}
	if (rest >= 4 && t[0] == 0x48 && t[1] == 0x8b && t[2] == 0x00 && t[3] == 0xc3) {
		/* mov (%rax), %rax; ret */
		*out = (struct v8_accessor){ .kind = V8_ACC_PTR, .where = where, .via_got = load };
		return 0;
	}
	if (rest >= 3 && t[0] == 0x8b && t[1] == 0x00 && t[2] == 0xc3) { /* mov (%rax), %eax; ret */
		*out = (struct v8_accessor){ .kind = V8_ACC_U32, .where = where, .via_got = load };
		return 0;
	}
	return -ENOENT;
}

/* arm64 (gcc's shapes of the same accessors): an optional `bti c`, `adrp x0, page`, then
 * `add x0, x0, #lo12` (the address) or `ldr x0, [x0, #lo12]` (the word there, a GOT slot or
 * a pointer variable) or `ldr w0, [x0, #lo12]` (a 32-bit size), then ret, `ldr x0, [x0]; ret`
 * or `ldr w0, [x0]; ret` through the word loaded.
 */
#define A64_RET 0xd65f03c0u
#define A64_BTI_C 0xd503245fu
#define A64_LDR_X0_X0 0xf9400000u /* ldr x0, [x0, #imm12 * 8] (imm12 in bits 10-21) */
#define A64_LDR_W0_X0 0xb9400000u /* ldr w0, [x0, #imm12 * 4] */
#define A64_ADD_X0_X0 0x91000000u /* add x0, x0, #imm12 */
#define A64_IMM12_MASK 0x003ffc00u

int v8_blob__accessor_arm64(const uint8_t *c, size_t n, uint64_t vaddr, struct v8_accessor *out)
{
	uint32_t w[4], op, imm12;
	size_t k = 0, i;
	uint64_t page, imm;

	for (i = 0; i < 4 && (i + 1) * 4 <= n; i++)
		w[i] = load_u32(c + i * 4);
	if (i && w[0] == A64_BTI_C)
		k = 1;
	if (i < k + 3 || (w[k] & 0x9f00001fu) != 0x90000000u) /* adrp x0 */
		return -ENOENT;
	imm = (uint64_t)(w[k] >> 29 & 3) | (uint64_t)(w[k] >> 5 & 0x7ffff) << 2;
	if (imm & (1ULL << 20)) /* 21-bit signed page count */
		imm |= ~((1ULL << 21) - 1);
	page = ((vaddr + k * 4) & ~0xfffULL) + (imm << 12);
	op = w[k + 1] & ~A64_IMM12_MASK;
	imm12 = (w[k + 1] & A64_IMM12_MASK) >> 10;
	if (op == A64_ADD_X0_X0 && w[k + 2] == A64_RET) {
		*out = (struct v8_accessor){ .kind = V8_ACC_ADDR, .where = page + imm12 };
		return 0;
	}
	if (op == A64_LDR_W0_X0 && w[k + 2] == A64_RET) {
		*out = (struct v8_accessor){ .kind = V8_ACC_U32, .where = page + imm12 * 4 };
		return 0;
	}
	if (op != A64_LDR_X0_X0)
		return -ENOENT;
	if (w[k + 2] == A64_RET) {
		*out = (struct v8_accessor){ .kind = V8_ACC_PTR, .where = page + imm12 * 8 };
		return 0;
	}
	if (i < k + 4 || w[k + 3] != A64_RET ||
	    (w[k + 2] != A64_LDR_X0_X0 && w[k + 2] != A64_LDR_W0_X0))
		return -ENOENT;
	*out = (struct v8_accessor){ .kind = w[k + 2] == A64_LDR_X0_X0 ? V8_ACC_PTR : V8_ACC_U32,
				     .where = page + imm12 * 8,
				     .via_got = true };
	return 0;
}

/* RoundUp(len + 1, align): a builtin's instructions, at least one int3, to the alignment. */
static uint64_t padded(uint32_t len, uint32_t align)
{
	return ((uint64_t)len + align) / align * align;
}

void v8_blob__entry(const uint8_t *data, const struct v8_blob_table *t, uint32_t i, uint32_t *off,
		    uint32_t *len)
{
	const uint8_t *e = data + t->header + (size_t)i * t->stride;

	*off = load_u32(e);
	*len = load_u32(e + 4);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Do the n entries of t tile code[code_base, code_sz) exactly, each ending on an int3? */
static int table_tiles(const uint8_t *data, const struct v8_blob_table *t, const uint8_t *code,
		       size_t code_sz)
{
	uint64_t *ext = malloc((size_t)t->cnt * sizeof(*ext)), at = 0;
	uint32_t i, off, len;
	int err = 0;

	if (!ext)
		return -ENOMEM;
	for (i = 0; i < t->cnt; i++) {
		v8_blob__entry(data, t, i, &off, &len);
		if (off % t->align || t->code_base + off + len >= code_sz ||
		    code[t->code_base + off + len] != 0xcc) {
			err = -ENOENT;
			goto out;
		}
		ext[i] = (uint64_t)off << 32 | len; /* sorted by offset */
	}
	qsort(ext, t->cnt, sizeof(*ext), cmp_u64);
	for (i = 0; i < t->cnt && !err; i++) {
		if (ext[i] >> 32 != at)
			err = -ENOENT;
		at += padded((uint32_t)ext[i], t->align);
	}
	if (t->code_base + at != code_sz)
		err = -ENOENT;
out:
	free(ext);
	return err;
}

int v8_blob__table(const uint8_t *data, size_t data_sz, const uint8_t *code, size_t code_sz,
		   bool single, struct v8_blob_table *out)
{
	static const uint32_t aligns[] = { 32, 64 }, headers[] = { 16, 24, 32 },
			      strides[] = { 8, 12, 16, 20, 24, 28, 32, 36 };
	size_t a, h, s;
	int err;

	for (a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++)
		for (h = 0; h < sizeof(headers) / sizeof(headers[0]); h++)
			for (s = 0; s < sizeof(strides) / sizeof(strides[0]); s++) {
				struct v8_blob_table t = { .align = aligns[a],
							   .header = headers[h],
							   .stride = strides[s] };
				uint64_t sum = 0, base = 0;
				uint32_t off, len;

				for (t.cnt = 1; t.cnt <= V8_BUILTINS_MAX &&
						t.header + (uint64_t)t.cnt * t.stride <= data_sz;
				     t.cnt++) {
					v8_blob__entry(data, &t, t.cnt - 1, &off, &len);
					if (off % t.align || off >= code_sz)
						break;
					sum += padded(len, t.align);
					if (single)
						base = (t.header + (uint64_t)t.cnt * t.stride +
							t.align - 1) /
						       t.align * t.align;
					if (base + sum > code_sz)
						break;
					if (base + sum != code_sz)
						continue;
					t.code_base = base;
					err = table_tiles(data, &t, code, code_sz);
					if (err != -ENOENT) {
						if (!err)
							*out = t;
						return err;
					}
				}
			}
	return -ENOENT;
}

/* ---- the ELF file ---- */

/* The relocations of .rela.dyn that store addresses (RELATIVE, GLOB_DAT, 64; x86-64's or
 * AArch64's), by offset; type RELOC_RELATIVE (the addend) or RELOC_SYMBOL (a symbol + addend).
 */
enum { RELOC_RELATIVE = 1, RELOC_SYMBOL };

struct reloc {
	uint64_t where;
	int64_t addend;
	uint32_t type, sym;
};

struct relocs {
	struct reloc *r;
	size_t cnt;
};

static int cmp_reloc(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->where < y->where ? -1 : x->where > y->where;
}

static int relocs_read(struct elf_file *ef, struct relocs *rs)
{
	struct elf_section sec;
	Elf64_Rela r;
	size_t i, n;
	bool arm64 = elf_file__machine(ef) == EM_AARCH64;

	if (elf_file__section(ef, ".rela.dyn", &sec) || !sec.data)
		return 0; /* none (a non-PIE executable) */
	n = sec.size / sizeof(r);
	if (!n)
		return 0;
	if (!(rs->r = calloc(n, sizeof(*rs->r))))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint32_t type;

		memcpy(&r, (const uint8_t *)sec.data + i * sizeof(r), sizeof(r));
		type = (uint32_t)ELF64_R_TYPE(r.r_info);
		if (type == (arm64 ? R_AARCH64_RELATIVE : R_X86_64_RELATIVE))
			type = RELOC_RELATIVE;
		else if (arm64 ? type == R_AARCH64_GLOB_DAT || type == R_AARCH64_ABS64
			       : type == R_X86_64_GLOB_DAT || type == R_X86_64_64)
			type = RELOC_SYMBOL;
		else
			continue;
		rs->r[rs->cnt++] = (struct reloc){ .where = r.r_offset,
						   .addend = r.r_addend,
						   .type = type,
						   .sym = (uint32_t)ELF64_R_SYM(r.r_info) };
	}
	qsort(rs->r, rs->cnt, sizeof(*rs->r), cmp_reloc);
	return 0;
}

static const struct reloc *reloc_at(const struct relocs *rs, uint64_t where)
{
	size_t lo = 0, hi = rs->cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rs->r[mid].where < where)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rs->cnt && rs->r[lo].where == where ? &rs->r[lo] : NULL;
}

/* st_value of .dynsym symbol `index` when the file defines it; 0 or -ENOENT. */
static int dynsym_value(struct elf_file *ef, uint32_t index, uint64_t *value)
{
	struct elf_section dynsym;
	Elf64_Sym sym;

	if (elf_file__section(ef, ".dynsym", &dynsym) || !dynsym.data ||
	    index >= dynsym.size / sizeof(sym))
		return -ENOENT;
	memcpy(&sym, (const uint8_t *)dynsym.data + (size_t)index * sizeof(sym), sizeof(sym));
	if (sym.st_shndx == SHN_UNDEF)
		return -ENOENT;
	*value = sym.st_value;
	return 0;
}

/* The pointer the word at `slot` holds once ld.so relocated it (its file bytes when no
 * relocation names it: a non-PIE file); 0 or -ENOENT.
 */
static int slot_value(struct elf_file *ef, const struct relocs *rs, uint64_t slot, uint64_t *value)
{
	const struct reloc *r = reloc_at(rs, slot);
	const uint8_t *b;
	uint64_t sym;

	if (r && r->type == RELOC_RELATIVE) {
		*value = (uint64_t)r->addend;
		return 0;
	}
	if (r) {
		if (dynsym_value(ef, r->sym, &sym))
			return -ENOENT;
		*value = sym + (uint64_t)r->addend;
		return 0;
	}
	if (!(b = interp_elf__bytes(ef, slot, 8)))
		return -ENOENT;
	memcpy(value, b, sizeof(*value));
	return 0;
}

/* The PT_LOAD segment whose file image holds [vaddr, vaddr + size), or NULL. */
static const struct elf_segment *segment_of(const struct elf_file *ef, uint64_t vaddr,
					    uint64_t size)
{
	size_t i;

	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *s = elf_file__segment(ef, i);

		if (s->type == PT_LOAD && vaddr >= s->vaddr && size <= s->filesz &&
		    vaddr - s->vaddr <= s->filesz - size)
			return s;
	}
	return NULL;
}

/* What the accessor at fn returns, into *value (its kind must be one of want's bits); 0 or
 * -ENOENT.
 */
static int accessor_value(struct elf_file *ef, const struct relocs *rs, uint64_t fn,
			  unsigned int want, uint64_t *value)
{
	const struct elf_segment *s = segment_of(ef, fn, 8);
	struct v8_accessor acc;
	const uint8_t *b;
	uint64_t where;
	size_t n;

	if (!s || !(s->flags & PF_X))
		return -ENOENT;
	n = s->vaddr + s->filesz - fn < 24 ? (size_t)(s->vaddr + s->filesz - fn) : 24;
	if (!(b = interp_elf__bytes(ef, fn, n)) ||
	    (elf_file__machine(ef) == EM_AARCH64 ? v8_blob__accessor_arm64(b, n, fn, &acc)
						 : v8_blob__accessor(b, n, fn, &acc)) ||
	    !(want & 1u << acc.kind))
		return -ENOENT;
	where = acc.where;
	if (acc.via_got && slot_value(ef, rs, where, &where))
		return -ENOENT;
	switch (acc.kind) {
	case V8_ACC_ADDR:
		*value = where;
		return 0;
	case V8_ACC_PTR:
		return slot_value(ef, rs, where, value);
	case V8_ACC_U32:
		if (!(b = interp_elf__bytes(ef, where, 4)))
			return -ENOENT;
		*value = load_u32(b);
		return 0;
	}
	return -ENOENT;
}

#define WANT_ADDR (1u << V8_ACC_ADDR | 1u << V8_ACC_PTR)
#define WANT_U32 (1u << V8_ACC_U32)

/* Where the blobs are: code, code_sz, data, data_sz (vaddrs, bytes). */
struct blob_at {
	uint64_t code, code_sz, data, data_sz;
	bool single; /* V8 7-8: code == data, instructions after the table */
};

/* Is b a code blob in an executable segment and a data blob (or one blob) in the file? */
static bool blob_at__ok(const struct elf_file *ef, const struct blob_at *b)
{
	const struct elf_segment *s = segment_of(ef, b->code, b->code_sz);

	return b->code_sz && b->data_sz && b->code_sz < (1ULL << 31) && b->data_sz < (1ULL << 31) &&
	       s && (s->flags & PF_X) && segment_of(ef, b->data, b->data_sz);
}

/* A symbol of the blob's address: a label in its own segment, or a pointer variable in a
 * writable one (V8 7-10).
 */
static int blob_symbol(struct elf_file *ef, const struct relocs *rs, const struct interp_sym *s,
		       uint64_t *value)
{
	const struct elf_segment *seg;

	if (!s->found || !(seg = segment_of(ef, s->addr, 1)))
		return -ENOENT;
	if (!(seg->flags & PF_W)) {
		*value = s->addr;
		return 0;
	}
	return slot_value(ef, rs, s->addr, value);
}

static int size_symbol(struct elf_file *ef, const struct interp_sym *s, uint64_t *value)
{
	const uint8_t *b;

	if (!s->found || !(b = interp_elf__bytes(ef, s->addr, 4)))
		return -ENOENT;
	*value = load_u32(b);
	return 0;
}

enum {
	B_CODE,
	B_CODE_SZ,
	B_DATA,
	B_DATA_SZ,
	B_ONE,
	B_ONE_SZ,
	F_CODE,
	F_CODE_SZ,
	F_DATA,
	F_DATA_SZ,
	B_CNT
};

static const char *const blob_syms[B_CNT] = {
	[B_CODE] = "v8_Default_embedded_blob_code_",
	[B_CODE_SZ] = "v8_Default_embedded_blob_code_size_",
	[B_DATA] = "v8_Default_embedded_blob_data_",
	[B_DATA_SZ] = "v8_Default_embedded_blob_data_size_",
	[B_ONE] = "v8_Default_embedded_blob_",
	[B_ONE_SZ] = "v8_Default_embedded_blob_size_",
	[F_CODE] = "_ZN2v88internal23DefaultEmbeddedBlobCodeEv",
	[F_CODE_SZ] = "_ZN2v88internal27DefaultEmbeddedBlobCodeSizeEv",
	[F_DATA] = "_ZN2v88internal23DefaultEmbeddedBlobDataEv",
	[F_DATA_SZ] = "_ZN2v88internal27DefaultEmbeddedBlobDataSizeEv",
};

/* The four accessors at fn (V8_ACCESSOR_GAP apart) into *b; 0 or -ENOENT. */
static int accessors_at(struct elf_file *ef, const struct relocs *rs, uint64_t fn,
			struct blob_at *b)
{
	if (accessor_value(ef, rs, fn, WANT_ADDR, &b->code) ||
	    accessor_value(ef, rs, fn + V8_ACCESSOR_GAP, WANT_U32, &b->code_sz) ||
	    accessor_value(ef, rs, fn + 2 * V8_ACCESSOR_GAP, WANT_ADDR, &b->data) ||
	    accessor_value(ef, rs, fn + 3 * V8_ACCESSOR_GAP, WANT_U32, &b->data_sz))
		return -ENOENT;
	b->single = false;
	return blob_at__ok(ef, b) ? 0 : -ENOENT;
}

/* The blob's table and extent, checked: 0 with *t, or -ENOENT/-ENOMEM. */
static int blob_table(struct elf_file *ef, const struct blob_at *b, struct v8_blob_table *t)
{
	const uint8_t *code = interp_elf__bytes(ef, b->code, b->code_sz),
		      *data = interp_elf__bytes(ef, b->data, b->data_sz);

	if (!code || !data)
		return -ENOENT;
	return v8_blob__table(data, b->data_sz, code, b->code_sz, b->single, t);
}

/* The blobs from their symbols, their accessors' symbols, or the accessors found in the
 * executable segments: 0 with *b and *t, or -ENOENT/-ENOMEM.
 */
static int blob_find(struct elf_file *ef, const struct relocs *rs, struct blob_at *b,
		     struct v8_blob_table *t)
{
	struct interp_sym s[B_CNT];
	size_t i;
	int err;

	interp_elf__symbols(ef, blob_syms, B_CNT, s);
	*b = (struct blob_at){ 0 };
	if (!blob_symbol(ef, rs, &s[B_CODE], &b->code) &&
	    !size_symbol(ef, &s[B_CODE_SZ], &b->code_sz) &&
	    !blob_symbol(ef, rs, &s[B_DATA], &b->data) &&
	    !size_symbol(ef, &s[B_DATA_SZ], &b->data_sz) && blob_at__ok(ef, b) &&
	    (err = blob_table(ef, b, t)) != -ENOENT)
		return err;
	*b = (struct blob_at){ .single = true };
	if (!blob_symbol(ef, rs, &s[B_ONE], &b->code) &&
	    !size_symbol(ef, &s[B_ONE_SZ], &b->code_sz)) {
		b->data = b->code;
		b->data_sz = b->code_sz;
		if (blob_at__ok(ef, b) && (err = blob_table(ef, b, t)) != -ENOENT)
			return err;
	}
	if (s[F_CODE].found && !accessors_at(ef, rs, s[F_CODE].addr, b) &&
	    (err = blob_table(ef, b, t)) != -ENOENT)
		return err;
	/* Stripped of those too: the accessors by their shape. */
	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *seg = elf_file__segment(ef, i);
		const uint8_t *bytes;
		uint64_t fn;

		if (seg->type != PT_LOAD || !(seg->flags & PF_X) || seg->filesz < 64 ||
		    !(bytes = interp_elf__bytes(ef, seg->vaddr, seg->filesz)))
			continue;
		for (fn = (seg->vaddr + 15) & ~15ULL; fn + 64 <= seg->vaddr + seg->filesz;
		     fn += 16) {
			const uint8_t *c = bytes + (fn - seg->vaddr);

			if (c[0] != 0x48 && c[0] != 0xf3 && c[0] != 0x8b &&
			    (load_u32(c) & 0x9f00001fu) != 0x90000000u && load_u32(c) != A64_BTI_C)
				continue;
			if (accessors_at(ef, rs, fn, b))
				continue;
			if ((err = blob_table(ef, b, t)) != -ENOENT)
				return err;
		}
	}
	return -ENOENT;
}

/* The NUL-terminated identifier at vaddr (at most V8_BUILTIN_NAME_MAX - 1 bytes), or NULL. */
static const char *ident_at(const struct elf_file *ef, uint64_t vaddr)
{
	const void *data;
	const char *s;
	size_t avail, i;

	if (!vaddr || elf_file__bytes_at_vaddr(ef, vaddr, &data, &avail))
		return NULL;
	s = data;
	for (i = 0; i < avail && i < V8_BUILTIN_NAME_MAX; i++) {
		char c = s[i];

		if (!c)
			return i ? s : NULL;
		if (!(c == '_' || (c >= '0' && c <= '9') ||
		      ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
			return NULL;
	}
	return NULL;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* Names stored by code into the slots [lo, lo + n * V8_META_SIZE): `lea d(%rip), %reg` then,
 * within V8_STORE_BACK bytes, `mov %reg, slot(%rip)`; into names[] where still 0.
 */
static void stored_names(const struct elf_file *ef, uint64_t lo, size_t n, uint64_t *names)
{
	size_t i;

	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *seg = elf_file__segment(ef, i);
		const uint8_t *b;
		uint64_t p, q;

		if (seg->type != PT_LOAD || !(seg->flags & PF_X) || seg->filesz < 16 ||
		    !(b = interp_elf__bytes(ef, seg->vaddr, seg->filesz)))
			continue;
		for (p = 8; p + 7 <= seg->filesz; p++) {
			uint64_t slot, k, name;

			if ((b[p] != 0x48 && b[p] != 0x4c) || b[p + 1] != 0x89 ||
			    (b[p + 2] & 0xc7) != 0x05)
				continue;
			slot = seg->vaddr + p + 7 + (int64_t)load_s32(b + p + 3);
			if (slot < lo || (slot - lo) % V8_META_SIZE ||
			    (k = (slot - lo) / V8_META_SIZE) >= n || names[k])
				continue;
			for (q = p - 7; q + V8_STORE_BACK >= p && q < p; q--) {
				if (b[q] != b[p] || b[q + 1] != 0x8d || b[q + 2] != b[p + 2])
					continue;
				name = seg->vaddr + q + 7 + (int64_t)load_s32(b + q + 3);
				if (ident_at(ef, name))
					names[k] = name;
				break;
			}
		}
	}
}

/* builtin_metadata's names in builtin order (cnt of them, as vaddrs) into names[]: the run of
 * named entries around the one naming the "JSEntry" at `str`; 0 or -ENOENT/-ENOMEM.
 */
static int names_around(struct elf_file *ef, const struct relocs *rs, uint64_t entry, size_t cnt,
			uint64_t *names)
{
	uint64_t lo, *win;
	size_t n = 2 * cnt - 1, j, first, last;
	int err = -ENOENT;

	if (entry < (cnt - 1) * V8_META_SIZE)
		return -ENOENT;
	lo = entry - (cnt - 1) * V8_META_SIZE;
	if (!(win = calloc(n, sizeof(*win))))
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		const struct reloc *r = reloc_at(rs, lo + j * V8_META_SIZE);

		if (r && r->type == RELOC_RELATIVE && ident_at(ef, (uint64_t)r->addend))
			win[j] = (uint64_t)r->addend;
	}
	stored_names(ef, lo, n, win);
	for (first = cnt - 1; first > 0 && win[first - 1]; first--)
		;
	for (last = cnt - 1; last + 1 < n && win[last + 1]; last++)
		;
	/* A run longer than the table (a neighbour's word naming something): the table ends
	 * with the bytecode handlers' names.
	 */
	if (last - first + 1 > cnt && ends_with(ident_at(ef, win[last]), "Handler"))
		first = last + 1 - cnt;
	if (last - first + 1 == cnt) {
		memcpy(names, win + first, cnt * sizeof(*names));
		err = 0;
	}
	free(win);
	return err;
}

/* The builtins' names (vaddrs, builtin order) into names[cnt]: 0 or -ENOENT/-ENOMEM. */
static int builtin_names(struct elf_file *ef, const struct relocs *rs, size_t cnt, uint64_t *names)
{
	static const char key[] = "JSEntry";
	size_t i, k;
	int err;

	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *seg = elf_file__segment(ef, i);
		const uint8_t *b, *at;
		size_t left;

		/* read-only data: its own segment, or the text's (arm64 links without
		 * -z separate-code: .rodata shares the executable segment)
		 */
		if (seg->type != PT_LOAD || (seg->flags & PF_W) ||
		    !(b = interp_elf__bytes(ef, seg->vaddr, seg->filesz)))
			continue;
		for (at = b, left = seg->filesz; (at = memmem(at, left, key, sizeof(key))) != NULL;
		     at++, left = seg->filesz - (size_t)(at - b)) {
			uint64_t str = seg->vaddr + (uint64_t)(at - b);

			for (k = 0; k < rs->cnt; k++) {
				if (rs->r[k].type != RELOC_RELATIVE ||
				    (uint64_t)rs->r[k].addend != str)
					continue;
				if ((err = names_around(ef, rs, rs->r[k].where, cnt, names)) !=
				    -ENOENT)
					return err;
			}
			if ((size_t)(at - b) + 1 >= seg->filesz)
				break;
		}
	}
	return -ENOENT;
}

static int cmp_builtin(const void *a, const void *b)
{
	const struct v8_builtin *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Names and handlers of the builtins (builtin order in out->builtins), then sorted. */
static int name_builtins(struct elf_file *ef, const struct relocs *rs, struct v8_blob *out)
{
	uint64_t *names = calloc(out->builtin_cnt, sizeof(*names)), lo = UINT64_MAX;
	size_t i, bytes = 0, used = 0, wide = SIZE_MAX, end = 0;
	int err;

	if (!names)
		return -ENOMEM;
	if ((err = builtin_names(ef, rs, out->builtin_cnt, names)))
		goto out;
	for (i = 0; i < out->builtin_cnt; i++) {
		const char *nm = ident_at(ef, names[i]);

		if (!nm) {
			err = -ENOENT;
			goto out;
		}
		bytes += strlen(nm) + sizeof("[v8] ");
	}
	if (!(out->names = malloc(bytes))) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < out->builtin_cnt; i++) {
		const char *nm = ident_at(ef, names[i]);

		out->builtins[i].name = (uint32_t)used;
		used += (size_t)snprintf(out->names + used, bytes - used, "[v8] %s", nm) + 1;
		if (wide == SIZE_MAX && !strcmp(nm, "WideHandler"))
			wide = i;
		if (wide != SIZE_MAX && !ends_with(nm, "Handler"))
			wide = SIZE_MAX - 1; /* not the handlers' run */
	}
	/* The handlers: builtins wide.. must be the blob's tail, and only they. */
	if (wide < out->builtin_cnt) {
		for (i = wide; i < out->builtin_cnt; i++) {
			if (out->builtins[i].off < lo)
				lo = out->builtins[i].off;
			if (out->builtins[i].off + out->builtins[i].size > end)
				end = out->builtins[i].off + out->builtins[i].size;
		}
		for (i = 0; i < wide && out->builtins[i].off < lo; i++)
			;
		if (i == wide && end == out->code_sz)
			out->handlers_lo = out->code + lo;
	}
out:
	free(names);
	return err;
}

int v8_blob__find(struct elf_file *ef, struct v8_blob *out)
{
	struct relocs rs = { 0 };
	struct v8_blob_table t;
	struct blob_at b;
	const uint8_t *data;
	uint32_t i, off, len;
	int err;

	*out = (struct v8_blob){ 0 };
	if ((err = relocs_read(ef, &rs)) || (err = blob_find(ef, &rs, &b, &t)))
		goto out;
	data = interp_elf__bytes(ef, b.data, b.data_sz);
	out->code = b.code + t.code_base;
	out->code_sz = b.code_sz - t.code_base;
	if (!(out->builtins = calloc(t.cnt, sizeof(*out->builtins)))) {
		err = -ENOMEM;
		goto out;
	}
	out->builtin_cnt = t.cnt;
	for (i = 0; i < t.cnt; i++) {
		v8_blob__entry(data, &t, i, &off, &len);
		out->builtins[i] = (struct v8_builtin){ .off = off,
							.size = (uint32_t)padded(len, t.align),
							.name = UINT32_MAX };
	}
	if (name_builtins(ef, &rs, out) == -ENOMEM) {
		err = -ENOMEM;
		goto out;
	}
	qsort(out->builtins, out->builtin_cnt, sizeof(*out->builtins), cmp_builtin);
out:
	free(rs.r);
	return err;
}

const char *v8_blob__name(const struct v8_blob *b, uint64_t vaddr)
{
	size_t lo = 0, hi = b->builtin_cnt;
	uint64_t off;

	if (!b->names || vaddr < b->code || vaddr - b->code >= b->code_sz)
		return NULL;
	off = vaddr - b->code;
	while (lo < hi) { /* the last builtin starting at or before off */
		size_t mid = lo + (hi - lo) / 2;

		if (b->builtins[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || off - b->builtins[lo - 1].off >= b->builtins[lo - 1].size ||
	    b->builtins[lo - 1].name == UINT32_MAX)
		return NULL;
	return b->names + b->builtins[lo - 1].name;
}

void v8_blob__free(struct v8_blob *b)
{
	if (!b)
		return;
	free(b->builtins);
	free(b->names);
	*b = (struct v8_blob){ 0 };
}
