/* Benchmark driver for the CFI extraction (src/unwind): builds the unwind table of each file
 * given on the command line and prints one line per file:
 *   path seconds rows unique_rules fdes unsupported_rows bad_fdes
 * where seconds covers opening the ELF file and building the table. Built and run by
 * bench/cfi_extract.sh; not part of the product.
 */
#include <stdio.h>
#include <time.h>

#include "formats/elf_file.h"
#include "unwind/unwind_table.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		const struct unwind_table_stats *s;
		struct unwind_table *t = NULL;
		struct elf_file *ef;
		double t0 = now(), t1;
		int err;

		ef = elf_file__open(argv[i]);
		if (!ef) {
			fprintf(stderr, "%s: cannot open\n", argv[i]);
			rc = 1;
			continue;
		}
		err = unwind_table__build(ef, NULL, &t);
		t1 = now();
		if (err) {
			fprintf(stderr, "%s: build failed: %d\n", argv[i], err);
			rc = 1;
		} else {
			s = unwind_table__stats(t);
			printf("%s %.4f %zu %zu %zu %zu %zu\n", argv[i], t1 - t0, s->row_cnt,
			       s->unique_rule_cnt, s->fde_cnt, s->unsupported_row_cnt,
			       s->bad_fde_cnt);
		}
		unwind_table__free(t);
		elf_file__free(ef);
	}
	return rc;
}
