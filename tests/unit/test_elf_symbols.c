/* Tests for src/formats/elf_symbols.c. The truth is `readelf -sW` (every defined FUNC/IFUNC
 * symbol, its size, binding and aliases), checked against lookups on fixtures built from
 * tests/data/symbols.c in several shapes (PIE, non-PIE, shared, stripped, split debug).
 */
#include <elf.h>
#include <errno.h>

#include "test.h"
#include "formats/elf_file.h"
#include "formats/elf_symbols.h"

#define MAX_TRUTH 4096

struct truth_sym {
	uint64_t value, size;
	char name[256];
	char bind[16];
};

struct truth {
	struct truth_sym sym[MAX_TRUTH];
	size_t cnt;
};

static struct truth truth;

/* Defined FUNC/IFUNC symbols from `readelf -sW` (both .dynsym and .symtab, "@version" cut). */
static int load_truth(const char *path, const char *only_table)
{
	char cmd[1024], line[1024];
	bool in_table = !only_table;
	FILE *p;

	truth.cnt = 0;
	snprintf(cmd, sizeof(cmd), "readelf -sW '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char type[16], bind[16], vis[16], ndx[16], name[256], *at;
		unsigned long long value, size;
		unsigned int num;

		if (!strncmp(line, "Symbol table", 12))
			in_table = !only_table || strstr(line, only_table);
		if (!in_table)
			continue;
		if (sscanf(line, " %u: %llx %llu %15s %15s %15s %15s %255s", &num, &value, &size,
			   type, bind, vis, ndx, name) != 8)
			continue;
		if ((strcmp(type, "FUNC") && strcmp(type, "IFUNC")) || !strcmp(ndx, "UND"))
			continue;
		at = strchr(name, '@');
		if (at)
			*at = '\0';
		if (truth.cnt == MAX_TRUTH || strlen(name) >= sizeof(truth.sym[0].name))
			continue;
		truth.sym[truth.cnt].value = value;
		truth.sym[truth.cnt].size = size;
		snprintf(truth.sym[truth.cnt].name, sizeof(truth.sym[0].name), "%s", name);
		snprintf(truth.sym[truth.cnt].bind, sizeof(truth.sym[0].bind), "%s", bind);
		truth.cnt++;
	}
	pclose(p);
	return truth.cnt ? 0 : -1;
}

static const struct truth_sym *truth_find(const char *name)
{
	for (size_t i = 0; i < truth.cnt; i++) {
		if (!strcmp(truth.sym[i].name, name))
			return &truth.sym[i];
	}
	return NULL;
}

/* Is name one of the truth symbols at value? */
static bool truth_is_alias(uint64_t value, const char *name)
{
	for (size_t i = 0; i < truth.cnt; i++) {
		if (truth.sym[i].value == value && !strcmp(truth.sym[i].name, name))
			return true;
	}
	return false;
}

static size_t truth_distinct_values(void)
{
	size_t n = 0;

	for (size_t i = 0; i < truth.cnt; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = truth.sym[j].value == truth.sym[i].value;
		n += !seen;
	}
	return n;
}

/* Every truth symbol resolves at its start and its last byte, and not one past its end. */
static void check_against_truth(const struct elf_symbols *syms)
{
	CHECK_EQ_INT(elf_symbols__cnt(syms), truth_distinct_values());
	for (size_t i = 0; i < truth.cnt; i++) {
		const struct truth_sym *t = &truth.sym[i];
		uint64_t off = 99;
		const char *name;

		name = elf_symbols__lookup(syms, t->value, &off);
		if (!name || !truth_is_alias(t->value, name) || off != 0) {
			test__fail("%s@0x%" PRIx64 ": got %s+%" PRIu64, t->name, t->value,
				   name ? name : "(null)", off);
			continue;
		}
		if (t->size > 1) {
			const char *last = elf_symbols__lookup(syms, t->value + t->size - 1, &off);

			CHECK_STR(last, name);
			CHECK_EQ_U64(off, t->size - 1);
		}
		if (t->size > 0) {
			const char *past = elf_symbols__lookup(syms, t->value + t->size, &off);

			/* nothing, or a different symbol starting right there */
			if (past && !(off == 0 && truth_is_alias(t->value + t->size, past)))
				test__fail("past %s: got %s+%" PRIu64, t->name, past, off);
		}
	}
}

/* End address of a section per `readelf -SW`, 0 if not found. */
static uint64_t readelf_section_end(const char *path, const char *section)
{
	char cmd[1024], key[64], line[512], *p = NULL;
	uint64_t addr, size = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
	snprintf(key, sizeof(key), " %s ", section);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!p && (p = strstr(line, key)))
			break;
	}
	while (fgets(cmd, sizeof(cmd), f))
		;
	pclose(f);
	if (!p)
		return 0;
	p += strlen(key);
	while (*p == ' ')
		p++;
	while (*p && *p != ' ') /* type */
		p++;
	addr = strtoull(p, &p, 16);
	strtoull(p, &p, 16); /* offset */
	size = strtoull(p, &p, 16);
	return addr + size;
}

static struct elf_symbols *load_path(const char *path)
{
	struct elf_file *ef = elf_file__open(path);
	struct elf_symbols *syms;

	if (!ef)
		return NULL;
	syms = elf_symbols__load(ef);
	elf_file__free(ef); /* names are owned copies: the symbols outlive the file */
	return syms;
}

static void check_fixture(const char *name)
{
	const char *path = test_fixture(name);
	struct elf_symbols *syms;

	REQUIRE(load_truth(path, NULL) == 0);
	syms = load_path(path);
	REQUIRE(syms);
	check_against_truth(syms);
	elf_symbols__free(syms);
}

TEST(pie_matches_readelf)
{
	check_fixture("elf_pie");
}

TEST(nopie_matches_readelf)
{
	check_fixture("elf_nopie");
}

TEST(shared_lib_matches_readelf)
{
	check_fixture("libelf_fixture.so");
}

TEST(alias_and_shape_rules)
{
	const struct truth_sym *t, *next = NULL;
	struct elf_symbols *syms;
	uint64_t off = 0, end;
	const char *name;

	REQUIRE(load_truth(test_fixture("elf_pie"), NULL) == 0);
	syms = load_path(test_fixture("elf_pie"));
	REQUIRE(syms);

	/* two globals: the shorter name wins */
	t = truth_find("ss_alpha_alias");
	REQUIRE(t);
	CHECK_STR(elf_symbols__lookup(syms, t->value, &off), "ss_alpha");
	/* global beats weak, although the weak alias appears first in the table */
	t = truth_find("ss_beta_weak");
	REQUIRE(t && !strcmp(t->bind, "WEAK"));
	CHECK_STR(elf_symbols__lookup(syms, t->value + 2, &off), "ss_beta");
	CHECK_EQ_U64(off, 2);
	/* static functions and ifuncs are kept */
	t = truth_find("ss_local_helper");
	REQUIRE(t && !strcmp(t->bind, "LOCAL"));
	CHECK_STR(elf_symbols__lookup(syms, t->value + 1, &off), "ss_local_helper");
	t = truth_find("ss_ifunc");
	REQUIRE(t);
	CHECK_STR(elf_symbols__lookup(syms, t->value, &off), "ss_ifunc");

	/* a zero-size symbol extends to the next symbol */
	t = truth_find("ss_nosize");
	REQUIRE(t && t->size == 0);
	for (size_t i = 0; i < truth.cnt; i++) {
		if (truth.sym[i].value > t->value && (!next || truth.sym[i].value < next->value))
			next = &truth.sym[i];
	}
	REQUIRE(next);
	CHECK_STR(elf_symbols__lookup(syms, next->value - 1, &off), "ss_nosize");
	CHECK_EQ_U64(off, next->value - 1 - t->value);
	CHECK(strcmp(elf_symbols__lookup(syms, next->value, &off), "ss_nosize"));

	/* a zero-size symbol alone in its section stops at the section's end */
	t = truth_find("_init");
	REQUIRE(t && t->size == 0);
	end = readelf_section_end(test_fixture("elf_pie"), ".init");
	REQUIRE(end > t->value);
	CHECK_STR(elf_symbols__lookup(syms, end - 1, &off), "_init");
	name = elf_symbols__lookup(syms, end, &off);
	CHECK(!name || strcmp(name, "_init"));

	/* below the first symbol */
	CHECK(elf_symbols__lookup(syms, 0, &off) == NULL);
	CHECK(elf_symbols__lookup(syms, UINT64_MAX, NULL) == NULL);
	elf_symbols__free(syms);
}

TEST(stripped_uses_dynsym)
{
	const struct truth_sym *t;
	struct elf_symbols *syms;
	uint64_t helper, off;
	const char *name;

	REQUIRE(load_truth(test_fixture("libelf_fixture.so"), NULL) == 0);
	t = truth_find("ss_local_helper");
	REQUIRE(t);
	helper = t->value;

	REQUIRE(load_truth(test_fixture("libelf_fixture_stripped.so"), ".dynsym") == 0);
	CHECK(truth_find("ss_local_helper") == NULL);
	syms = load_path(test_fixture("libelf_fixture_stripped.so"));
	REQUIRE(syms);
	check_against_truth(syms);
	t = truth_find("ss_gamma");
	REQUIRE(t);
	CHECK_STR(elf_symbols__lookup(syms, t->value, &off), "ss_gamma");
	/* the static function is gone, and no sized exported symbol may claim its address */
	name = elf_symbols__lookup(syms, helper, &off);
	CHECK(!name || strcmp(name, "ss_local_helper"));
	elf_symbols__free(syms);
}

TEST(split_debug)
{
	struct elf_symbols *syms;
	struct elf_file *ef;

	/* the stripped PIE only imports functions: nothing to load */
	ef = elf_file__open(test_fixture("elf_debuglink"));
	REQUIRE(ef);
	errno = 0;
	CHECK(elf_symbols__load(ef) == NULL);
	CHECK_EQ_INT(errno, ENOENT);
	elf_file__free(ef);

	/* the .debug file has every symbol of the original (its .text is NOBITS) */
	REQUIRE(load_truth(test_fixture("elf_pie"), NULL) == 0);
	syms = load_path(test_fixture("elf_debuglink.debug"));
	REQUIRE(syms);
	check_against_truth(syms);
	elf_symbols__free(syms);
}

/* Point a section header field of a copy of path somewhere bad; returns the open copy. */
static struct elf_file *open_patched(const char *path, const char *section, size_t field_off,
				     uint64_t value)
{
	struct elf_file *ef;
	size_t idx, size;
	Elf64_Ehdr eh;
	uint8_t *raw;
	FILE *f;
	long len;

	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	size = len > 0 ? (size_t)len : 0;
	raw = malloc(size ? size : 1);
	if (!raw || fread(raw, 1, size, f) != size) {
		fclose(f);
		free(raw);
		return NULL;
	}
	fclose(f);
	ef = elf_file__open_mem(raw, size);
	if (!ef || elf_file__section_index(ef, section, &idx)) {
		elf_file__free(ef);
		free(raw);
		return NULL;
	}
	elf_file__free(ef);
	memcpy(&eh, raw, sizeof(eh));
	memcpy(raw + eh.e_shoff + idx * sizeof(Elf64_Shdr) + field_off, &value, sizeof(value));
	ef = elf_file__open_mem(raw, size);
	free(raw);
	return ef;
}

TEST(corrupt_tables)
{
	struct elf_symbols *syms;
	struct elf_file *ef;
	uint64_t off;

	/* .symtab size beyond the file, PIE: .dynsym has no defined function to fall back on */
	ef = open_patched(test_fixture("elf_pie"), ".symtab", offsetof(Elf64_Shdr, sh_size),
			  (uint64_t)1 << 40);
	REQUIRE(ef);
	errno = 0;
	CHECK(elf_symbols__load(ef) == NULL);
	CHECK_EQ_INT(errno, ENOEXEC);
	elf_file__free(ef);

	/* same damage to a shared library: the exported functions still come from .dynsym */
	ef = open_patched(test_fixture("libelf_fixture.so"), ".symtab",
			  offsetof(Elf64_Shdr, sh_offset), (uint64_t)1 << 40);
	REQUIRE(ef);
	syms = elf_symbols__load(ef);
	elf_file__free(ef);
	REQUIRE(syms);
	REQUIRE(load_truth(test_fixture("libelf_fixture_stripped.so"), ".dynsym") == 0);
	CHECK_EQ_INT(elf_symbols__cnt(syms), truth_distinct_values());
	CHECK_STR(elf_symbols__lookup(syms, truth_find("ss_beta")->value, &off), "ss_beta");
	elf_symbols__free(syms);

	/* .symtab's string table link out of range */
	ef = open_patched(test_fixture("elf_pie"), ".symtab", offsetof(Elf64_Shdr, sh_link),
			  0xffff);
	REQUIRE(ef);
	errno = 0;
	CHECK(elf_symbols__load(ef) == NULL);
	CHECK_EQ_INT(errno, ENOEXEC);
	elf_file__free(ef);

	/* the string table truncated to a few bytes: names past it are dropped, none invented */
	ef = open_patched(test_fixture("elf_pie"), ".strtab", offsetof(Elf64_Shdr, sh_size), 3);
	REQUIRE(ef);
	syms = elf_symbols__load(ef);
	CHECK(!syms || elf_symbols__cnt(syms) == 0);
	elf_symbols__free(syms);
	elf_file__free(ef);
}

/* Borrowed names give the same answers as copied ones, at every byte of the library. */
TEST(borrowed_names_same_as_copied)
{
	struct elf_file *ef = elf_file__open(test_fixture("libelf_fixture.so"));
	struct elf_symbols *a = NULL, *b = NULL;
	uint64_t addr, oa, ob;
	size_t hits = 0;

	REQUIRE(ef);
	a = elf_symbols__load(ef);
	b = elf_symbols__load_borrowed(ef);
	REQUIRE(a && b);
	CHECK_EQ_INT(elf_symbols__cnt(a), elf_symbols__cnt(b));
	for (addr = 0; addr < 0x4000; addr++) {
		const char *na = elf_symbols__lookup(a, addr, &oa);
		const char *nb = elf_symbols__lookup(b, addr, &ob);

		if (!na || !nb) {
			CHECK(!na && !nb);
			continue;
		}
		hits++;
		if (strcmp(na, nb) || oa != ob) {
			test__fail("0x%" PRIx64 ": %s+%" PRIu64 " != %s+%" PRIu64, addr, na, oa, nb,
				   ob);
			break;
		}
	}
	CHECK(hits > 100);
	elf_symbols__free(a);
	elf_symbols__free(b);
	elf_file__free(ef);
}

int main(void)
{
	RUN(pie_matches_readelf);
	RUN(nopie_matches_readelf);
	RUN(shared_lib_matches_readelf);
	RUN(alias_and_shape_rules);
	RUN(stripped_uses_dynsym);
	RUN(split_debug);
	RUN(corrupt_tables);
	RUN(borrowed_names_same_as_copied);
	return test_summary();
}
