/* libFuzzer target for the call-frame information path: the .eh_frame / .debug_frame /
 * .eh_frame_hdr reader (src/formats/eh_frame.c), the CFA program interpreter (src/unwind/cfi.c)
 * and the table builder (src/unwind/unwind_table.c).
 *
 * The input is an ELF image: its table is built the way unwind_maps builds one
 * (unwind_table__build() with symbol rules, and with the file as its own debug file when the
 * last byte is odd, which adds its .debug_frame a second time as the debug file's). An input
 * that is not an ELF file is taken as raw CFI bytes instead: as an .eh_frame, a .debug_frame
 * and an .eh_frame_hdr. Every table must keep the invariants unwind_table.h states (rows
 * strictly increasing, no two equal consecutive rules, the last row INVALID), find() must agree
 * with the rows, and the rows must be accepted back by unwind_table__from_rows() as the on-disk
 * cache does. Nothing may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_cfi.sh (seeds: cfi_* fixtures and raw .eh_frame dumps).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/elf_file.h"
#include "formats/eh_frame.h"
#include "unwind/unwind_table.h"

#define FUZZ_MAX_ROWS ((size_t)1 << 20) /* bounds memory and time per input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Check a built table against the invariants of unwind_table.h; abort() on a violation. */
static void check_table(const struct unwind_table *t)
{
	const struct unwind_row *rows, *r;
	struct unwind_table *copy = NULL;
	size_t cnt, i;

	rows = unwind_table__rows(t, &cnt);
	if (unwind_table__stats(t)->row_cnt != cnt || cnt > FUZZ_MAX_ROWS)
		abort();
	for (i = 0; i < cnt; i++) {
		if (i && rows[i].addr <= rows[i - 1].addr)
			abort();
		if (i && !memcmp(&rows[i].rule, &rows[i - 1].rule, sizeof(rows[i].rule)))
			abort();
		r = unwind_table__find(t, rows[i].addr);
		if (r != &rows[i])
			abort();
	}
	if (cnt) {
		if (rows[cnt - 1].rule.kind != UNWIND_RULE_INVALID)
			abort();
		if (rows[0].addr && unwind_table__find(t, rows[0].addr - 1))
			abort(); /* nothing below the first row */
	}
	if (unwind_table__from_rows(rows, cnt, &copy))
		abort(); /* what we build, the cache must take back */
	unwind_table__free(copy);
}

static void fuzz_raw(const uint8_t *data, size_t size)
{
	struct unwind_table_opts opts = { .max_rows = FUZZ_MAX_ROWS, .no_symbols = true };
	struct cfi_section secs[2] = {
		{ .data = data, .size = size, .vaddr = 0x1000, .text_vaddr = 0x400,
		  .data_vaddr = 0x2000, .kind = CFI_SECTION_EH_FRAME, .stop_at_terminator = true },
		{ .data = data, .size = size, .vaddr = 0x1000, .kind = CFI_SECTION_DEBUG_FRAME },
	};
	struct unwind_table *t = NULL;
	uint64_t eh_vaddr, cnt;
	size_t i;

	for (i = 0; i < 2; i++) {
		if (!unwind_table__from_sections(&secs[i], 1, &opts, &t))
			check_table(t);
		unwind_table__free(t);
		t = NULL;
	}
	if (!unwind_table__from_sections(secs, 2, &opts, &t))
		check_table(t);
	unwind_table__free(t);
	eh_frame_hdr__parse(data, size, 0x1000, &eh_vaddr, &cnt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table_opts opts = { .max_rows = FUZZ_MAX_ROWS };
	struct unwind_table *t = NULL;
	struct elf_file *ef;
	int err;

	if (!size)
		return 0;
	ef = elf_file__open_mem(data, size);
	if (!ef) {
		fuzz_raw(data, size);
		return 0;
	}
	err = unwind_table__build_opts(ef, (data[size - 1] & 1) ? ef : NULL, &opts, &t);
	if (!err)
		check_table(t);
	else if (err != -ENOENT && err != -E2BIG && err != -ENOMEM)
		abort(); /* corrupt CFI is skipped, never an error of its own */
	unwind_table__free(t);
	elf_file__free(ef);
	return 0;
}
