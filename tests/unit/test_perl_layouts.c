/* Which layout the Perl runtime (src/interp/perl/) picks for a Perl binary, without running
 * Perl: Debian's /usr/bin/perl (5.36, threaded) read into memory with its PL_version byte
 * rewritten to each version, or a symbol renamed away, and detected as an in-memory ELF. A
 * version with a table (5.32, 5.36, 5.40, 5.42) gets that table (checked here by the numbers
 * that differ between them); any other version, and a build without PL_thr_key (not
 * threaded) or PL_op_name, is detected as Perl but unsupported: its samples get the
 * "[perl: unsupported version]" marker. The tables themselves are checked against live
 * interpreters: test_perl.c on the host's 5.36, the runtime matrix in the other versions'
 * roots.
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "interp/common/interp_elf.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "test.h"

#define PERL "/usr/bin/perl"
#define HOST_VERSION 36

extern const struct interp_runtime perl_runtime;

static uint8_t *image;
static size_t image_sz;
static size_t version_off; /* the file offset of PL_version */

/* The file offset of vaddr in ef's loaded segments, or 0. */
static size_t file_offset(const struct elf_file *ef, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *s = elf_file__segment(ef, i);

		if (s->type == PT_LOAD && vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz)
			return (size_t)(s->offset + (vaddr - s->vaddr));
	}
	return 0;
}

/* PERL into image (once), and where its PL_version byte is; ends the test when it cannot. */
static void load_perl(void)
{
	static const char *const names[] = { "PL_version" };
	struct interp_sym sym = { 0 };
	struct elf_file *ef = NULL;
	uint8_t *buf = NULL;
	size_t sz = 0, off = 0;
	FILE *f;
	long end;

	if (!image) {
		f = fopen(PERL, "rb");
		if (!f)
			SKIP_SETUP("%s missing (Debian perl)", PERL);
		if (!fseek(f, 0, SEEK_END) && (end = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
			sz = (size_t)end;
			buf = malloc(sz);
		}
		if (buf && fread(buf, 1, sz, f) == sz)
			ef = elf_file__open_mem(buf, sz);
		fclose(f);
		if (ef) {
			interp_elf__symbols(ef, names, 1, &sym);
			if (sym.found && sym.size == 1)
				off = file_offset(ef, sym.addr);
			elf_file__free(ef);
		}
		if (!off || off >= sz) {
			free(buf);
			REQUIRE(!"a readable perl with PL_version");
		}
		image = buf;
		image_sz = sz;
		version_off = off;
	}
	if (image[version_off] != HOST_VERSION)
		SKIP("%s is Perl 5.%d, not 5.%d", PERL, image[version_off], HOST_VERSION);
}

/* The runtime's file_detect over img as a file named path: its answer, the entry in *bpf. */
static int detect(const uint8_t *img, const char *path, struct interp_file *bpf)
{
	struct executable exe = { .path = (char *)path, .fd = -1 };
	void *rt = interp_runtime__new(&perl_runtime), *file_state = NULL;
	int err;

	REQUIRE(rt);
	exe.elf = elf_file__open_mem(img, image_sz);
	REQUIRE(exe.elf);
	memset(bpf, 0, sizeof(*bpf));
	err = interp_runtime__file_detect(&perl_runtime, rt, &exe, &file_state, bpf);
	if (file_state)
		interp_runtime__file_free(&perl_runtime, rt, file_state);
	elf_file__free(exe.elf);
	interp_runtime__free(&perl_runtime, rt);
	return err;
}

/* The host's perl with PL_version set to version, detected: *bpf. */
static int detect_version(int version, struct interp_file *bpf)
{
	uint8_t *copy = malloc(image_sz);
	int err;

	REQUIRE(copy);
	memcpy(copy, image, image_sz);
	copy[version_off] = (uint8_t)version;
	err = detect(copy, PERL, bpf);
	free(copy);
	return err;
}

/* The host's perl with every string-table entry `name` renamed (its last letter changed, so
 * nothing defines name any more), detected: *bpf.
 */
static int detect_without(const char *name, struct interp_file *bpf)
{
	uint8_t *copy = malloc(image_sz), *p, *end;
	size_t n = strlen(name) + 1, renamed = 0;
	int err;

	REQUIRE(copy);
	memcpy(copy, image, image_sz);
	end = copy + image_sz;
	for (p = copy + 1; p + n <= end && (p = memmem(p, (size_t)(end - p), name, n)); p += n) {
		if (p[-1] != '\0')
			continue; /* the tail of a longer name */
		p[n - 2] ^= 0x20;
		renamed++;
	}
	CHECK(renamed > 0);
	err = detect(copy, PERL, bpf);
	free(copy);
	return err;
}

TEST(tables)
{
	/* version, then the numbers that tell the tables apart (tests/data/perl_layout.c
	 * printed them from each version's headers)
	 */
	static const struct {
		int version;
		uint16_t curcop, curstackinfo, enter_eval, require, dofile, si_type_max;
	} want[] = {
		{ 32, 224, 240, 345, 342, 343, 11 },
		{ 36, 208, 224, 345, 342, 343, 11 },
		{ 40, 208, 224, 348, 345, 346, 11 },
		{ 42, 208, 224, 352, 349, 350, 13 },
	};
	struct interp_file bpf;
	size_t i;

	load_perl();
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct perl_offsets *o = &bpf.perl.off;

		printf("  5.%d\n", want[i].version);
		CHECK_EQ_INT(detect_version(want[i].version, &bpf), 0);
		CHECK_EQ_INT(bpf.supported, 1);
		CHECK_EQ_INT(bpf.major, 5);
		CHECK_EQ_INT(bpf.minor, want[i].version);
		CHECK(bpf.range_end[0] > bpf.range_start[0]); /* Perl_runops_standard */
		CHECK_EQ_INT(o->interp_curcop, want[i].curcop);
		CHECK_EQ_INT(o->interp_curstackinfo, want[i].curstackinfo);
		CHECK_EQ_INT(o->op_enter_eval, want[i].enter_eval);
		CHECK_EQ_INT(o->op_require, want[i].require);
		CHECK_EQ_INT(o->op_dofile, want[i].dofile);
		CHECK_EQ_INT(o->si_type_max, want[i].si_type_max);
		/* the same in every version so far */
		CHECK_EQ_INT(o->cx_size, 104);
		CHECK_EQ_INT(o->cx_sub_cv, 72);
		CHECK_EQ_INT(o->cop_line, 36);
	}
}

/* A Perl detected, with its version, but no layout: the walk gets a marker, not frames. */
TEST(other_versions_unsupported)
{
	static const int versions[] = { 30, 34, 35, 38, 41, 44, 0, 255 };
	struct interp_file bpf;
	size_t i;

	load_perl();
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		printf("  5.%d\n", versions[i]);
		CHECK_EQ_INT(detect_version(versions[i], &bpf), 0);
		CHECK_EQ_INT(bpf.supported, 0);
		CHECK_EQ_INT(bpf.major, 5);
		CHECK_EQ_INT(bpf.minor, versions[i]);
		CHECK(bpf.range_end[0] > bpf.range_start[0]);
	}
}

/* Without PL_thr_key (a non-threaded build: the interpreter is not in a struct) or
 * PL_op_name (the op numbers cannot be checked), a known version is unsupported too.
 */
TEST(needed_symbols)
{
	struct interp_file bpf;

	load_perl();
	CHECK_EQ_INT(detect_version(HOST_VERSION, &bpf), 0);
	CHECK_EQ_INT(bpf.supported, 1);
	CHECK_EQ_INT(detect_without("PL_thr_key", &bpf), 0);
	CHECK_EQ_INT(bpf.supported, 0);
	CHECK_EQ_INT(bpf.minor, HOST_VERSION);
	CHECK_EQ_INT(detect_without("PL_op_name", &bpf), 0);
	CHECK_EQ_INT(bpf.supported, 0);
	CHECK_EQ_INT(detect_without("PL_curinterp", &bpf), 0);
	CHECK_EQ_INT(bpf.supported, 0);
	/* no Perl_runops_standard: not an interpreter (perl linked to libperl.so) */
	CHECK(detect_without("Perl_runops_standard", &bpf) < 0);
}

/* Only files named like a Perl are looked into. */
TEST(file_name)
{
	struct interp_file bpf;

	load_perl();
	CHECK_EQ_INT(detect(image, "/usr/bin/perl5.36.0", &bpf), 0);
	CHECK_EQ_INT(detect(image, "/usr/lib/x86_64-linux-gnu/libperl.so.5.36", &bpf), 0);
	CHECK(detect(image, "/usr/bin/python3", &bpf) < 0);
}

int main(void)
{
	RUN(tables);
	RUN(other_versions_unsupported);
	RUN(needed_symbols);
	RUN(file_name);
	free(image);
	return test_summary();
}
