/* libFuzzer target for the Go pclntab reader (src/formats/gopclntab.c). An input that starts with
 * the ELF magic is opened as a Go executable (section, moduledata search, gofunc); any other
 * input is a raw pclntab whose inline-tree data (gofunc) is the input itself. Then up to 512
 * functions spread over the table are read, looked up at its entry, middle and last byte and just outside, and its
 * pcsp table walked; every string handed out is read to its end, so ASan sees any
 * out-of-bounds pointer. Nothing may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_gopclntab.sh (seeds: .gopclntab of the Go fixtures).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/go_build_id.h"
#include "formats/gopclntab.h"

#define FUZZ_FUNC_MAX 512 /* functions visited per input, spread over the table */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t fuzz_sink;

static void touch(const char *s)
{
	if (s)
		fuzz_sink += strlen(s);
}

static int on_sp(void *ctx, uint64_t start, uint64_t end, int32_t delta)
{
	fuzz_sink += (size_t)(end - start) + (size_t)delta;
	return 0;
}

static void lookup(const struct gopclntab *t, uint64_t pc)
{
	struct go_frame fr[GO_MAX_FRAMES];
	int i, n = gopclntab__lookup(t, pc, fr, GO_MAX_FRAMES);

	for (i = 0; i < n; i++) {
		touch(fr[i].function);
		touch(fr[i].file);
	}
	n = gopclntab__lookup(t, pc, fr, 2); /* a chain cut short */
	for (i = 0; i < n; i++)
		touch(fr[i].function);
}

static void exercise(const struct gopclntab *t)
{
	size_t k, i, cnt = gopclntab__func_cnt(t);

	for (k = 0; k < cnt && k < FUZZ_FUNC_MAX; k++) {
		struct go_func gf;

		i = cnt <= FUZZ_FUNC_MAX ? k : k * (cnt / FUZZ_FUNC_MAX);
		if (gopclntab__func(t, i, &gf))
			continue;
		touch(gf.name);
		lookup(t, gf.entry);
		lookup(t, gf.entry + (gf.end - gf.entry) / 2);
		lookup(t, gf.end - 1);
		lookup(t, gf.end);
		lookup(t, gf.entry - 1);
		gopclntab__sp_deltas(t, i, on_sp, NULL);
	}
	gopclntab__find(t, 0);
	gopclntab__find(t, UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gopclntab_image img = { data, size, data, size };
	struct gopclntab *t;

	if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
		struct elf_file *ef = elf_file__open_mem(data, size);
		char id[GO_BUILD_ID_MAX + 1];

		if (ef && go_build_id__read(ef, id, sizeof(id)) > 0)
			touch(id);
		t = ef ? gopclntab__open(ef) : NULL;
		if (t)
			exercise(t);
		gopclntab__free(t);
		elf_file__free(ef);
		return 0;
	}
	t = gopclntab__open_image(&img);
	if (t)
		exercise(t);
	gopclntab__free(t);
	return 0;
}
