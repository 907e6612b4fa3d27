/* Tests for src/formats/elf_file.c on fixtures built from tests/data/symbols.c (tests/data/elf.mk).
 * Truth comes from binutils (readelf) and zlib, never from the code under test; corrupt
 * copies and a seeded mutation loop check that bad input fails cleanly (run under ASan).
 */
#include <elf.h>
#include <errno.h>
#include <zlib.h>

#include "test.h"
#include "formats/elf_file.h"
#include "formats/elf_symbols.h"

/* Read a whole file into a malloc'ed buffer. */
static void *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		goto cleanup;
	buf = malloc(len);
	if (buf && fread(buf, 1, len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	*size = len;
cleanup:
	fclose(f);
	return buf;
}

/* First line of `cmd` output containing key, copied into line; 0 or -1. */
static int cmd_line(const char *cmd, const char *key, char *line, size_t cap)
{
	FILE *p = popen(cmd, "r");
	char rest[512];
	int ret = -1;

	if (!p)
		return -1;
	while (fgets(line, cap, p)) {
		if (strstr(line, key)) {
			ret = 0;
			break;
		}
	}
	while (fgets(rest, sizeof(rest), p)) /* let the command finish */
		;
	pclose(p);
	return ret;
}

/* Build id hex per `readelf -n`. */
static int readelf_build_id(const char *path, char *hex, size_t cap)
{
	char cmd[1024], line[512], *p, *end;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	if (cmd_line(cmd, "Build ID:", line, sizeof(line)))
		return -1;
	p = strstr(line, "Build ID:") + strlen("Build ID:");
	while (*p == ' ')
		p++;
	end = p;
	while ((*end >= '0' && *end <= '9') || (*end >= 'a' && *end <= 'f'))
		end++;
	if (end == p || (size_t)(end - p) >= cap)
		return -1;
	memcpy(hex, p, end - p);
	hex[end - p] = '\0';
	return 0;
}

/* Address, offset and size of a section per `readelf -SW`. */
static int readelf_section(const char *path, const char *name, uint64_t *addr, uint64_t *off,
			   uint64_t *size)
{
	char cmd[1024], key[128], line[512], *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
	snprintf(key, sizeof(key), " %s ", name);
	if (cmd_line(cmd, key, line, sizeof(line)))
		return -1;
	p = strstr(line, key) + strlen(key);
	while (*p == ' ')
		p++;
	while (*p && *p != ' ') /* type */
		p++;
	*addr = strtoull(p, &p, 16);
	*off = strtoull(p, &p, 16);
	*size = strtoull(p, &p, 16);
	return 0;
}

/* Number of program headers per `readelf -lW`. */
static long readelf_phnum(const char *path)
{
	char cmd[1024], line[512], *p;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s' 2>/dev/null", path);
	if (cmd_line(cmd, "program headers", line, sizeof(line)))
		return -1;
	p = strstr(line, "There are ");
	return p ? strtol(p + strlen("There are "), NULL, 10) : -1;
}

TEST(open_errors)
{
	struct elf_file *ef;

	errno = 0;
	ef = elf_file__open("/nonexistent/stackscope-no-such-file");
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOENT);

	ef = elf_file__open("/etc/hostname");
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOEXEC);

	ef = elf_file__open(test_fixture("elf_trunc_hdr"));
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOEXEC);

	ef = elf_file__open(test_fixture("elf_bad_magic"));
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOEXEC);

	ef = elf_file__open(test_fixture("elf_bad_phoff"));
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOEXEC);

	ef = elf_file__open_mem("\177ELF", 4);
	CHECK(!ef);
	CHECK_EQ_INT(errno, ENOEXEC);

	elf_file__free(NULL);
}

static void check_basics(const char *name, uint16_t want_type)
{
	const char *path = test_fixture(name);
	char want_hex[2 * ELF_BUILD_ID_MAX + 1], hex[2 * ELF_BUILD_ID_MAX + 1];
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_section text;
	uint64_t addr, off, size, vaddr;
	struct elf_file *ef;
	int n;

	ef = elf_file__open(path);
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__type(ef), want_type);
	CHECK_EQ_INT(elf_file__machine(ef), EM_X86_64);

	REQUIRE(readelf_build_id(path, want_hex, sizeof(want_hex)) == 0);
	CHECK_EQ_INT(elf_file__build_id_hex(ef, hex, sizeof(hex)), 0);
	CHECK_STR(hex, want_hex);
	n = elf_file__build_id(ef, id, sizeof(id));
	CHECK_EQ_INT(n, 20);
	CHECK_EQ_INT(elf_file__build_id_hex(ef, hex, 8), -ENOSPC);

	CHECK_EQ_INT(elf_file__segment_cnt(ef), readelf_phnum(path));
	CHECK(elf_file__segment(ef, elf_file__segment_cnt(ef)) == NULL);

	REQUIRE(readelf_section(path, ".text", &addr, &off, &size) == 0);
	REQUIRE(elf_file__section(ef, ".text", &text) == 0);
	CHECK_EQ_U64(text.addr, addr);
	CHECK_EQ_U64(text.offset, off);
	CHECK_EQ_U64(text.size, size);
	CHECK_EQ_INT(text.type, SHT_PROGBITS);
	CHECK(text.flags & SHF_EXECINSTR);
	CHECK(text.data != NULL);

	/* .text lies in the executable PT_LOAD at the same offset/address relation */
	CHECK_EQ_INT(elf_file__offset_to_vaddr(ef, off + 3, &vaddr), 0);
	CHECK_EQ_U64(vaddr, addr + 3);
	CHECK_EQ_INT(elf_file__offset_to_vaddr(ef, elf_file__size(ef) + 100, &vaddr), -ENOENT);

	CHECK_EQ_INT(elf_file__section(ef, ".no_such_section", &text), -ENOENT);
	elf_file__free(ef);
}

TEST(pie)
{
	check_basics("elf_pie", ET_DYN);
}

TEST(nopie)
{
	check_basics("elf_nopie", ET_EXEC);
}

TEST(shared_lib)
{
	check_basics("libelf_fixture.so", ET_DYN);
}

TEST(section_bytes_match_file)
{
	const char *path = test_fixture("elf_pie");
	struct elf_section sec;
	struct elf_file *ef;
	size_t size = 0;
	uint8_t *raw;

	raw = read_file(path, &size);
	REQUIRE(raw);
	ef = elf_file__open(path);
	REQUIRE(ef);
	CHECK_EQ_U64(elf_file__size(ef), size);
	REQUIRE(elf_file__section(ef, ".eh_frame", &sec) == 0);
	REQUIRE(sec.offset + sec.size <= size);
	CHECK(!memcmp(sec.data, raw + sec.offset, sec.size));
	REQUIRE(elf_file__section(ef, ".bss", &sec) == 0);
	CHECK_EQ_INT(sec.type, SHT_NOBITS);
	CHECK(sec.data == NULL);
	elf_file__free(ef);
	free(raw);
}

TEST(open_mem_and_fd)
{
	const char *path = test_fixture("elf_pie");
	char a[2 * ELF_BUILD_ID_MAX + 1], b[2 * ELF_BUILD_ID_MAX + 1];
	struct elf_file *ef_path, *ef_mem, *ef_fd;
	size_t size = 0;
	void *raw;
	FILE *f;

	raw = read_file(path, &size);
	REQUIRE(raw);
	ef_path = elf_file__open(path);
	ef_mem = elf_file__open_mem(raw, size);
	free(raw); /* open_mem copies */
	f = fopen(path, "rb");
	REQUIRE(f);
	ef_fd = elf_file__open_fd(fileno(f));
	fclose(f); /* the elf_file does not depend on the caller's fd */
	REQUIRE(ef_path && ef_mem && ef_fd);

	CHECK_EQ_INT(elf_file__build_id_hex(ef_mem, a, sizeof(a)), 0);
	CHECK_EQ_INT(elf_file__build_id_hex(ef_fd, b, sizeof(b)), 0);
	CHECK_STR(a, b);
	CHECK_EQ_INT(elf_file__segment_cnt(ef_mem), elf_file__segment_cnt(ef_path));
	elf_file__free(ef_path);
	elf_file__free(ef_mem);
	elf_file__free(ef_fd);
}

TEST(debuglink)
{
	const char *name = NULL;
	struct elf_file *ef, *dbg;
	struct elf_section text;
	char a[2 * ELF_BUILD_ID_MAX + 1], b[2 * ELF_BUILD_ID_MAX + 1];
	size_t size = 0;
	uint32_t crc = 0;
	void *raw;

	ef = elf_file__open(test_fixture("elf_debuglink"));
	REQUIRE(ef);
	REQUIRE(elf_file__debuglink(ef, &name, &crc) == 0);
	CHECK_STR(name, "elf_debuglink.debug");
	raw = read_file(test_fixture("elf_debuglink.debug"), &size);
	REQUIRE(raw);
	CHECK_EQ_U64(crc, crc32(0, raw, size)); /* .gnu_debuglink uses the zlib CRC-32 */
	free(raw);

	dbg = elf_file__open(test_fixture("elf_debuglink.debug"));
	REQUIRE(dbg);
	/* the debug file's PT_NOTE points at bytes it does not hold: the id must still match */
	CHECK_EQ_INT(elf_file__build_id_hex(ef, a, sizeof(a)), 0);
	CHECK_EQ_INT(elf_file__build_id_hex(dbg, b, sizeof(b)), 0);
	CHECK_STR(a, b);
	CHECK_EQ_INT(elf_file__debuglink(dbg, &name, &crc), -ENOENT);
	REQUIRE(elf_file__section(dbg, ".text", &text) == 0);
	CHECK_EQ_INT(text.type, SHT_NOBITS);
	CHECK(text.data == NULL);
	elf_file__free(dbg);
	elf_file__free(ef);

	ef = elf_file__open(test_fixture("elf_pie"));
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__debuglink(ef, &name, &crc), -ENOENT);
	elf_file__free(ef);
}

TEST(compressed_sections)
{
	struct elf_section sec, again;
	struct elf_file *ef;
	size_t size = 0;
	void *want;

	want = read_file(test_fixture("elf_gz.debug_info"), &size); /* binutils' decompression */
	REQUIRE(want && size > 0);

	ef = elf_file__open(test_fixture("elf_gz"));
	REQUIRE(ef);
	REQUIRE(elf_file__section(ef, ".debug_info", &sec) == 0);
	CHECK(!(sec.flags & SHF_COMPRESSED));
	CHECK_EQ_U64(sec.size, size);
	CHECK(sec.data && !memcmp(sec.data, want, size));
	/* decompressed once, owned by the elf_file: the same buffer comes back */
	REQUIRE(elf_file__section(ef, ".debug_info", &again) == 0);
	CHECK(again.data == sec.data);
	elf_file__free(ef);

	/* legacy .zdebug_info (made from elf_pie) is found under its .debug_ name */
	free(want);
	want = read_file(test_fixture("elf_pie.debug_info"), &size);
	REQUIRE(want && size > 0);
	ef = elf_file__open(test_fixture("elf_zdebug"));
	REQUIRE(ef);
	REQUIRE(elf_file__section(ef, ".debug_info", &sec) == 0);
	CHECK_EQ_U64(sec.size, size);
	CHECK(sec.data && !memcmp(sec.data, want, size));
	elf_file__free(ef);
	free(want);
}

TEST(corrupt_compressed_section)
{
	struct elf_section sec;
	struct elf_file *ef;
	size_t size = 0, idx;
	uint8_t *raw;
	Elf64_Chdr ch;

	raw = read_file(test_fixture("elf_gz"), &size);
	REQUIRE(raw);
	ef = elf_file__open_mem(raw, size);
	REQUIRE(ef);
	REQUIRE(elf_file__section_index(ef, ".debug_info", &idx) == 0);
	REQUIRE(elf_file__section_at(ef, idx, &sec, NULL, NULL) == 0);
	elf_file__free(ef);
	REQUIRE(sec.offset + sizeof(ch) + 16 < size);

	/* a damaged zlib stream */
	memset(raw + sec.offset + sizeof(ch) + 2, 0xa5, 12);
	ef = elf_file__open_mem(raw, size);
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__section(ef, ".debug_info", &sec), -ENOEXEC);
	CHECK_EQ_INT(elf_file__section(ef, ".debug_info", &sec), -ENOEXEC); /* remembered */
	elf_file__free(ef);

	/* an absurd uncompressed size must not be allocated */
	memcpy(&ch, raw + sec.offset, sizeof(ch));
	ch.ch_size = (uint64_t)1 << 40;
	memcpy(raw + sec.offset, &ch, sizeof(ch));
	ef = elf_file__open_mem(raw, size);
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__section(ef, ".debug_info", &sec), -ENOEXEC);
	elf_file__free(ef);

	/* an unknown compression type */
	ch.ch_type = 77;
	memcpy(raw + sec.offset, &ch, sizeof(ch));
	ef = elf_file__open_mem(raw, size);
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__section(ef, ".debug_info", &sec), -ENOEXEC);
	elf_file__free(ef);
	free(raw);
}

TEST(corrupt_section_table)
{
	char want[2 * ELF_BUILD_ID_MAX + 1], hex[2 * ELF_BUILD_ID_MAX + 1];
	struct elf_section sec;
	struct elf_file *ef;

	/* e_shoff out of the file: sections unusable, but segments and PT_NOTE still work */
	ef = elf_file__open(test_fixture("elf_bad_shoff"));
	REQUIRE(ef);
	CHECK_EQ_INT(elf_file__section(ef, ".text", &sec), -ENOEXEC);
	CHECK_EQ_INT(elf_file__section_cnt(ef), 0);
	CHECK_EQ_INT(elf_file__segment_cnt(ef), readelf_phnum(test_fixture("elf_pie")));
	REQUIRE(readelf_build_id(test_fixture("elf_pie"), want, sizeof(want)) == 0);
	CHECK_EQ_INT(elf_file__build_id_hex(ef, hex, sizeof(hex)), 0);
	CHECK_STR(hex, want);
	elf_file__free(ef);

	/* truncated in the middle: the section header table (at the end) is gone */
	ef = elf_file__open(test_fixture("elf_trunc_half"));
	if (ef) {
		CHECK_EQ_INT(elf_file__section(ef, ".text", &sec), -ENOEXEC);
		CHECK(elf_symbols__load(ef) == NULL);
		elf_file__free(ef);
	} else {
		CHECK_EQ_INT(errno, ENOEXEC);
	}
}

/* xorshift64*: a fixed seed keeps failures reproducible */
static uint64_t rnd_state = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dULL;
}

/* Touch everything an elf_file offers; must not crash whatever the bytes are. */
static void exercise(struct elf_file *ef)
{
	static const char *const names[] = {
		".text",   ".eh_frame", ".eh_frame_hdr",      ".debug_info",   ".debug_line",
		".symtab", ".dynsym",   ".note.gnu.build-id", ".gnu_debuglink"
	};
	char hex[2 * ELF_BUILD_ID_MAX + 1];
	uint8_t id[ELF_BUILD_ID_MAX];
	struct elf_symbols *syms;
	struct elf_section sec;
	const char *name;
	uint64_t v, off;
	uint32_t crc, link;
	volatile uint8_t sink = 0;

	elf_file__build_id(ef, id, sizeof(id));
	elf_file__build_id_hex(ef, hex, sizeof(hex));
	for (size_t i = 0; i < elf_file__segment_cnt(ef); i++)
		elf_file__offset_to_vaddr(ef, elf_file__segment(ef, i)->offset, &v);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elf_file__section(ef, names[i], &sec) && sec.data && sec.size)
			sink ^= ((const uint8_t *)sec.data)[sec.size - 1];
	}
	for (size_t i = 0; i < elf_file__section_cnt(ef); i++) {
		if (!elf_file__section_at(ef, i, &sec, &name, &link) && sec.data && sec.size)
			sink ^= ((const uint8_t *)sec.data)[0] ^ (uint8_t)strlen(name);
	}
	if (!elf_file__debuglink(ef, &name, &crc))
		sink ^= (uint8_t)strlen(name);
	syms = elf_symbols__load(ef);
	if (syms) {
		for (int i = 0; i < 64; i++)
			elf_symbols__lookup(syms, rnd() & 0xffff, &off);
		elf_symbols__free(syms);
	}
	(void)sink;
}

TEST(mutation_fuzz)
{
	static const char *const bases[] = { "elf_pie", "elf_gz", "libelf_fixture.so",
					     "elf_zdebug" };
	int opened = 0, iters = 0;

	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		size_t size = 0;
		uint8_t *orig = read_file(test_fixture(bases[b]), &size), *img;
		Elf64_Ehdr eh;

		REQUIRE(orig && size > sizeof(eh));
		img = malloc(size);
		REQUIRE(img);
		memcpy(&eh, orig, sizeof(eh));
		for (int it = 0; it < 2500; it++, iters++) {
			size_t len = size, flips = 1 + rnd() % 16;
			struct elf_file *ef;

			memcpy(img, orig, size);
			for (size_t k = 0; k < flips; k++) {
				size_t at;

				/* aim at headers half of the time, where damage matters most */
				switch (rnd() % 4) {
				case 0:
					at = rnd() % sizeof(eh);
					break;
				case 1:
					at = eh.e_shoff + rnd() % ((size_t)eh.e_shnum * 64 + 1);
					break;
				default:
					at = rnd() % size;
				}
				if (at < size)
					img[at] = (uint8_t)rnd();
			}
			if (rnd() % 8 == 0)
				len = 1 + rnd() % size;
			ef = elf_file__open_mem(img, len);
			if (!ef) {
				CHECK(errno == ENOEXEC);
				continue;
			}
			opened++;
			exercise(ef);
			elf_file__free(ef);
		}
		free(img);
		free(orig);
	}
	printf("  mutation_fuzz: %d images, %d opened\n", iters, opened);
	CHECK(opened > 0);
}

int main(void)
{
	RUN(open_errors);
	RUN(pie);
	RUN(nopie);
	RUN(shared_lib);
	RUN(section_bytes_match_file);
	RUN(open_mem_and_fd);
	RUN(debuglink);
	RUN(compressed_sections);
	RUN(corrupt_compressed_section);
	RUN(corrupt_section_table);
	RUN(mutation_fuzz);
	return test_summary();
}
