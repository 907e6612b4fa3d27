/* libruby's code as a source of its layout (src/interp/ruby/ruby_code.c): the accessors as
 * gcc compiles them in Debian's libruby-2.7.4, -3.1.2 and -3.3.8 (their bytes written here
 * from objdump's listing of each, at the addresses they have there) and the shapes the
 * decoders also accept (local-dynamic TLS, a directly loaded pointer, another flags byte);
 * every cut-short sequence refused; random and mutated bytes read within their buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "random_buffers.h"
#include "test.h"
#include "interp/ruby/ruby_code.h"

/* rb_errinfo, 3.1.2 at 0xbc4d0: general-dynamic TLS (ruby_current_ec exported) */
static const uint8_t errinfo_31[] = {
	0x48, 0x83, 0xec, 0x08,                         /* sub $8, %rsp */
	0x66, 0x48, 0x8d, 0x3d, 0x6c, 0x15, 0x2f, 0x00, /* data16 lea pair(%rip), %rdi */
	0x66, 0x66, 0x48, 0xe8, 0x0c, 0x93, 0xf7, 0xff, /* call __tls_get_addr */
	0x48, 0x8b, 0x00,                               /* mov (%rax), %rax */
	0x48, 0x8b, 0x40, 0x70,                         /* mov 0x70(%rax), %rax */
	0x48, 0x83, 0xc4, 0x08, 0xc3,
};

/* rb_errinfo, 3.3.8 (trixie) at 0xe6f10: endbr64, then the same (ruby_current_ec hidden) */
static const uint8_t errinfo_33[] = {
	0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x66, 0x48, 0x8d, 0x3d,
	0xb0, 0x3b, 0x37, 0x00, 0x66, 0x66, 0x48, 0xe8, 0xd8, 0x87, 0xf5, 0xff,
	0x48, 0x8b, 0x00, 0x48, 0x8b, 0x40, 0x78, 0x48, 0x83, 0xc4, 0x08, 0xc3,
};

/* rb_errinfo, 2.7.4 at 0xb1590: the global ruby_current_execution_context_ptr via the GOT */
static const uint8_t errinfo_27[] = {
	0x48, 0x8b, 0x05, 0x31, 0x17, 0x29, 0x00, /* mov GOT(%rip), %rax */
	0x48, 0x8b, 0x00,                         /* mov (%rax), %rax */
	0x48, 0x8b, 0x40, 0x78,                   /* mov 0x78(%rax), %rax */
	0xc3,
};

/* rb_during_gc, 2.7.4 at 0xc2210 */
static const uint8_t during_gc_27[] = {
	0x48, 0x8b, 0x05, 0xf9, 0x0a, 0x28, 0x00, /* mov GOT(%rip), %rax */
	0x48, 0x8b, 0x00,                         /* mov (%rax), %rax */
	0x48, 0x8b, 0x80, 0x80, 0x04, 0x00, 0x00, /* mov 0x480(%rax), %rax */
	0x0f, 0xb6, 0x40, 0x10,                   /* movzbl 0x10(%rax), %eax */
	0xc0, 0xe8, 0x05,                         /* shr $5, %al */
	0x83, 0xe0, 0x01,                         /* and $1, %eax */
	0xc3,
};

/* rb_during_gc, 3.3.8 (trixie) at 0xf9060 */
static const uint8_t during_gc_33[] = {
	0xf3, 0x0f, 0x1e, 0xfa,                   /* endbr64 */
	0x48, 0x8d, 0x05, 0x7d, 0x2b, 0x37, 0x00, /* lea ruby_current_vm_ptr(%rip), %rax */
	0x48, 0x8b, 0x00,                         /* mov (%rax), %rax */
	0x48, 0x85, 0xc0, 0x74, 0x15,             /* test %rax, %rax; je */
	0x48, 0x8b, 0x80, 0x18, 0x05, 0x00, 0x00, /* mov 0x518(%rax), %rax */
	0x0f, 0xb6, 0x40, 0x10,                   /* movzbl 0x10(%rax), %eax */
	0xc0, 0xe8, 0x05,                         /* shr $5, %al */
	0x83, 0xe0, 0x01,                         /* and $1, %eax */
	0xc3,
};

/* ruby_native_thread_p, 2.7.4 at 0x1f02a0 */
static const uint8_t native_thread_p_27[] = {
	0x48, 0x83, 0xec, 0x08,             /* sub $8, %rsp */
	0x8b, 0x3d, 0x3e, 0x91, 0x16, 0x00, /* mov key(%rip), %edi */
	0xe8, 0x91, 0xd0, 0xe3, 0xff,       /* call pthread_getspecific */
	0x48, 0x85, 0xc0, 0x0f, 0x95, 0xc0,
};

/* rb_id2str, 2.7.4: the operator ids end at 0xa8 */
static const uint8_t id2str_27[] = {
	0x48, 0x89, 0xf8, 0x48, 0xc1, 0xe8, 0x04, 0x48, 0x81, 0xff, 0xa8, 0x00, 0x00, 0x00,
};

TEST(errinfo)
{
	struct ruby_ec_access ec;
	uint8_t code[64];

	CHECK_EQ_INT(ruby_code__errinfo(errinfo_31, sizeof(errinfo_31), 0xbc4d0, &ec), 0);
	CHECK_EQ_INT(ec.kind, RUBY_EC_TLS);
	CHECK_EQ_U64(ec.tls_pair, 0x3ada48);
	CHECK_EQ_INT(ec.tls_add, 0);
	CHECK_EQ_INT(ec.errinfo, 0x70);

	CHECK_EQ_INT(ruby_code__errinfo(errinfo_33, sizeof(errinfo_33), 0xe6f10, &ec), 0);
	CHECK_EQ_INT(ec.kind, RUBY_EC_TLS);
	CHECK_EQ_U64(ec.tls_pair, 0x45aad0);
	CHECK_EQ_INT(ec.errinfo, 0x78);

	CHECK_EQ_INT(ruby_code__errinfo(errinfo_27, sizeof(errinfo_27), 0xb1590, &ec), 0);
	CHECK_EQ_INT(ec.kind, RUBY_EC_GLOBAL);
	CHECK_EQ_U64(ec.global.vaddr, 0x342cc8);
	CHECK_EQ_INT(ec.global.via_got, 1);
	CHECK_EQ_INT(ec.errinfo, 0x78);

	/* local-dynamic: lea, plain call, the variable's offset in the load after it */
	memcpy(code,
	       "\x48\x8d\x3d\x00\x01\x00\x00\xe8\x00\x00\x00\x00"
	       "\x48\x8b\x80\x10\x00\x00\x00\x48\x8b\x40\x78\xc3",
	       24);
	CHECK_EQ_INT(ruby_code__errinfo(code, 24, 0x1000, &ec), 0);
	CHECK_EQ_U64(ec.tls_pair, 0x1107);
	CHECK_EQ_INT(ec.tls_add, 16);
	CHECK_EQ_INT(ec.errinfo, 0x78);

	/* a pointer loaded directly (not through the GOT): the variable itself */
	memcpy(code, "\x48\x8b\x05\x10\x00\x00\x00\x48\x8b\x80\x00\x01\x00\x00\xc3", 15);
	CHECK_EQ_INT(ruby_code__errinfo(code, 15, 0x2000, &ec), 0);
	CHECK_EQ_INT(ec.kind, RUBY_EC_GLOBAL);
	CHECK_EQ_U64(ec.global.vaddr, 0x2017);
	CHECK_EQ_INT(ec.global.via_got, 0);
	CHECK_EQ_INT(ec.errinfo, 0x100);

	/* a lea whose pointer is not loaded, another register: not understood */
	memcpy(code, "\x48\x8d\x05\x10\x00\x00\x00\x48\x8b\x40\x78\xc3", 12);
	CHECK_EQ_INT(ruby_code__errinfo(code, 12, 0x2000, &ec), -ENOENT);
	memcpy(code, "\x48\x8b\x0d\x10\x00\x00\x00\x48\x8b\x01\x48\x8b\x41\x78", 14);
	CHECK_EQ_INT(ruby_code__errinfo(code, 14, 0x2000, &ec), -ENOENT);
}

TEST(during_gc)
{
	struct ruby_gc_access gc;
	uint8_t code[64];

	CHECK_EQ_INT(ruby_code__during_gc(during_gc_27, sizeof(during_gc_27), 0xc2210, &gc), 0);
	CHECK_EQ_U64(gc.vm_ptr.vaddr, 0x342d10);
	CHECK_EQ_INT(gc.vm_ptr.via_got, 1);
	CHECK_EQ_INT(gc.vm_objspace, 0x480);
	CHECK_EQ_INT(gc.flags_off, 16);
	CHECK_EQ_INT(gc.gc_running, 1 << 5);

	CHECK_EQ_INT(ruby_code__during_gc(during_gc_33, sizeof(during_gc_33), 0xf9060, &gc), 0);
	CHECK_EQ_U64(gc.vm_ptr.vaddr, 0x46bbe8);
	CHECK_EQ_INT(gc.vm_ptr.via_got, 0);
	CHECK_EQ_INT(gc.vm_objspace, 0x518);
	CHECK_EQ_INT(gc.gc_running, 1 << 5);

	/* the bit in the word's second byte */
	memcpy(code, during_gc_27, sizeof(during_gc_27));
	code[20] = 0x11; /* movzbl 0x11(%rax) */
	code[23] = 0x02; /* shr $2 */
	CHECK_EQ_INT(ruby_code__during_gc(code, sizeof(during_gc_27), 0xc2210, &gc), 0);
	CHECK_EQ_INT(gc.flags_off, 16);
	CHECK_EQ_INT(gc.gc_running, 1 << 10);
	/* a 32-bit load of the word and bit 0: no shift */
	memcpy(code,
	       "\x48\x8d\x05\x00\x00\x00\x00\x48\x8b\x00\x48\x8b\x40\x20\x8b\x40\x08"
	       "\x83\xe0\x01\xc3",
	       21);
	CHECK_EQ_INT(ruby_code__during_gc(code, 21, 0x3000, &gc), 0);
	CHECK_EQ_INT(gc.vm_objspace, 0x20);
	CHECK_EQ_INT(gc.flags_off, 8);
	CHECK_EQ_INT(gc.gc_running, 1);
	/* a shift past the byte loaded */
	memcpy(code, during_gc_27, sizeof(during_gc_27));
	code[23] = 0x08;
	CHECK_EQ_INT(ruby_code__during_gc(code, sizeof(during_gc_27), 0, &gc), -ENOENT);
}

TEST(native_thread_key_and_last_op)
{
	uint64_t key = 0;
	uint32_t last_op = 0;

	CHECK_EQ_INT(ruby_code__native_thread_key(native_thread_p_27, sizeof(native_thread_p_27),
						  0x1f02a0, &key),
		     0);
	CHECK_EQ_U64(key, 0x3593e8);
	CHECK_EQ_INT(ruby_code__native_thread_key(errinfo_31, sizeof(errinfo_31), 0, &key),
		     -ENOENT);
	CHECK_EQ_INT(ruby_code__last_op_id(id2str_27, sizeof(id2str_27), &last_op), 0);
	CHECK_EQ_INT(last_op, 0xa8);
	CHECK_EQ_INT(ruby_code__last_op_id(errinfo_27, sizeof(errinfo_27), &last_op), -ENOENT);
}

TEST(jumps_and_targets)
{
	/* jmp *%rax (ff e0), jmp *0x8(%rbx) (ff 63 08), call *%rax (ff d0: not a jump) */
	static const uint8_t jumps[] = { 0xff, 0xe0, 0x90, 0xff, 0x63, 0x08, 0xff, 0xd0 };
	/* call +0x100, jmp -0x20, call to itself (inside: not a target) */
	static const uint8_t calls[] = { 0xe8, 0x00, 0x01, 0x00, 0x00, 0xe9, 0xe0, 0xff,
					 0xff, 0xff, 0xe8, 0xf1, 0xff, 0xff, 0xff };
	uint64_t out[4];

	CHECK_EQ_INT((int)ruby_code__indirect_jumps(jumps, sizeof(jumps)), 2);
	CHECK_EQ_INT((int)ruby_code__branch_targets(calls, sizeof(calls), 0x1000, out, 4), 2);
	CHECK_EQ_U64(out[0], 0x1105);
	CHECK_EQ_U64(out[1], 0xfea);
	CHECK_EQ_INT((int)ruby_code__branch_targets(calls, sizeof(calls), 0x1000, out, 1), 1);
}

enum decoder { ERRINFO, DURING_GC, THREAD_KEY };

/* Every strict prefix of a sequence its decoder accepts is refused, read within its length. */
static void check_prefixes(enum decoder d, const uint8_t *code, size_t needed)
{
	struct ruby_ec_access ec;
	struct ruby_gc_access gc;
	uint64_t key;
	size_t n;
	int err;

	for (n = 0; n < needed; n++) {
		uint8_t *buf = malloc(n ? n : 1);

		REQUIRE(buf);
		memcpy(buf, code, n);
		if (d == ERRINFO)
			err = ruby_code__errinfo(buf, n, 0, &ec);
		else if (d == DURING_GC)
			err = ruby_code__during_gc(buf, n, 0, &gc);
		else
			err = ruby_code__native_thread_key(buf, n, 0, &key);
		CHECK_EQ_INT(err, -ENOENT);
		free(buf);
	}
}

TEST(cut_short)
{
	check_prefixes(ERRINFO, errinfo_31, sizeof(errinfo_31) - 5);
	check_prefixes(ERRINFO, errinfo_33, sizeof(errinfo_33) - 5);
	check_prefixes(ERRINFO, errinfo_27, sizeof(errinfo_27) - 1);
	check_prefixes(DURING_GC, during_gc_27, sizeof(during_gc_27) - 1);
	check_prefixes(DURING_GC, during_gc_33, sizeof(during_gc_33) - 1);
	check_prefixes(THREAD_KEY, native_thread_p_27, sizeof(native_thread_p_27) - 6);
}

static void decode_random(const uint8_t *buf, size_t len, unsigned int i, unsigned int *seed)
{
	static const uint8_t *const valid[] = { errinfo_31, errinfo_27, during_gc_27, during_gc_33,
						native_thread_p_27 };
	static const size_t valid_sz[] = { sizeof(errinfo_31), sizeof(errinfo_27),
					   sizeof(during_gc_27), sizeof(during_gc_33),
					   sizeof(native_thread_p_27) };
	struct ruby_ec_access ec;
	struct ruby_gc_access gc;
	uint64_t key, targets[8];
	uint32_t last_op;
	uint8_t *mut;
	size_t k = i % 5, n = valid_sz[k];

	ruby_code__errinfo(buf, len, 0, &ec);
	ruby_code__during_gc(buf, len, 0, &gc);
	ruby_code__native_thread_key(buf, len, 0, &key);
	ruby_code__last_op_id(buf, len, &last_op);
	ruby_code__indirect_jumps(buf, len);
	ruby_code__branch_targets(buf, len, 0, targets, 8);
	ruby_code__errinfo_arm64(buf, len, 0, &ec);
	ruby_code__during_gc_arm64(buf, len, 0, &gc);
	ruby_code__indirect_jumps_arm64(buf, len);
	ruby_code__branch_targets_arm64(buf, len, 0, targets, 8);
	/* a valid sequence with one byte changed, in a buffer of its exact size */
	mut = malloc(n);
	REQUIRE(mut);
	memcpy(mut, valid[k], n);
	mut[(size_t)rand_r(seed) % n] = (uint8_t)rand_r(seed);
	ruby_code__errinfo(mut, n, 0, &ec);
	ruby_code__during_gc(mut, n, 0, &gc);
	ruby_code__native_thread_key(mut, n, 0, &key);
	free(mut);
}

/* Debian 12's arm64 libruby-3.1.so.3.1 (3.1.2): rb_errinfo at 0xb6910, little-endian words */
static const uint32_t errinfo_31_arm64[] = {
	0xd53bd041, /* mrs x1, tpidr_el0 */
	0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
	0x910003fd, /* mov x29, sp */
	0xb0001640, /* adrp x0, 0x37f000 */
	0xf941f402, /* ldr x2, [x0, #1000] */
	0x910fa000, /* add x0, x0, #0x3e8 */
	0xd63f0040, /* blr x2 */
	0xf8606820, /* ldr x0, [x1, x0] */
	0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
	0xf9403800, /* ldr x0, [x0, #112] */
	0xd65f03c0, /* ret */
};

/* its rb_during_gc at 0xc96c4 */
static const uint32_t during_gc_31_arm64[] = {
	0xd00015a0, /* adrp x0, 0x37f000 */
	0xf9460000, /* ldr x0, [x0, #3072]: the GOT slot of ruby_current_vm_ptr */
	0xf9400000, /* ldr x0, [x0] */
	0xf9423400, /* ldr x0, [x0, #1128] */
	0xf9400800, /* ldr x0, [x0, #16] */
	0x53051400, /* ubfx w0, w0, #5, #1 */
	0xd65f03c0, /* ret */
};

TEST(arm64)
{
	struct ruby_gc_access gc;
	uint32_t gc_code[7];
	uint32_t code[16], br[4] = { 0xd61f0060, 0x94000010, 0x17fffffe, 0xd63f0040 };
	struct ruby_ec_access ec;
	uint64_t targets[4];

	CHECK_EQ_INT(ruby_code__errinfo_arm64((const uint8_t *)errinfo_31_arm64,
					      sizeof(errinfo_31_arm64), 0xb6910, &ec),
		     0);
	CHECK_EQ_INT(ec.kind, RUBY_EC_TLSDESC);
	CHECK_EQ_U64(ec.tls_pair, 0x37f3e8); /* R_AARCH64_TLSDESC of ruby_current_ec */
	CHECK_EQ_INT(ec.errinfo, 112);
	/* cut before the ret, or the descriptor's add naming another slot: not understood */
	CHECK_EQ_INT(ruby_code__errinfo_arm64((const uint8_t *)errinfo_31_arm64,
					      sizeof(errinfo_31_arm64) - 4, 0xb6910, &ec),
		     -ENOENT);
	memcpy(code, errinfo_31_arm64, sizeof(errinfo_31_arm64));
	code[5] = 0x910fa400; /* add x0, x0, #0x3e9 */
	CHECK_EQ_INT(ruby_code__errinfo_arm64((const uint8_t *)code, sizeof(errinfo_31_arm64),
					      0xb6910, &ec),
		     -ENOENT);
	/* the EC loaded from another register than tpidr_el0's */
	memcpy(code, errinfo_31_arm64, sizeof(errinfo_31_arm64));
	code[7] = 0xf8606840; /* ldr x0, [x2, x0] */
	CHECK_EQ_INT(ruby_code__errinfo_arm64((const uint8_t *)code, sizeof(errinfo_31_arm64),
					      0xb6910, &ec),
		     -ENOENT);
	CHECK_EQ_INT(ruby_code__during_gc_arm64((const uint8_t *)during_gc_31_arm64,
						sizeof(during_gc_31_arm64), 0xc96c4, &gc),
		     0);
	CHECK_EQ_U64(gc.vm_ptr.vaddr, 0x37fc00);
	CHECK(gc.vm_ptr.via_got);
	CHECK_EQ_INT(gc.vm_objspace, 1128); /* 1104 on x86-64: three mutexes 8 bytes larger */
	CHECK_EQ_INT(gc.flags_off, 16);
	CHECK_EQ_INT(gc.gc_running, 1 << 5);
	/* a bit field of two bits (ubfx #5, #2), or a bit in the flags' second word */
	memcpy(gc_code, during_gc_31_arm64, sizeof(gc_code));
	gc_code[5] = 0x53051800;
	CHECK_EQ_INT(ruby_code__during_gc_arm64((const uint8_t *)gc_code, sizeof(gc_code), 0, &gc),
		     -ENOENT);
	gc_code[5] = 0xd3400000u | 34u << 16 | 34u << 10; /* ubfx x0, x0, #34, #1 */
	CHECK_EQ_INT(ruby_code__during_gc_arm64((const uint8_t *)gc_code, sizeof(gc_code), 0, &gc),
		     0);
	CHECK_EQ_INT(gc.flags_off, 20);
	CHECK_EQ_INT(gc.gc_running, 1 << 2);
	/* br x3 counts, blr does not; of 16 bytes of code at 0x1000, bl +0x40 leaves it, b -8
	 * (to 0x1000) stays inside
	 */
	CHECK_EQ_U64(ruby_code__indirect_jumps_arm64((const uint8_t *)br, sizeof(br)), 1);
	CHECK_EQ_U64(ruby_code__branch_targets_arm64((const uint8_t *)br, sizeof(br), 0x1000,
						     targets, 4),
		     1);
	CHECK_EQ_U64(targets[0], 0x1044);
}

TEST(random_code)
{
	test_random_buffers(29, 20000, 64, decode_random);
	CHECK(1);
}

int main(void)
{
	RUN(errinfo);
	RUN(during_gc);
	RUN(native_thread_key_and_last_op);
	RUN(jumps_and_targets);
	RUN(cut_short);
	RUN(arm64);
	RUN(random_code);
	return test_summary();
}
