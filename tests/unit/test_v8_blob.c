/* V8's embedded builtins found without their symbols (src/interp/v8/v8_blob.c): the
 * accessors of isolate.cc as gcc compiles them in Debian's libnode (their bytes written here
 * from objdump's listing, at the addresses they have there: bullseye's V8 7.8 through the
 * GOT, bookworm's 10.2 through a pointer variable, trixie's 11.3 a label) and the other
 * shapes the decoder accepts; cut-short and random bytes refused within their buffer; the
 * layout table found in made-up blobs of each kind (two blobs with a 28-byte description in
 * shuffled order, V8 7.8's one blob with 8-byte entries), and refused when a builtin's
 * padding is not int3 or the entries leave a gap; and Debian's own libnode.so.N of the runtime
 * matrix's roots (when scripts/runtime_root.sh made them), whose builtins come out named with
 * the handlers found, at the offsets NodeSource's Node 20 (the host's /usr/bin/node, the same
 * V8 11.3) has symbols for; the arm64 shapes of the accessors (bookworm's arm64 libnode, from
 * aarch64-linux-gnu-objdump) and that libnode itself (scripts/arm64_files.sh unpacks it), its
 * read-only data in the text's segment.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "random_buffers.h"
#include "test.h"
#include "interp/v8/v8_blob.h"

/* DefaultEmbeddedBlobCode, trixie (V8 11.3) at 0x1169250: lea code(%rip), %rax; ret */
static const uint8_t code_113[] = { 0x48, 0x8d, 0x05, 0xa9, 0x9d, 0xcd, 0xff, 0xc3 };
/* DefaultEmbeddedBlobCodeSize, trixie at 0x1169260: lea size(%rip), %rax; mov (%rax), %eax */
static const uint8_t size_113[] = { 0x48, 0x8d, 0x05, 0x61, 0xc6, 0xf2, 0x01, 0x8b, 0x00, 0xc3 };
/* DefaultEmbeddedBlobCode, bookworm (V8 10.2) at 0xf67e10: a pointer variable */
static const uint8_t code_102[] = {
	0x48, 0x8d, 0x05, 0x19, 0x85, 0xdc, 0x01, 0x48, 0x8b, 0x00, 0xc3
};
/* DefaultEmbeddedBlob, bullseye (V8 7.8) at 0xaf3340: the variable through the GOT */
static const uint8_t blob_78[] = {
	0x48, 0x8b, 0x05, 0xc9, 0x1f, 0x7d, 0x01, 0x48, 0x8b, 0x00, 0xc3
};
/* DefaultEmbeddedBlobSize, bullseye at 0xaf3350 */
static const uint8_t size_78[] = { 0x48, 0x8b, 0x05, 0x79, 0x03, 0x7d, 0x01, 0x8b, 0x00, 0xc3 };
/* mov size(%rip), %eax; ret, after an endbr64 (another compiler's shape) */
static const uint8_t size_direct[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x8b, 0x05,
				       0x10, 0x00, 0x00, 0x00, 0xc3 };

TEST(accessors_of_debian)
{
	struct v8_accessor a;

	REQUIRE(!v8_blob__accessor(code_113, sizeof(code_113), 0x1169250, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_ADDR);
	CHECK_EQ_U64(a.where, 0xe43000);
	CHECK(!a.via_got);
	REQUIRE(!v8_blob__accessor(size_113, sizeof(size_113), 0x1169260, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_U32);
	CHECK_EQ_U64(a.where, 0x30958c8);
	CHECK(!a.via_got);
	REQUIRE(!v8_blob__accessor(code_102, sizeof(code_102), 0xf67e10, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_PTR);
	CHECK_EQ_U64(a.where, 0x2d30330);
	CHECK(!a.via_got);
	REQUIRE(!v8_blob__accessor(blob_78, sizeof(blob_78), 0xaf3340, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_PTR);
	CHECK_EQ_U64(a.where, 0x22c5310);
	CHECK(a.via_got);
	REQUIRE(!v8_blob__accessor(size_78, sizeof(size_78), 0xaf3350, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_U32);
	CHECK_EQ_U64(a.where, 0x22c36d0);
	CHECK(a.via_got);
	REQUIRE(!v8_blob__accessor(size_direct, sizeof(size_direct), 0x1000, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_U32);
	CHECK_EQ_U64(a.where, 0x1000 + 10 + 0x10);
}

/* bookworm's arm64 libnode.so.108 (V8 10.2): DefaultEmbeddedBlobCode at 0xeb3700, `adrp x0,
 * 0x295d000; ldr x0, [x0, #2312]; ldr x0, [x0]; ret` (the pointer variable through the GOT),
 * DefaultEmbeddedBlobCodeSize at 0xeb3710 (`... ldr x0, [x0, #2952]; ldr w0, [x0]; ret`)
 */
static const uint8_t code_102_arm64[] = { 0x40, 0xd5, 0x00, 0xd0, 0x00, 0x84, 0x44, 0xf9,
					  0x00, 0x00, 0x40, 0xf9, 0xc0, 0x03, 0x5f, 0xd6 };
static const uint8_t size_102_arm64[] = { 0xe0, 0xd4, 0x00, 0xd0, 0x00, 0xc4, 0x45, 0xf9,
					  0x00, 0x00, 0x40, 0xb9, 0xc0, 0x03, 0x5f, 0xd6 };
/* bti c; adrp x0, (-1 page); add x0, x0, #0x10; ret: a label (another build's shape) */
static const uint8_t label_arm64[] = { 0x5f, 0x24, 0x03, 0xd5, 0xe0, 0xff, 0xff, 0xf0,
				       0x00, 0x40, 0x00, 0x91, 0xc0, 0x03, 0x5f, 0xd6 };

TEST(accessors_arm64)
{
	struct v8_accessor a;
	size_t n;

	REQUIRE(!v8_blob__accessor_arm64(code_102_arm64, sizeof(code_102_arm64), 0xeb3700, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_PTR);
	CHECK_EQ_U64(a.where, 0x295d000 + 2312);
	CHECK(a.via_got);
	REQUIRE(!v8_blob__accessor_arm64(size_102_arm64, sizeof(size_102_arm64), 0xeb3710, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_U32);
	CHECK_EQ_U64(a.where, 0x2951000 + 2952);
	CHECK(a.via_got);
	REQUIRE(!v8_blob__accessor_arm64(label_arm64, sizeof(label_arm64), 0x5000, &a));
	CHECK_EQ_INT(a.kind, V8_ACC_ADDR);
	CHECK_EQ_U64(a.where, 0x4000 + 0x10);
	CHECK(!a.via_got);
	for (n = 0; n < sizeof(code_102_arm64); n++)
		CHECK(v8_blob__accessor_arm64(code_102_arm64, n, 0xeb3700, &a) == -ENOENT);
	/* x86's shapes are not arm64's */
	CHECK(v8_blob__accessor_arm64(code_102, sizeof(code_102), 0xf67e10, &a) == -ENOENT);
}

TEST(accessors_cut_short_or_other)
{
	static const uint8_t not_ret[] = { 0x48, 0x8d, 0x05, 0, 0, 0, 0, 0x48, 0x89, 0xc7, 0xc3 };
	static const uint8_t other_reg[] = { 0x48, 0x8d, 0x0d, 0, 0, 0, 0, 0xc3 };
	const uint8_t *all[] = { code_113, size_113, code_102, blob_78, size_78, size_direct };
	const size_t len[] = { sizeof(code_113), sizeof(size_113), sizeof(code_102),
			       sizeof(blob_78),  sizeof(size_78),  sizeof(size_direct) };
	struct v8_accessor a;
	size_t i, n;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		for (n = 0; n < len[i]; n++) {
			uint8_t *cut = malloc(n ? n : 1);

			REQUIRE(cut);
			memcpy(cut, all[i], n);
			CHECK(v8_blob__accessor(cut, n, 0x1000, &a) == -ENOENT);
			free(cut);
		}
	CHECK(v8_blob__accessor(not_ret, sizeof(not_ret), 0x1000, &a) == -ENOENT);
	CHECK(v8_blob__accessor(other_reg, sizeof(other_reg), 0x1000, &a) == -ENOENT);
}

static void accessor_random(const uint8_t *buf, size_t len, unsigned int i, unsigned int *seed)
{
	struct v8_accessor a;

	(void)i, (void)seed;
	if (!v8_blob__accessor(buf, len, 0x400000, &a))
		CHECK(a.kind >= V8_ACC_ADDR && a.kind <= V8_ACC_U32);
}

static void accessor_random_arm64(const uint8_t *buf, size_t len, unsigned int i,
				  unsigned int *seed)
{
	struct v8_accessor a;

	(void)i, (void)seed;
	if (!v8_blob__accessor_arm64(buf, len, 0x400000, &a))
		CHECK(a.kind >= V8_ACC_ADDR && a.kind <= V8_ACC_U32);
}

TEST(accessors_random)
{
	test_random_buffers(30, 20000, 24, accessor_random);
	test_random_buffers(31, 20000, 24, accessor_random_arm64);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* Builtins of these instruction lengths, laid out in the order `order` (builtin ids) in
 * code[], each padded with int3 to `align`; their descriptions in builtin order in data[]
 * (header bytes, then stride bytes each: offset, length, then filler). Returns the code size.
 */
static size_t make_blob(const uint32_t *lens, const size_t *order, size_t cnt, uint32_t align,
			uint32_t header, uint32_t stride, size_t code_base, uint8_t *code,
			uint8_t *data)
{
	size_t k, at = 0;

	memset(data, 0x5a, header);
	for (k = 0; k < cnt; k++) {
		size_t id = order[k], pad = (lens[id] + align) / align * align;

		memset(code + code_base + at, 0x90, lens[id]);
		memset(code + code_base + at + lens[id], 0xcc, pad - lens[id]);
		put_u32(data + header + id * stride, (uint32_t)at);
		put_u32(data + header + id * stride + 4, lens[id]);
		memset(data + header + id * stride + 8, 0x11, stride - 8);
		at += pad;
	}
	return code_base + at;
}

TEST(table_two_blobs_reordered)
{
	static const uint32_t lens[] = { 100, 64, 12, 200, 63, 1 };
	static const size_t order[] = { 2, 0, 5, 1, 4, 3 };
	uint8_t code[2048], data[512];
	struct v8_blob_table t;
	size_t sz = make_blob(lens, order, 6, 64, 24, 28, 0, code, data);
	uint32_t off, len;

	/* the metadata that follows the table in a real blob */
	memset(data + 24 + 6 * 28, 0x77, sizeof(data) - 24 - 6 * 28);
	REQUIRE(!v8_blob__table(data, sizeof(data), code, sz, false, &t));
	CHECK_EQ_INT(t.align, 64);
	CHECK_EQ_INT(t.header, 24);
	CHECK_EQ_INT(t.stride, 28);
	CHECK_EQ_INT(t.cnt, 6);
	CHECK_EQ_U64(t.code_base, 0);
	v8_blob__entry(data, &t, 3, &off, &len);
	CHECK_EQ_INT(len, 200);
	CHECK_EQ_INT(off, 64 + 128 + 64 + 128 + 64);
	/* a builtin's padding that is not int3: no table */
	code[64 + 100] = 0x90;
	CHECK(v8_blob__table(data, sizeof(data), code, sz, false, &t) == -ENOENT);
	code[64 + 100] = 0xcc;
	/* two builtins at one offset (a gap elsewhere): no table */
	put_u32(data + 24 + 5 * 28, 0);
	CHECK(v8_blob__table(data, sizeof(data), code, sz, false, &t) == -ENOENT);
}

TEST(table_one_blob)
{
	static const uint32_t lens[] = { 40, 31, 32, 5 };
	static const size_t order[] = { 0, 1, 2, 3 };
	uint8_t blob[1024];
	struct v8_blob_table t;
	/* 16 header bytes + 4 entries of 8 = 48, instructions from 64 */
	size_t sz = make_blob(lens, order, 4, 32, 16, 8, 64, blob, blob);

	memset(blob + 48, 0, 16);
	REQUIRE(!v8_blob__table(blob, sz, blob, sz, true, &t));
	CHECK_EQ_INT(t.align, 32);
	CHECK_EQ_INT(t.header, 16);
	CHECK_EQ_INT(t.stride, 8);
	CHECK_EQ_INT(t.cnt, 4);
	CHECK_EQ_U64(t.code_base, 64);
	/* cut short within the last builtin: no table tiles the code */
	CHECK(v8_blob__table(blob, sz - 16, blob, sz - 16, true, &t) == -ENOENT);
}

static void table_random(const uint8_t *buf, size_t len, unsigned int i, unsigned int *seed)
{
	struct v8_blob_table t;

	(void)seed;
	if (!v8_blob__table(buf, len, buf, len, i & 1, &t))
		CHECK(t.cnt > 0 && t.code_base < len);
}

TEST(table_random)
{
	test_random_buffers(31, 5000, 256, table_random);
}

TEST(name_lookup)
{
	struct v8_builtin b[] = { { .off = 0, .size = 64, .name = 0 },
				  { .off = 64, .size = 128, .name = UINT32_MAX },
				  { .off = 192, .size = 64, .name = 13 } };
	char names[] = "[v8] JSEntry\0[v8] WideHandler";
	struct v8_blob blob = {
		.code = 0x1000, .code_sz = 256, .builtins = b, .builtin_cnt = 3, .names = names
	};

	CHECK_STR(v8_blob__name(&blob, 0x1000), "[v8] JSEntry");
	CHECK_STR(v8_blob__name(&blob, 0x103f), "[v8] JSEntry");
	CHECK(!v8_blob__name(&blob, 0x1040)); /* unnamed */
	CHECK_STR(v8_blob__name(&blob, 0x10c0), "[v8] WideHandler");
	CHECK(!v8_blob__name(&blob, 0x1100));
	CHECK(!v8_blob__name(&blob, 0xfff));
}

/* The vaddr of the builtin named "[v8] <name>" in b, or 0. */
static uint64_t builtin_at(const struct v8_blob *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->builtin_cnt; i++)
		if (b->builtins[i].name != UINT32_MAX &&
		    !strcmp(b->names + b->builtins[i].name + 5, name))
			return b->code + b->builtins[i].off;
	return 0;
}

/* SUITE's libnode.so.SONAME in the runtime matrix's root (RM_CACHE as runtime_root.sh has
 * it): its blob found (cnt builtins of code_sz bytes), every builtin named, "JSEntry" at
 * offset js_entry, the handlers from WideHandler at offset wide.
 */
static void check_libnode(const char *suite, int soname, size_t cnt, uint64_t code_sz,
			  uint64_t js_entry, uint64_t wide)
{
	const char *cache = getenv("RM_CACHE");
	char path[600];
	struct elf_file *ef;
	struct v8_blob b;
	size_t i;

	snprintf(path, sizeof(path), "%s/roots/%s/usr/lib/x86_64-linux-gnu/libnode.so.%d",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite, soname);
	if (access(path, R_OK))
		SKIP("no %s root here (scripts/runtime_root.sh %s)", suite, suite);
	REQUIRE((ef = elf_file__open(path)));
	CHECK(!v8_blob__find(ef, &b));
	CHECK_EQ_U64(b.builtin_cnt, cnt);
	CHECK_EQ_U64(b.code_sz, code_sz);
	REQUIRE(b.names);
	for (i = 0; i < b.builtin_cnt; i++)
		CHECK(b.builtins[i].name != UINT32_MAX);
	CHECK_EQ_U64(builtin_at(&b, "JSEntry") - b.code, js_entry);
	CHECK_EQ_U64(builtin_at(&b, "WideHandler") - b.code, wide);
	CHECK_EQ_U64(b.handlers_lo - b.code, wide);
	CHECK_STR(v8_blob__name(&b, b.code + js_entry + 5), "[v8] JSEntry");
	CHECK(!v8_blob__name(&b, b.code + b.code_sz));
	v8_blob__free(&b);
	elf_file__free(ef);
}

TEST(bullseye_libnode_78)
{
	check_libnode("bullseye", 72, 1553, 0x1175e0, 0x45e0, 0xd7680);
}

TEST(bookworm_libnode_102)
{
	check_libnode("bookworm", 108, 2054, 0x15a980, 0x9d40, 0x114680);
}

TEST(sid_libnode_136)
{
	check_libnode("sid", 137, 2384, 0x204d80, 0xaec0, 0x1ab7c0);
}

/* trixie's libnode (V8 11.3), against NodeSource's node of the same V8 and its symbols. */
TEST(trixie_libnode_113)
{
	static const char *const names[] = { "v8_Default_embedded_blob_code_", "Builtins_JSEntry",
					     "Builtins_WideHandler",
					     "Builtins_InterpreterEntryTrampoline" };
	struct interp_sym sym[4];
	struct elf_file *node = elf_file__open("/usr/bin/node"), *ef;
	const char *cache = getenv("RM_CACHE");
	char path[600];
	struct v8_blob b;

	check_libnode("trixie", 115, 2182, 0x191ac0, 0x9d80, 0x1436c0);
	if (!node)
		SKIP("no /usr/bin/node (NodeSource's Node 20) to compare with");
	interp_elf__symbols(node, names, 4, sym);
	if (!sym[0].found || !sym[3].found) {
		elf_file__free(node);
		SKIP("/usr/bin/node has no Builtins_ symbols");
	}
	snprintf(path, sizeof(path), "%s/roots/trixie/usr/lib/x86_64-linux-gnu/libnode.so.115",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix");
	REQUIRE((ef = elf_file__open(path)));
	REQUIRE(!v8_blob__find(ef, &b));
	CHECK_EQ_U64(builtin_at(&b, "JSEntry") - b.code, sym[1].addr - sym[0].addr);
	CHECK_EQ_U64(builtin_at(&b, "WideHandler") - b.code, sym[2].addr - sym[0].addr);
	CHECK_EQ_U64(builtin_at(&b, "InterpreterEntryTrampoline") - b.code,
		     sym[3].addr - sym[0].addr);
	v8_blob__free(&b);
	elf_file__free(ef);
	elf_file__free(node);
}

/* bookworm's arm64 libnode.so.108 (V8 10.2, scripts/arm64_files.sh's root): its blob through
 * the arm64 accessors and R_AARCH64_* relocations, its names from .rodata in the text's
 * segment; the builtin it names InterpreterEntryTrampoline (names and extents come from two
 * different tables) is the one that sets x19, V8's bytecode-offset register on arm64, to
 * BytecodeArray's header size less the heap tag (56 - 1 in V8 10.2): `mov x19, #55`.
 */
TEST(bookworm_arm64_libnode_102)
{
	const char *root = getenv("STACKSCOPE_ARM64_FILES");
	char path[600];
	struct elf_file *ef;
	struct v8_blob b;
	size_t i;

	snprintf(path, sizeof(path), "%s/usr/lib/aarch64-linux-gnu/libnode.so.108",
		 root ? root : "build/arm64-debs/root");
	if (access(path, R_OK))
		SKIP_SETUP("no arm64 libnode.so.108 in build/arm64-debs (scripts/arm64_files.sh)");
	REQUIRE((ef = elf_file__open(path)));
	REQUIRE(!v8_blob__find(ef, &b));
	CHECK_EQ_U64(b.code, 0xc07b80);
	CHECK_EQ_U64(b.code_sz, 0x14c140);
	CHECK_EQ_U64(b.builtin_cnt, 2054);
	REQUIRE(b.names);
	for (i = 0; i < b.builtin_cnt; i++)
		CHECK(b.builtins[i].name != UINT32_MAX);
	CHECK_EQ_U64(builtin_at(&b, "JSEntry") - b.code, 0xa0c0);
	{
		uint64_t at = builtin_at(&b, "InterpreterEntryTrampoline"), k;
		const uint8_t *c;
		bool sets = false;

		REQUIRE(at && (c = interp_elf__bytes(ef, at, 0x400)));
		for (k = 0; k + 4 <= 0x400; k += 4)
			sets |= c[k] == 0xf3 && c[k + 1] == 0x06 && c[k + 2] == 0x80 &&
				c[k + 3] == 0xd2; /* movz x19, #0x37 */
		CHECK(sets);
	}
	CHECK_EQ_U64(builtin_at(&b, "WideHandler") - b.code, 0x1070c0);
	CHECK_EQ_U64(b.handlers_lo - b.code, 0x1070c0);
	CHECK_STR(v8_blob__name(&b, b.code + 0xa0c0 + 4), "[v8] JSEntry");
	v8_blob__free(&b);
	elf_file__free(ef);
}

int main(void)
{
	RUN(accessors_of_debian);
	RUN(accessors_arm64);
	RUN(accessors_cut_short_or_other);
	RUN(accessors_random);
	RUN(table_two_blobs_reordered);
	RUN(table_one_blob);
	RUN(table_random);
	RUN(name_lookup);
	RUN(bullseye_libnode_78);
	RUN(bookworm_libnode_102);
	RUN(bookworm_arm64_libnode_102);
	RUN(trixie_libnode_113);
	RUN(sid_libnode_136);
	return test_summary();
}
