/* execute_ex's dispatch frame read from arm64 code (src/interp/php/php_jit_arm64.c), which
 * tells eBPF where JIT code's execute_ex frame and its return address are: Debian 12's arm64
 * php8.2 (8.2.36-1~deb12u1; its words written here from objdump's listing of execute_ex at
 * 0x3712a4), whose CFI there says CFA = sp + 144 and x30 at CFA - 72; the pre-indexed
 * `stp x29, x30, [sp, #-N]!` shape and a frame grown in two steps; every cut-short sequence,
 * another write of sp, a dispatch with no frame refused; random and mutated words read within
 * their buffer. With the .deb unpacked (scripts/arm64_files.sh DIR runtimes, as the kernel
 * matrix's arm64 row does) the file itself is read too and checked against its own CFI.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/php/php_jit.h"
#include "random_buffers.h"
#include "test.h"
#include "unwind/unwind_table.h"

#define EXECUTE_EX 0x3712a4

/* execute_ex, entry to its first dispatch */
static const uint32_t execute_ex_82[] = {
	0xd10243ff, /* sub sp, sp, #0x90 */
	0xd0000fe1, /* adrp x1, ... (the stack guard) */
	0xf946c021, /* ldr x1, [x1, #3456] */
	0xa9047bfd, /* stp x29, x30, [sp, #64] */
	0x910103fd, /* add x29, sp, #0x40 */
	0xa90553f3, /* stp x19, x20, [sp, #80] */
	0xa9065bf5, /* stp x21, x22, [sp, #96] */
	0xf9400022, /* ldr x2, [x1] */
	0xf9001fe2, /* str x2, [sp, #56] */
	0xd2800002, /* mov x2, #0 */
	0xa901effc, /* stp x28, x27, [sp, #24] */
	0xaa0003fb, /* mov x27, x0 */
	0xb4000140, /* cbz x0, ... */
	0xd0000fe1, /* adrp x1, ... */
	0xf9445421, /* ldr x1, [x1, #2216] */
	0xf940001c, /* ldr x28, [x0] */
	0x91088820, /* add x0, x1, #0x222 */
	0x08dffc00, /* ldarb w0, [x0] */
	0x72001c1f, /* tst w0, #0xff */
	0x540140c1, /* b.ne ... */
	0xf9400380, /* ldr x0, [x28] */
	0xd61f0000, /* br x0 */
};

/* stp x29, x30, [sp, #-48]!; mov x29, sp; sub sp, sp, #0x100; ldr x9, [x28]; br x9 */
static const uint32_t pre_indexed[] = {
	0xa9bd7bfd, 0x910003fd, 0xd10403ff, 0xf9400389, 0xd61f0120,
};

static int frame_of(const uint32_t *words, size_t n, uint64_t entry, uint64_t *dispatch,
		    uint32_t *frame, uint32_t *ra_off)
{
	return php_jit__vm_frame_arm64((const uint8_t *)words, n * 4, entry, dispatch, frame,
				       ra_off);
}

TEST(debian_82)
{
	uint64_t dispatch = 0;
	uint32_t frame = 0, ra_off = 0;

	CHECK_EQ_INT(frame_of(execute_ex_82, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), 0);
	CHECK_EQ_U64(dispatch, 0x3712f8); /* the br */
	CHECK_EQ_INT(frame, 144);
	CHECK_EQ_INT(ra_off, 72); /* sp + 64 holds x29, sp + 72 x30 */
}

TEST(other_shapes)
{
	uint32_t words[22], frame = 0, ra_off = 0;
	uint64_t dispatch = 0;

	/* the pre-indexed store, then more frame: x30 at the store's sp + 8 */
	CHECK_EQ_INT(frame_of(pre_indexed, 5, 0x1000, &dispatch, &frame, &ra_off), 0);
	CHECK_EQ_U64(dispatch, 0x1010);
	CHECK_EQ_INT(frame, 48 + 256);
	CHECK_EQ_INT(ra_off, 256 + 8);
	/* a `br` after a load from another register is no dispatch */
	memcpy(words, execute_ex_82, sizeof(words));
	words[20] = 0xf9400360; /* ldr x0, [x27] */
	CHECK_EQ_INT(frame_of(words, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), -ENOENT);
	/* nor after a load into another register than the one branched to */
	words[20] = 0xf9400381; /* ldr x1, [x28] */
	CHECK_EQ_INT(frame_of(words, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), -ENOENT);
	/* sp written otherwise before the dispatch (add sp, sp, #16) */
	memcpy(words, execute_ex_82, sizeof(words));
	words[9] = 0x910043ff;
	CHECK_EQ_INT(frame_of(words, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), -ENOENT);
	/* no x30 stored */
	memcpy(words, execute_ex_82, sizeof(words));
	words[3] = 0xd503201f; /* nop */
	CHECK_EQ_INT(frame_of(words, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), -ENOENT);
	/* no frame reserved */
	memcpy(words, execute_ex_82, sizeof(words));
	words[0] = 0xd503201f;
	CHECK_EQ_INT(frame_of(words, 22, EXECUTE_EX, &dispatch, &frame, &ra_off), -ENOENT);
}

TEST(cut_short)
{
	uint64_t dispatch;
	uint32_t frame, ra_off;
	size_t n;

	for (n = 0; n < sizeof(execute_ex_82); n++)
		CHECK_EQ_INT(php_jit__vm_frame_arm64((const uint8_t *)execute_ex_82, n, EXECUTE_EX,
						     &dispatch, &frame, &ra_off),
			     -ENOENT);
}

static void decode_random(const uint8_t *buf, size_t len, unsigned int i, unsigned int *seed)
{
	uint8_t mut[sizeof(execute_ex_82)];
	uint64_t dispatch;
	uint32_t frame, ra_off;

	(void)i;
	if (!php_jit__vm_frame_arm64(buf, len, 0x1000, &dispatch, &frame, &ra_off))
		CHECK(dispatch >= 0x1004 && dispatch < 0x1000 + len && ra_off + 8 <= frame);
	memcpy(mut, execute_ex_82, sizeof(mut));
	mut[(size_t)rand_r(seed) % sizeof(mut)] = (uint8_t)rand_r(seed);
	if (!php_jit__vm_frame_arm64(mut, sizeof(mut), EXECUTE_EX, &dispatch, &frame, &ra_off))
		CHECK(dispatch > EXECUTE_EX && dispatch < EXECUTE_EX + sizeof(mut) &&
		      ra_off + 8 <= frame);
}

TEST(random_code)
{
	test_random_buffers(36, 20000, 128, decode_random);
	CHECK(1);
}

/* The unpacked php8.2 itself: what execute_ex's code says agrees with its CFI at the dispatch
 * (the rule eBPF unwinds JIT code's frame by).
 */
TEST(debian_82_file)
{
	static const char *const names[] = { "execute_ex" };
	const char *root = getenv("STACKSCOPE_ARM64_RUNTIMES");
	const struct unwind_row *row;
	struct unwind_table *t = NULL;
	struct interp_sym sym;
	struct elf_file *ef;
	const uint8_t *code;
	uint64_t dispatch = 0;
	uint32_t frame = 0, ra_off = 0;
	size_t avail;
	char path[1024];

	snprintf(path, sizeof(path), "%.900s/usr/bin/php8.2",
		 root ? root : "build/arm64-debs/runtimes/root");
	ef = elf_file__open(path);
	if (!ef) /* not scripts/setup.sh's: the kernel matrix's arm64 row unpacks it */
		SKIP("no %.200s (scripts/arm64_files.sh build/arm64-debs runtimes)", path);
	CHECK_EQ_INT(elf_file__machine(ef), EM_AARCH64);
	interp_elf__symbols(ef, names, 1, &sym);
	REQUIRE(sym.found && sym.size);
	REQUIRE(!elf_file__bytes_at_vaddr(ef, sym.addr, (const void **)&code, &avail));
	CHECK_EQ_INT(php_jit__vm_frame_arm64(code, avail < sym.size ? avail : sym.size, sym.addr,
					     &dispatch, &frame, &ra_off),
		     0);
	REQUIRE(!unwind_table__build(ef, NULL, &t));
	row = unwind_table__find(t, dispatch);
	REQUIRE(row);
	CHECK_EQ_INT(row->rule.cfa_reg, DWARF_ARM64_SP);
	CHECK_EQ_INT(row->rule.cfa_off, (int)frame);
	CHECK_EQ_INT(row->rule.ra_rule, UNWIND_RA_CFA_OFF);
	CHECK_EQ_INT(row->rule.ra_off, (int)ra_off - (int)frame);
	unwind_table__free(t);
	elf_file__free(ef);
}

int main(void)
{
	RUN(debian_82);
	RUN(other_shapes);
	RUN(cut_short);
	RUN(random_code);
	RUN(debian_82_file);
	return test_summary();
}
