/* libruby's x86-64 code as a source of its layout (see ruby_code.h). */
#include <errno.h>
#include <string.h>

#include "interp/ruby/ruby_code.h"

/* A bounded reader over one function's bytes. */
struct insn_reader {
	const uint8_t *code;
	size_t size, pos;
	uint64_t addr; /* vaddr of code[0] */
};

/* Consume `n` bytes equal to `bytes` at the cursor: true when they are there. */
static bool take(struct insn_reader *r, const char *bytes, size_t n)
{
	if (r->pos + n > r->size || memcmp(r->code + r->pos, bytes, n))
		return false;
	r->pos += n;
	return true;
}

static bool take_s32(struct insn_reader *r, int32_t *v)
{
	if (r->pos + 4 > r->size)
		return false;
	memcpy(v, r->code + r->pos, 4);
	r->pos += 4;
	return true;
}

static bool take_s8(struct insn_reader *r, int32_t *v)
{
	if (r->pos + 1 > r->size)
		return false;
	*v = (int8_t)r->code[r->pos++];
	return true;
}

/* The function's preamble gcc may emit: endbr64, then `sub $8, %rsp` (a call follows). */
static void skip_preamble(struct insn_reader *r)
{
	take(r, "\xf3\x0f\x1e\xfa", 4);
	take(r, "\x48\x83\xec\x08", 4);
}

/* `mov disp(%rax), %rax` with an 8- or 32-bit displacement (48 8b 40 d8, 48 8b 80 d32), or
 * `mov (%rax), %rax` (48 8b 00: disp 0) when allow_zero.
 */
static bool take_load_rax(struct insn_reader *r, bool allow_zero, int32_t *disp)
{
	if (allow_zero && take(r, "\x48\x8b\x00", 3)) {
		*disp = 0;
		return true;
	}
	if (take(r, "\x48\x8b\x40", 3))
		return take_s8(r, disp);
	if (take(r, "\x48\x8b\x80", 3))
		return take_s32(r, disp);
	return false;
}

/* A RIP-relative reference loaded into %rax, then the pointer it leads to:
 *   lea var(%rip), %rax; mov (%rax), %rax         -> var
 *   mov var@GOTPCREL(%rip), %rax; mov (%rax), %rax -> the GOT slot of var
 *   mov var(%rip), %rax                            -> var (loaded directly)
 * On return %rax (in the code) holds the pointer's value.
 */
static bool take_pointer(struct insn_reader *r, struct ruby_code_ref *ref)
{
	bool lea, got;
	int32_t disp;

	lea = take(r, "\x48\x8d\x05", 3);
	if (!lea && !take(r, "\x48\x8b\x05", 3))
		return false;
	if (!take_s32(r, &disp))
		return false;
	ref->vaddr = r->addr + r->pos + (int64_t)disp;
	got = take(r, "\x48\x8b\x00", 3);
	if (lea && !got)
		return false; /* lea gives an address: its value must be loaded */
	ref->via_got = !lea && got;
	return true;
}

int ruby_code__errinfo(const uint8_t *code, size_t size, uint64_t addr, struct ruby_ec_access *out)
{
	struct insn_reader r = { code, size, 0, addr };
	int32_t disp, rel;
	size_t at;

	memset(out, 0, sizeof(*out));
	skip_preamble(&r);
	at = r.pos;
	/* thread-local: [data16] lea pair(%rip), %rdi; [data16 data16 rex.W] call __tls_get_addr
	 * (direct, or *GOT(%rip) without a PLT); mov off(%rax), %rax
	 */
	take(&r, "\x66", 1);
	if (take(&r, "\x48\x8d\x3d", 3)) {
		if (!take_s32(&r, &disp))
			return -ENOENT;
		out->kind = RUBY_EC_TLS;
		out->tls_pair = addr + r.pos + (int64_t)disp;
		take(&r, "\x66", 1);
		take(&r, "\x66", 1);
		take(&r, "\x48", 1);
		if (!take(&r, "\xe8", 1) && !take(&r, "\xff\x15", 2))
			return -ENOENT;
		if (!take_s32(&r, &rel) || !take_load_rax(&r, true, &out->tls_add))
			return -ENOENT;
	} else {
		r.pos = at;
		if (!take_pointer(&r, &out->global))
			return -ENOENT;
		out->kind = RUBY_EC_GLOBAL;
	}
	if (!take_load_rax(&r, false, &disp) || disp < 0)
		return -ENOENT;
	out->errinfo = (uint32_t)disp;
	return 0;
}

int ruby_code__during_gc(const uint8_t *code, size_t size, uint64_t addr,
			 struct ruby_gc_access *out)
{
	struct insn_reader r = { code, size, 0, addr };
	int32_t disp, byte, shift = 0;
	bool word;

	memset(out, 0, sizeof(*out));
	skip_preamble(&r);
	if (!take_pointer(&r, &out->vm_ptr))
		return -ENOENT;
	/* a NULL check (3.3): test %rax, %rax; je short */
	if (take(&r, "\x48\x85\xc0", 3) && (!take(&r, "\x74", 1) || !take_s8(&r, &disp)))
		return -ENOENT;
	if (!take_load_rax(&r, false, &disp) || disp < 0)
		return -ENOENT;
	out->vm_objspace = (uint32_t)disp;
	/* the flags: movzbl off(%rax), %eax (one byte of the word) or mov off(%rax), %eax */
	word = false;
	if (take(&r, "\x0f\xb6\x40", 3)) {
		if (!take_s8(&r, &byte))
			return -ENOENT;
	} else if (take(&r, "\x0f\xb6\x80", 3)) {
		if (!take_s32(&r, &byte))
			return -ENOENT;
	} else if (take(&r, "\x8b\x40", 2)) {
		if (!take_s8(&r, &byte))
			return -ENOENT;
		word = true;
	} else {
		return -ENOENT;
	}
	if (byte < 0 || (word && byte & 3))
		return -ENOENT;
	/* shr $n, %al / %eax (absent for bit 0), then and $1 */
	if ((take(&r, "\xc0\xe8", 2) || take(&r, "\xc1\xe8", 2)) && !take_s8(&r, &shift))
		return -ENOENT;
	if (!take(&r, "\x83\xe0\x01", 3) && !take(&r, "\x24\x01", 2))
		return -ENOENT;
	if (shift < 0 || shift >= (word ? 32 : 8))
		return -ENOENT;
	out->flags_off = (uint32_t)byte & ~3u;
	out->gc_running = 1u << ((word ? 0 : (byte & 3) * 8) + shift);
	return 0;
}

int ruby_code__native_thread_key(const uint8_t *code, size_t size, uint64_t addr, uint64_t *key)
{
	struct insn_reader r = { code, size, 0, addr };
	int32_t disp, rel;

	skip_preamble(&r);
	/* mov key(%rip), %edi; call pthread_getspecific (direct, or *GOT(%rip)) */
	if (!take(&r, "\x8b\x3d", 2) || !take_s32(&r, &disp))
		return -ENOENT;
	*key = addr + r.pos + (int64_t)disp;
	if ((!take(&r, "\xe8", 1) && !take(&r, "\xff\x15", 2)) || !take_s32(&r, &rel))
		return -ENOENT;
	return 0;
}

int ruby_code__last_op_id(const uint8_t *code, size_t size, uint32_t *last_op)
{
	size_t i;

	/* cmp $imm32, %rdi: 48 81 ff imm32, among the first instructions */
	for (i = 0; i + 7 <= size && i < 32; i++) {
		if (code[i] != 0x48 || code[i + 1] != 0x81 || code[i + 2] != 0xff)
			continue;
		memcpy(last_op, code + i + 3, 4);
		return *last_op && *last_op < 0x10000 ? 0 : -ENOENT;
	}
	return -ENOENT;
}

size_t ruby_code__indirect_jumps(const uint8_t *code, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i + 1 < size; i++)
		n += code[i] == 0xff && ((code[i + 1] >> 3) & 7) == 4;
	return n;
}

size_t ruby_code__branch_targets(const uint8_t *code, size_t size, uint64_t addr, uint64_t *out,
				 size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i + 5 <= size && n < cap; i++) {
		uint64_t target;
		int32_t rel;

		if (code[i] != 0xe8 && code[i] != 0xe9)
			continue;
		memcpy(&rel, code + i + 1, 4);
		target = addr + i + 5 + (int64_t)rel;
		if (target < addr || target >= addr + size)
			out[n++] = target;
	}
	return n;
}
