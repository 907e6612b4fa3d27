/* The HotSpot walk's arm64 code shapes (bpf/interp/hotspot/shapes_arm64.h, compiled here as C
 * with SS_ARCH_ARM64) over a code heap and a stack laid out in this process's memory as an
 * arm64 JVM lays them out. The code is OpenJDK 17's C1/C2 frame shapes as Debian's cross
 * assembler encodes them (tests/data/hotspot_arm64_shapes.S: a 48-byte frame built by
 * `sub sp; stp x29, x30, [sp, #32]`, a 1024-byte one by `stp x29, x30, [sp, #-16]!; sub sp`,
 * each torn down in reverse, then the return poll and `ret`), sampled at every instruction:
 * the caller must come from x30 while the frame is not built or already freed, from the
 * frame record at sp where only it is pushed, else from the frame's top by its size; a leaf
 * stub's caller is x30 at the same sp, and x30 signed by pointer authentication is stripped.
 */
#define SS_ARCH_ARM64 1

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "abi.h"
#include "test.h"

#include "bpf_world.h" /* the walk over our own memory: world, HotSpot's proc entry */

#define LOG2_SEG 6 /* 64-byte segments */
#define HEAP_SEGS 64
#define BLOCK_HDR 16
/* CodeBlob field offsets of this made-up layout (the walk takes them from hs_proc_abi) */
#define OFF_FRAME_SIZE 8
#define OFF_FRAME_COMPLETE 12
#define OFF_KIND 16
#define OFF_CODE 20 /* int offset from the blob */
#define OFF_METHOD 24
#define OFF_COMPILE_ID 32
#define KIND_NMETHOD 1
#define KIND_BUFFER 3
#define CODE_AT 64 /* the blob's code, bytes from the blob */
/* the shapes in hotspot_arm64_shapes.S */
#define SMALL_AT 0x00
#define SMALL_SIZE 48
#define SMALL_COMPLETE 0x0c
#define LARGE_AT 0x40
#define LARGE_SIZE 1024
#define LARGE_COMPLETE 0x4c
#define SHAPES_LEN 0x80
#define PAC_BITS 0x002a000000000000ULL /* what paciasp may put above a 48-bit address */

static uint8_t heap[HEAP_SEGS << LOG2_SEG] __attribute__((aligned(64)));
static uint8_t segmap[HEAP_SEGS];
static uint8_t shapes[SHAPES_LEN];

/* A blob of kind, frame size (words) and frame-complete offset in the block at segment seg
 * (4 segments) holding len bytes of code; returns its code's address.
 */
static uint64_t put_blob(unsigned int seg, uint8_t kind, int32_t frame_size, int32_t complete,
			 const uint8_t *code, size_t len)
{
	uint8_t *blob = heap + ((size_t)seg << LOG2_SEG) + BLOCK_HDR;
	int32_t code_off = CODE_AT;
	uint64_t method = 0x7000;
	unsigned int i;

	for (i = 0; i < 4; i++)
		segmap[seg + i] = (uint8_t)i;
	memcpy(blob + OFF_FRAME_SIZE, &frame_size, 4);
	memcpy(blob + OFF_FRAME_COMPLETE, &complete, 4);
	blob[OFF_KIND] = kind;
	memcpy(blob + OFF_CODE, &code_off, 4);
	memcpy(blob + OFF_METHOD, &method, 8);
	if (len)
		memcpy(blob + CODE_AT, code, len);
	return (uint64_t)(uintptr_t)blob + CODE_AT;
}

static void jvm_init(void)
{
	struct hs_proc_abi *p = &world.proc.hs;

	memset(&world.proc, 0, sizeof(world.proc));
	world.pid = getpid();
	world.runtime = FRAME_KIND_HOTSPOT;
	memset(segmap, 0xff, sizeof(segmap));
	memset(heap, 0, sizeof(heap));
	p->heap[0] = (struct hs_heap){ .low = (uint64_t)(uintptr_t)heap,
				       .high = (uint64_t)(uintptr_t)heap + sizeof(heap),
				       .segmap = (uint64_t)(uintptr_t)segmap };
	p->heap_cnt = 1;
	p->log2_seg[0] = LOG2_SEG;
	p->ready = p->supported = 1;
	p->code_is_offset = 1;
	p->kind_nmethod = KIND_NMETHOD;
	p->block_hdr = BLOCK_HDR;
	p->blob_kind = OFF_KIND;
	p->blob_name = HS_NO_OFFSET;
	p->blob_frame_size = OFF_FRAME_SIZE;
	p->blob_frame_complete = OFF_FRAME_COMPLETE;
	p->blob_code = OFF_CODE;
	p->nm_method = OFF_METHOD;
	p->nm_compile_id = OFF_COMPILE_ID;
	p->nm_deopt = p->nm_orig_pc = HS_NO_OFFSET;
	memset(world.counters, 0, sizeof(world.counters));
}

static int load_shapes(void)
{
	const char *path = test_fixture("hotspot_arm64_shapes.bin");
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -errno;
	n = fread(shapes, 1, sizeof(shapes), f);
	fclose(f);
	return n == sizeof(shapes) ? 0 : -EIO;
}

/* One step of the interrupted frame at pc (x30 = lr, x29 = fp): the frame of the blob comes
 * out and the cursor moves to (want_pc, want_sp, want_fp).
 */
static void check_leaf(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t lr, uint64_t want_pc,
		       uint64_t want_sp, uint64_t want_fp, unsigned int sub)
{
	static struct user_frame frames[SS_MAX_USER_FRAMES];
	struct unwind_cursor st;
	struct interp_state is;
	struct hs_cursor hc;

	memset(&st, 0, sizeof(st));
	memset(&is, 0, sizeof(is));
	st.pid = (__u32)getpid();
	st.regs[DWARF_RIP] = pc;
	st.regs[DWARF_RSP] = sp;
	st.regs[DWARF_RBP] = fp;
	st.regs[SS_ARM64_LR_SLOT] = lr;
	st.regs_valid = 1;
	CHECK_EQ_INT(hs_code_step(&st, &is, &hc, frames, 0), 1);
	CHECK_EQ_INT(st.frame_cnt, 1);
	CHECK_EQ_U64(frames[0].file_id >> 60, sub);
	CHECK_EQ_INT(st.done, 0);
	CHECK_EQ_U64(st.regs[DWARF_RIP], want_pc);
	CHECK_EQ_U64(st.regs[DWARF_RSP], want_sp);
	CHECK_EQ_U64(st.regs[DWARF_RBP], want_fp);
	CHECK_EQ_INT(st.pc_is_return, 1);
	CHECK_EQ_INT(world.counters[HS_COUNTER_BAD_FRAME], 0);
}

static uint64_t addr_of(const uint64_t *word)
{
	return (uint64_t)(uintptr_t)word;
}

/* A frame of size bytes sampled at every instruction of its shape (code at `at`, complete at
 * `complete`), whose caller returns to ra with x29 caller_fp and sp the frame's top. At offset
 * 0x08 the frame is half built (the small one: sp lowered, x30 not stored; the large one: only
 * the record pushed); up to `last_whole` it is whole (the small frame's ldp and add still
 * leave its memory as it was), at the large frame's `last_whole` + 4 (its post-indexed ldp)
 * only the record is left, and after that it is freed (x30 and x29 the caller's again).
 */
static void check_shape(unsigned int at, int32_t size, int32_t complete, unsigned int last_whole)
{
	static uint64_t stack[LARGE_SIZE / 8 + 16];
	uint64_t code, caller, ra, top = addr_of(&stack[LARGE_SIZE / 8 + 8]);
	uint64_t caller_fp = 0x7ffc0000beefULL, scratch = 0x1234;
	unsigned int off;

	jvm_init();
	code = put_blob(0, KIND_NMETHOD, size / 8, complete - (int32_t)at, shapes + at,
			SHAPES_LEN - at);
	caller = put_blob(8, KIND_NMETHOD, 6, 0, NULL, 0);
	ra = caller + 0x24;
	memset(stack, 0, sizeof(stack));
	stack[LARGE_SIZE / 8 + 6] = caller_fp; /* the record {x29, x30} at the frame's top */
	stack[LARGE_SIZE / 8 + 7] = ra;
	for (off = 0; off < 0x28; off += 4) {
		uint64_t pc = code + off;

		if (off < 0x08) /* before any store: x30, sp untouched */
			check_leaf(pc, top, caller_fp, ra, ra, top, caller_fp, HS_SUB_COMPILED);
		else if (off == 0x08 && size > 512) /* the record pushed, sp not lowered more */
			check_leaf(pc, top - 16, scratch, ra, ra, top, caller_fp, HS_SUB_COMPILED);
		else if (off == 0x08) /* sp lowered, the record not stored: x30 */
			check_leaf(pc, top - (uint64_t)size, caller_fp, ra, ra, top, caller_fp,
				   HS_SUB_COMPILED);
		else if (off <= last_whole) /* whole: by its size (x29, x30: the body's) */
			check_leaf(pc, top - (uint64_t)size, scratch, scratch, ra, top, caller_fp,
				   HS_SUB_COMPILED);
		else if (off == last_whole + 4 && size > 512) /* the post-indexed ldp */
			check_leaf(pc, top - 16, scratch, scratch, ra, top, caller_fp,
				   HS_SUB_COMPILED);
		else /* freed: the return poll and ret ahead */
			check_leaf(pc, top, caller_fp, ra, ra, top, caller_fp, HS_SUB_COMPILED);
	}
	CHECK(world.counters[HS_COUNTER_EPILOGUE] >= 4);
}

TEST(small_frame)
{
	if (load_shapes())
		SKIP_SETUP("%s missing (make fixtures)", test_fixture("hotspot_arm64_shapes.bin"));
	check_shape(SMALL_AT, SMALL_SIZE, SMALL_COMPLETE, 0x14); /* its add */
}

TEST(large_frame)
{
	if (load_shapes())
		SKIP_SETUP("%s missing (make fixtures)", test_fixture("hotspot_arm64_shapes.bin"));
	check_shape(LARGE_AT, LARGE_SIZE, LARGE_COMPLETE, 0x10); /* its add */
}

/* A leaf stub without a frame (frame size 0), sampled: its caller is x30, signed (PAC bits
 * above the address), at the same sp; x29 is compiled code's, a word whose neighbour is no
 * return address (the frame-pointer chain would take it).
 */
TEST(leaf_stub_signed_lr)
{
	uint64_t stack[16] = { 0 }, stub, caller;

	jvm_init();
	stub = put_blob(0, KIND_BUFFER, 0, 0, NULL, 0);
	caller = put_blob(8, KIND_NMETHOD, 6, 0, NULL, 0);
	stack[8] = 0x1234;
	stack[9] = 0x5678;
	check_leaf(stub + 0x10, addr_of(&stack[2]), addr_of(&stack[8]), (caller + 0x28) | PAC_BITS,
		   caller + 0x28, addr_of(&stack[2]), addr_of(&stack[8]), HS_SUB_STUB);
}

/* A stub that built a frame record (x29 on it, x30 still the same return address) with no
 * frame size: the frame-pointer chain, sp above the record.
 */
TEST(stub_with_record)
{
	uint64_t stack[16] = { 0 }, stub, caller;

	jvm_init();
	stub = put_blob(0, KIND_BUFFER, 0, 0, NULL, 0);
	caller = put_blob(8, KIND_NMETHOD, 6, 0, NULL, 0);
	stack[4] = 0x7ffc0000beefULL;
	stack[5] = caller + 0x30;
	check_leaf(stub + 0x10, addr_of(&stack[0]), addr_of(&stack[4]), caller + 0x30,
		   caller + 0x30, addr_of(&stack[6]), stack[4], HS_SUB_STUB);
}

int main(void)
{
	RUN(small_frame);
	RUN(large_frame);
	RUN(leaf_stub_signed_lr);
	RUN(stub_with_record);
	return test_summary();
}
