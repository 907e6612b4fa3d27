/* libFuzzer target for the DWARF reader (src/formats/dwarf.c over libdw) and the symbol
 * fallback behind it: the input is an ELF image; every address the input's first bytes name,
 * and a sweep over the unit ranges, is looked up. Nothing may crash, hang or leak in our code.
 * Build and run: tests/fuzz/run_fuzz_dwarf.sh (seeds: the dwarf_* fixtures).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/demangle.h"
#include "formats/dwarf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dwarf_opts opts = { .cache_cap = 16, .demangle = true };
	const struct dwarf_line *lines;
	struct dwarf_file *df;
	uint64_t base = 0x1000, addr;
	size_t i;

	df = dwarf_file__open_mem(data, size, &opts);
	if (!df)
		return 0;
	if (size >= 0x20)
		memcpy(&base, data + 0x18, sizeof(base)); /* e_entry */
	dwarf_file__has_dwarf(df);
	for (i = 0; i < 64; i++) {
		addr = base + i * 7;
		dwarf_file__lookup(df, addr, &lines);
	}
	dwarf_file__free(df);
	return 0;
}
