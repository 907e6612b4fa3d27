/* Tests of the HotSpot walk's stub frames and compiled frames caught building or tearing down
 * their frame (bpf/interp/hotspot/walk.h, run as C) over a code heap and a stack laid out in
 * this process's own memory as a JVM lays them out: the CodeBlob found through the heap's
 * segment map, then the caller found as x86-64 HotSpot's code leaves it:
 *   - a stub that built a frame (enter): saved fp at fp, the return address above it;
 *   - the nmethod entry barrier's stub (push -1, then enter): its cookie between the two, the
 *     return address one word higher (the walk ended at "bad pc" before: -1 is no address);
 *   - a leaf stub that built no frame (an array copy): the return address at sp, the caller's
 *     rbp left alone (compiled code's scratch register, not a frame pointer);
 *   - an nmethod sampled in its prologue (JDK 25's C2: `sub rsp, N; mov rbp, N-8(rsp)`, the
 *     entry barrier; JDK 17: `push rbp; sub rsp, N`; JDK 11's C2 as 25's, no barrier) or its
 *     epilogue (`pop rbp`, the return poll: 17's and 25's compare sp, 11's reads the polling
 *     page; `ret`): the caller from the code at pc, not from the frame size (a tiny method
 *     spends a third of its samples there);
 *   - a JVM refused (tables incomplete): one counted marker that ends the stack.
 * Reads go through process_vm_readv on ourselves, so a bad address fails as
 * bpf_probe_read_user() does instead of crashing the test.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "abi.h"
#include "test.h"

#include "bpf_world.h" /* the walk over our own memory: world, HotSpot's proc entry */

/* ---- a JVM's code heap, in our memory ---- */

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

static uint8_t heap[HEAP_SEGS << LOG2_SEG] __attribute__((aligned(64)));
static uint8_t segmap[HEAP_SEGS];

/* A blob of kind and frame size in the block at segment seg (blocks of segs segments);
 * returns its code's address.
 */
static uint64_t put_blob(unsigned int seg, unsigned int segs, uint8_t kind, int32_t frame_size)
{
	uint8_t *blob = heap + ((size_t)seg << LOG2_SEG) + BLOCK_HDR;
	int32_t code = CODE_AT, complete = 0;
	uint64_t method = 0x7000;
	unsigned int i;

	for (i = 0; i < segs; i++)
		segmap[seg + i] = (uint8_t)i; /* hops back to the block's first segment */
	memcpy(blob + OFF_FRAME_SIZE, &frame_size, 4);
	memcpy(blob + OFF_FRAME_COMPLETE, &complete, 4);
	blob[OFF_KIND] = kind;
	memcpy(blob + OFF_CODE, &code, 4);
	memcpy(blob + OFF_METHOD, &method, 8);
	return (uint64_t)(uintptr_t)blob + CODE_AT;
}

/* An nmethod of frame_size words at segment seg whose code is `len` bytes of `code`, its frame
 * complete at offset `complete`; returns its code's address.
 */
static uint64_t put_nmethod(unsigned int seg, int32_t frame_size, const uint8_t *code, size_t len,
			    int32_t complete)
{
	uint64_t at = put_blob(seg, 4, KIND_NMETHOD, frame_size);

	memcpy((uint8_t *)(uintptr_t)at, code, len);
	memcpy((uint8_t *)(uintptr_t)at - CODE_AT + OFF_FRAME_COMPLETE, &complete, 4);
	return at;
}

static void jvm_init(void)
{
	struct hs_proc_abi *p = &world.proc.hs;

	memset(&world.proc, 0, sizeof(world.proc));
	world.pid = getpid();
	world.runtime = FRAME_KIND_HOTSPOT;
	memset(segmap, 0xff, sizeof(segmap)); /* free segments */
	p->heap[0] = (struct hs_heap){ .low = (uint64_t)(uintptr_t)heap,
				       .high = (uint64_t)(uintptr_t)heap + sizeof(heap),
				       .segmap = (uint64_t)(uintptr_t)segmap };
	p->heap_cnt = 1;
	p->log2_seg[0] = LOG2_SEG;
	p->interp_lo = p->interp_hi = 0;
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

/* One walk step at pc (a leaf, or a return address) with sp and fp: the stub frame must come
 * out, and the cursor must move to (want_pc, want_sp, want_fp).
 */
static void check_step_as(uint64_t pc, int is_return, uint64_t sp, uint64_t fp, uint64_t want_pc,
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
	st.pc_is_return = (__u8)is_return;
	CHECK_EQ_INT(hs_code_step(&st, &is, &hc, frames, 0), 1);
	CHECK_EQ_INT(st.frame_cnt, 1);
	CHECK_EQ_INT(frames[0].kind, FRAME_KIND_HOTSPOT);
	CHECK_EQ_U64(frames[0].file_id >> 60, sub);
	CHECK_EQ_INT(st.done, 0);
	CHECK_EQ_U64(st.regs[DWARF_RIP], want_pc);
	CHECK_EQ_U64(st.regs[DWARF_RSP], want_sp);
	CHECK_EQ_U64(st.regs[DWARF_RBP], want_fp);
	CHECK_EQ_INT(world.counters[HS_COUNTER_BAD_FRAME], 0);
}

static void check_step(uint64_t pc, int is_return, uint64_t sp, uint64_t fp, uint64_t want_pc,
		       uint64_t want_sp, uint64_t want_fp)
{
	check_step_as(pc, is_return, sp, fp, want_pc, want_sp, want_fp, HS_SUB_STUB);
}

static uint64_t addr_of(const uint64_t *word)
{
	return (uint64_t)(uintptr_t)word;
}

/* A stub that called into the VM after enter: saved fp, return address into an nmethod. */
TEST(stub_with_frame)
{
	uint64_t stack[16] = { 0 }, stub, caller;

	jvm_init();
	stub = put_blob(0, 4, KIND_BUFFER, 0);
	caller = put_blob(8, 4, KIND_NMETHOD, 6);
	stack[4] = 0x7ffc0000beefULL; /* saved fp */
	stack[5] = caller + 0x20;     /* return address */
	check_step(stub + 0x30, 1, addr_of(&stack[1]), addr_of(&stack[4]), caller + 0x20,
		   addr_of(&stack[6]), stack[4]);
}

/* StubRoutines::method_entry_barrier on x86-64: push -1 (the cookie), enter, then the call to
 * BarrierSetNMethod::nmethod_stub_entry_barrier; the sample's native walk comes back into the
 * stub with its fp.
 */
TEST(entry_barrier_cookie)
{
	uint64_t stack[16] = { 0 }, stub, caller;

	jvm_init();
	stub = put_blob(0, 4, KIND_BUFFER, 0);
	caller = put_blob(8, 4, KIND_NMETHOD, 6);
	stack[4] = 0x7ffc0000beefULL; /* saved fp (enter) */
	stack[5] = ~0ULL;             /* the cookie (push -1) */
	stack[6] = caller + 0x18;     /* the nmethod's call of the stub */
	check_step(stub + 0x40, 1, addr_of(&stack[0]), addr_of(&stack[4]), caller + 0x18,
		   addr_of(&stack[7]), stack[4]);
	CHECK_EQ_INT(world.counters[HS_COUNTER_BARRIER], 1);
}

/* A leaf stub without a frame of its own, sampled: the return address at sp; rbp holds
 * whatever the compiled caller kept there (here: a stack address whose word above is no
 * code address, which the frame-pointer chain would have taken).
 */
TEST(leaf_stub_without_frame)
{
	uint64_t stack[16] = { 0 }, stub, caller;

	jvm_init();
	stub = put_blob(0, 4, KIND_BUFFER, 0);
	caller = put_blob(8, 4, KIND_NMETHOD, 6);
	stack[2] = caller + 0x28; /* at sp: the call's return address */
	stack[8] = 0x1234;        /* what rbp points at */
	stack[9] = 0x5678;
	check_step(stub + 0x10, 0, addr_of(&stack[2]), addr_of(&stack[8]), caller + 0x28,
		   addr_of(&stack[3]), addr_of(&stack[8]));
}

/* JDK 25's C2 code of `static long tiny(long x) { return x * 31 + 7; }` (Temurin 25, read
 * from a running JVM): frame 4 words, frame complete at 0x18.
 */
static const uint8_t tiny25[] = {
	0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00,       /* 0x00 sub $0x18,%rsp */
	0x48, 0x89, 0x6c, 0x24, 0x10,                   /* 0x07 mov %rbp,0x10(%rsp) */
	0x41, 0x81, 0x7f, 0x20, 0x01, 0x00, 0x00, 0x00, /* 0x0c cmpl $0x1,0x20(%r15) */
	0x0f, 0x85, 0x34, 0x00, 0x00, 0x00,             /* 0x14 jne (the barrier's stub) */
	0x48, 0x8b, 0xc6,                               /* 0x1a mov %rsi,%rax */
	0x48, 0xc1, 0xe0, 0x05,                         /* 0x1d shl $0x5,%rax */
	0x48, 0x2b, 0xc6,                               /* 0x21 sub %rsi,%rax */
	0x48, 0x83, 0xc0, 0x07,                         /* 0x24 add $0x7,%rax */
	0x48, 0x83, 0xc4, 0x10,                         /* 0x28 add $0x10,%rsp */
	0x5d,                                           /* 0x2c pop %rbp */
	0x49, 0x3b, 0x67, 0x28,                         /* 0x2d cmp 0x28(%r15),%rsp */
	0x0f, 0x87, 0x01, 0x00, 0x00, 0x00,             /* 0x31 ja (the poll's stub) */
	0xc3,                                           /* 0x37 ret */
	0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, /* padding */
};

/* The same method as JDK 17's C1 and C2 build its frame: push, then sub. */
static const uint8_t tiny17[] = {
	0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, /* 0x00 mov %eax,-0x14000(%rsp): stack bang */
	0x55,                                     /* 0x07 push %rbp */
	0x48, 0x83, 0xec, 0x10,                   /* 0x08 sub $0x10,%rsp */
	0x48, 0x8b, 0xc6,                         /* 0x0c mov %rsi,%rax (frame complete) */
	0x48, 0x83, 0xc4, 0x10,                   /* 0x0f add $0x10,%rsp */
	0x5d,                                     /* 0x13 pop %rbp */
	0x49, 0x3b, 0xa7, 0x48, 0x03, 0x00, 0x00, /* 0x14 cmp 0x348(%r15),%rsp */
	0x0f, 0x87, 0x01, 0x00, 0x00, 0x00,       /* 0x1b ja */
	0xc3,                                     /* 0x21 ret */
	0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4,
};

/* JDK 11's C2 code of tiny (OpenJDK 11.0.24, Debian 11, read from a running JVM): no entry
 * barrier; the return poll reads the thread's polling page.
 */
static const uint8_t tiny11[] = {
	0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00, /* 0x00 sub $0x18,%rsp */
	0x48, 0x89, 0x6c, 0x24, 0x10,             /* 0x07 mov %rbp,0x10(%rsp) */
	0x48, 0x8b, 0xc6,                         /* 0x0c mov %rsi,%rax (frame complete) */
	0x48, 0xc1, 0xe0, 0x05,                   /* 0x0f shl $0x5,%rax */
	0x48, 0x2b, 0xc6,                         /* 0x13 sub %rsi,%rax */
	0x48, 0x83, 0xc0, 0x07,                   /* 0x16 add $0x7,%rax */
	0x48, 0x83, 0xc4, 0x10,                   /* 0x1a add $0x10,%rsp */
	0x5d,                                     /* 0x1e pop %rbp */
	0x4d, 0x8b, 0x97, 0x08, 0x01, 0x00, 0x00, /* 0x1f mov 0x108(%r15),%r10 */
	0x41, 0x85, 0x02,                         /* 0x26 test %eax,(%r10) */
	0xc3,                                     /* 0x29 ret */
	0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4, 0xf4,
};

/* tiny sampled at one of its instructions: where its sp and rbp stand then. */
struct edge_step {
	uint8_t off;         /* pc - code */
	uint8_t is_return;   /* pc is a return address (tiny called something) */
	uint8_t sp_below_ra; /* sp: bytes below the slot holding tiny's return address */
	uint8_t rbp_caller;  /* rbp still (or again) the caller's, else scratch */
};

/* tiny's code at each step: the walk must come out at the caller, with its sp and rbp. The
 * stack: the return address into the caller, the caller's rbp saved just below it once the
 * frame is built, scratch below that.
 */
static void check_edges(const uint8_t *code, size_t len, int32_t complete,
			const struct edge_step *steps, size_t n)
{
	const uint64_t caller_fp = 0x7ffc0000cafeULL, garbage = 0x4141;
	uint64_t stack[16] = { 0 }, tiny, caller, ra_slot;
	size_t i;

	jvm_init();
	caller = put_blob(8, 4, KIND_NMETHOD, 6);
	tiny = put_nmethod(0, 4, code, len, complete);
	ra_slot = addr_of(&stack[8]);
	stack[8] = caller + 0x30;
	stack[7] = caller_fp;
	stack[5] = stack[6] = garbage;
	for (i = 0; i < n; i++)
		check_step_as(tiny + steps[i].off, steps[i].is_return,
			      ra_slot - steps[i].sp_below_ra,
			      steps[i].rbp_caller ? caller_fp : garbage, caller + 0x30, ra_slot + 8,
			      caller_fp, HS_SUB_COMPILED);
}

TEST(compiled_prologue_and_epilogue_jdk25)
{
	static const struct edge_step steps[] = {
		{ 0x00, 0, 0, 1 },    /* entry: nothing built */
		{ 0x07, 0, 0x18, 1 }, /* after sub $0x18, before rbp is saved */
		{ 0x0c, 0, 0x18, 0 }, /* frame built: at the entry barrier, the frame size tells */
		{ 0x14, 0, 0x18, 0 }, { 0x1d, 0, 0x18, 0 },
		{ 0x2c, 0, 8, 0 }, /* after add $0x10: sp at the saved rbp */
		{ 0x2d, 0, 0, 1 }, /* after pop %rbp: the return address at sp */
		{ 0x31, 0, 0, 1 },    { 0x37, 0, 0, 1 },
	};

	check_edges(tiny25, sizeof(tiny25), 0x18, steps, sizeof(steps) / sizeof(steps[0]));
	CHECK_EQ_INT(world.counters[HS_COUNTER_EPILOGUE], 4);
}

TEST(compiled_prologue_and_epilogue_jdk17)
{
	static const struct edge_step steps[] = {
		{ 0x00, 0, 0, 1 },    /* the stack bang */
		{ 0x07, 0, 0, 1 },    /* push %rbp */
		{ 0x08, 0, 8, 0 },    /* after it: the saved rbp at sp */
		{ 0x0c, 0, 0x18, 0 }, /* frame complete: the frame size tells */
		{ 0x0f, 0, 0x18, 0 },
		{ 0x13, 0, 8, 0 }, /* at pop %rbp */
		{ 0x14, 0, 0, 1 }, /* past it */
		{ 0x21, 0, 0, 1 },
		/* a return address into tiny (it called something): the frame is whole, whatever
		 * the code after the call looks like
		 */
		{ 0x13, 1, 0x18, 0 },
	};

	check_edges(tiny17, sizeof(tiny17), 0x0c, steps, sizeof(steps) / sizeof(steps[0]));
	CHECK_EQ_INT(world.counters[HS_COUNTER_EPILOGUE], 3);
}

TEST(compiled_prologue_and_epilogue_jdk11)
{
	static const struct edge_step steps[] = {
		{ 0x00, 0, 0, 1 },    /* entry: nothing built */
		{ 0x07, 0, 0x18, 1 }, /* after sub $0x18, before rbp is saved */
		{ 0x0c, 0, 0x18, 0 }, /* frame complete: the frame size tells */
		{ 0x16, 0, 0x18, 0 }, { 0x1a, 0, 0x18, 0 }, { 0x1e, 0, 8, 0 }, /* at pop %rbp */
		{ 0x1f, 0, 0, 1 },                                             /* the poll's load */
		{ 0x26, 0, 0, 1 },                                             /* its test */
		{ 0x29, 0, 0, 1 },                                             /* ret */
	};

	check_edges(tiny11, sizeof(tiny11), 0x0c, steps, sizeof(steps) / sizeof(steps[0]));
	CHECK_EQ_INT(world.counters[HS_COUNTER_EPILOGUE], 4);
}

/* A JVM refused (its tables lack what the walk needs, JDK 11's before its growable array was
 * known): a pc in its code cache is one counted marker that ends the stack cleanly, not a
 * native step through JIT code ("[unwind: unmapped pc]") nor a Java frame read with
 * offsets it does not have.
 */
TEST(refused_jvm_ends_in_marker)
{
	static struct user_frame frames[SS_MAX_USER_FRAMES];
	uint64_t stack[16] = { 0 }, code;
	struct unwind_cursor st;
	struct interp_state is;
	struct hs_cursor hc;

	jvm_init();
	code = put_nmethod(0, 4, tiny17, sizeof(tiny17), 0x0c);
	world.proc.hs.supported = 0;
	world.proc.hs.ready = 0;
	memset(&st, 0, sizeof(st));
	memset(&is, 0, sizeof(is));
	st.pid = (__u32)getpid();
	st.regs[DWARF_RIP] = code + 0x0c;
	st.regs[DWARF_RSP] = addr_of(&stack[4]);
	st.regs[DWARF_RBP] = addr_of(&stack[8]);
	st.frame_cnt = 3; /* the native frames the JVM's code called */
	CHECK_EQ_INT(hs_code_step(&st, &is, &hc, frames, 0), 1);
	CHECK_EQ_INT(st.frame_cnt, 4);
	CHECK_EQ_INT(frames[3].kind, FRAME_KIND_HOTSPOT);
	CHECK_EQ_U64(frames[3].addr, 0);
	CHECK_EQ_U64(frames[3].file_id, HS_MARKER_UNSUPPORTED);
	CHECK_EQ_INT(st.done, 1);
	CHECK_EQ_INT(st.end, UNWIND_END_OK);
	CHECK_EQ_U64(st.regs[DWARF_RIP], code + 0x0c); /* the cursor was not moved */
	CHECK_EQ_INT(world.counters[HS_COUNTER_UNSUPPORTED], 1);
	CHECK_EQ_INT(world.counters[HS_COUNTER_COMPILED], 0);
}

int main(void)
{
	RUN(stub_with_frame);
	RUN(entry_barrier_cookie);
	RUN(leaf_stub_without_frame);
	RUN(compiled_prologue_and_epilogue_jdk25);
	RUN(compiled_prologue_and_epilogue_jdk17);
	RUN(compiled_prologue_and_epilogue_jdk11);
	RUN(refused_jvm_ends_in_marker);
	return test_summary();
}
