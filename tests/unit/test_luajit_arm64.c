/* LuaJIT 2.1's arm64 VM (src/interp/luajit/luajit_vm_arm64.c, luajit.c's arm64 detection):
 * lua_State.cframe from the C-frame entries' stores and the trace walk's offsets from BC_JLOOP,
 * over the words of Debian 12's arm64 luajit (2.1.0~beta3+git20220320, objdump's listing of
 * its VM at 0x6af60..0x6ecdc); shapes cut short, a PAUTH `braa`, stores that disagree refused;
 * random words read within their buffer. With the .deb unpacked (scripts/arm64_files.sh DIR
 * luajit, as the kernel matrix's arm64 row does) the file itself goes through the runtime's
 * detection: its one VM FDE, GC64, the offsets above.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/elf_file.h"
#include "interp/interp.h"
#include "interp/luajit/luajit_vm_arm64.h"
#include "proc/executable.h"
#include "random_buffers.h"
#include "test.h"

extern const struct interp_runtime luajit_runtime;

/* BC_JLOOP (0x6ce64): the trace, vmstate 0, its slot, mcode, jit_base, tmpbuf.L, the jump */
static const uint32_t jloop[] = {
	0xf94222c0, /* ldr x0, [x22, #1088]   J->trace */
	0x52800001, /* mov w1, #0 */
	0xf87c781c, /* ldr x28, [x0, x28, lsl #3] */
	0xb900bac1, /* str w1, [x22, #184]    vmstate */
	0xf9402f9b, /* ldr x27, [x28, #88]    GCtrace.mcode */
	0xf900bed3, /* str x19, [x22, #376]   jit_base */
	0xf90072d7, /* str x23, [x22, #224] */
	0xd10043ff, /* sub sp, sp, #0x10 */
	0xd61f0360, /* br x27 */
};

/* lj_vm_call's and lj_vm_cpcall's C frame joining the cframe chain (0x6d318, 0x6d3d4) */
static const uint32_t cframe_entry[] = {
	0x910003e8, /* mov x8, sp */
	0xf90003fc, /* str x28, [sp]          SAVE_CFRAME */
	0xf9002ae8, /* str x8, [x23, #80]     L->cframe */
	0xf900bad7, /* str x23, [x22, #368] */
};

static uint8_t buf[4096];

/* `n` words of `w` at word `at` of buf (zeroed: udf #0 around them); its byte size */
static size_t place(const uint32_t *w, size_t n, size_t at)
{
	memcpy(buf + 4 * at, w, 4 * n);
	return 4 * (at + n) + 16;
}

TEST(debian_jloop)
{
	struct lj_trace_offsets_arm64 o = { 0 };
	size_t sz;

	memset(buf, 0, sizeof(buf));
	sz = place(jloop, sizeof(jloop) / 4, 20);
	REQUIRE(lj_vm_arm64__trace_offsets(buf, sz, &o) == 0);
	CHECK_EQ_INT(o.g_trace, 1088);
	CHECK_EQ_INT(o.g_jit_base, 376);
	CHECK_EQ_INT(o.tr_mcode, 88);
}

TEST(jloop_refused)
{
	struct lj_trace_offsets_arm64 o = { 0 };
	uint32_t w[sizeof(jloop) / 4];
	size_t i;

	/* without any one of the trace slot's load, the mcode load, jit_base's store or the jump */
	for (i = 0; i < sizeof(jloop) / 4; i++) {
		if (i == 1 || i == 3 || i == 6) /* (vmstate and tmpbuf.L: not needed) */
			continue;
		memcpy(w, jloop, sizeof(w));
		w[i] = 0xd503201f; /* nop */
		memset(buf, 0, sizeof(buf));
		CHECK(lj_vm_arm64__trace_offsets(buf, place(w, sizeof(w) / 4, 20), &o) == -1);
	}
	/* PAUTH: braa x27, x28 jumps through mcauth, whose slot is not mcode's */
	memcpy(w, jloop, sizeof(w));
	w[8] = 0xd71f0b7c;
	memset(buf, 0, sizeof(buf));
	CHECK(lj_vm_arm64__trace_offsets(buf, place(w, sizeof(w) / 4, 20), &o) == -1);
	/* the sequence at the very start: no room for its loads before it */
	memset(buf, 0, sizeof(buf));
	CHECK(lj_vm_arm64__trace_offsets(buf, place(jloop + 7, 2, 0), &o) == -1);
}

TEST(cframe_stores)
{
	uint32_t other[sizeof(cframe_entry) / 4];
	size_t sz;

	memset(buf, 0, sizeof(buf));
	place(cframe_entry, 4, 10);
	sz = place(cframe_entry, 4, 100);
	CHECK_EQ_INT(lj_vm_arm64__cframe_offset(buf, sz), 80);
	/* one entry only, or two that disagree (a 32-bit-reference lua_State has it at 48) */
	memset(buf, 0, sizeof(buf));
	CHECK_EQ_INT(lj_vm_arm64__cframe_offset(buf, place(cframe_entry, 4, 10)), 0);
	memcpy(other, cframe_entry, sizeof(other));
	other[2] = 0xf9001ae8; /* str x8, [x23, #48] */
	place(other, 4, 10);
	CHECK_EQ_INT(lj_vm_arm64__cframe_offset(buf, place(cframe_entry, 4, 100)), 0);
	/* sp kept in another register than the one stored */
	memset(buf, 0, sizeof(buf));
	other[2] = 0xf9002ae9; /* str x9, [x23, #80] */
	place(other, 4, 10);
	CHECK_EQ_INT(lj_vm_arm64__cframe_offset(buf, place(other, 4, 100)), 0);
}

/* random words, and BC_JLOOP's and the cframe entry's among them with one word changed: read
 * within the buffer (ASan's build), whatever they decode to */
static void decode_random(const uint8_t *b, size_t len, unsigned int i, unsigned int *seed)
{
	struct lj_trace_offsets_arm64 o;
	uint8_t *m = malloc(len ? len : 1);
	size_t at;
	uint32_t w;

	(void)i;
	REQUIRE(m);
	memcpy(m, b, len);
	(void)lj_vm_arm64__trace_offsets(m, len, &o);
	(void)lj_vm_arm64__cframe_offset(m, len);
	if (len >= sizeof(jloop) + sizeof(cframe_entry)) {
		at = (size_t)rand_r(seed) % (len - sizeof(jloop) - sizeof(cframe_entry) + 1);
		memcpy(m + at, jloop, sizeof(jloop));
		memcpy(m + at + sizeof(jloop), cframe_entry, sizeof(cframe_entry));
		w = (uint32_t)rand_r(seed);
		memcpy(m + at + 4 * ((size_t)rand_r(seed) % (sizeof(jloop) / 4)), &w, 4);
		(void)lj_vm_arm64__trace_offsets(m, len, &o);
		(void)lj_vm_arm64__cframe_offset(m, len);
	}
	free(m);
}

TEST(random_code)
{
	test_random_buffers(36, 3000, 400, decode_random);
}

TEST(debian_file)
{
	const char *root = getenv("STACKSCOPE_ARM64_LUAJIT");
	const struct interp_runtime *rt = &luajit_runtime;
	struct interp_file bpf = { 0 };
	struct interp_proc proc = { 0 };
	struct executable exe = { 0 };
	void *state, *fstate, *pstate;
	char path[512];

	snprintf(path, sizeof(path), "%s/usr/bin/luajit",
		 root ? root : "build/arm64-debs/luajit/root");
	exe.elf = elf_file__open(path);
	if (!exe.elf)
		SKIP_SETUP("no %.200s (scripts/arm64_files.sh build/arm64-debs luajit)", path);
	exe.path = path;
	CHECK_EQ_INT(elf_file__machine(exe.elf), EM_AARCH64);
	state = calloc(1, rt->state_sz);
	fstate = calloc(1, rt->file_state_sz);
	pstate = calloc(1, rt->proc_state_sz);
	REQUIRE(state && fstate && pstate && rt->init(state) == 0);
	REQUIRE(rt->file_detect(state, &exe, fstate, &bpf) == 0);
	CHECK_EQ_INT(bpf.supported, 1);
	CHECK_EQ_U64(bpf.range_start[0], 0x6af60);
	CHECK_EQ_U64(bpf.range_end[0], 0x6ecdc);
	REQUIRE(rt->proc_attach(state, fstate, 0x1000000, 0, pstate, &proc) == 0);
	CHECK_EQ_INT(proc.luajit.gc64, 1);
	CHECK_EQ_INT(proc.luajit.l_slot, 16);
	CHECK_EQ_INT(proc.luajit.l_cframe, 80);
	CHECK_EQ_INT(proc.luajit.g_trace, 1088);
	CHECK_EQ_INT(proc.luajit.g_jit_base, 376);
	CHECK_EQ_INT(proc.luajit.tr_startpc, 72);
	CHECK_EQ_U64(proc.luajit.vm_lo, 0x1000000 + 0x6af60);
	rt->fini(state);
	free(state);
	free(fstate);
	free(pstate);
	elf_file__free(exe.elf);
}

int main(void)
{
	RUN(debian_jloop);
	RUN(jloop_refused);
	RUN(cframe_stores);
	RUN(random_code);
	RUN(debian_file);
	return test_summary();
}
