/* libFuzzer target for the pprof reader (src/export/pprof_read.c): the input is a pprof file
 * (raw or gzipped). A decoded profile is looked up by every id it names, changed the way
 * `stackscope symbolize` changes one (a string, a function, a location's lines), encoded and
 * decoded again, which must succeed. Nothing may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_pprof_read.sh (seeds: profiles written by
 * pprof__encode, made by this file built with -DFUZZ_PPROF_SEEDS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pprof.h"
#include "export/pprof_read.h"
#include "profile/profile.h"

#define FUZZ_MAX_SZ ((size_t)4 << 20) /* decompressed: bounds memory per input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(struct pprof_profile *p)
{
	struct pprof_profile *again = NULL;
	struct pprof_line line = { 0 };
	struct pb_buf b;
	size_t i, j;
	int64_t name;

	for (i = 0; i < p->sample_cnt; i++) {
		for (j = 0; j < p->samples[i].location_cnt; j++) {
			if (!pprof_profile__location(p, p->samples[i].location_ids[j]))
				abort(); /* validated on decode */
		}
	}
	for (i = 0; i < p->location_cnt; i++) {
		const struct pprof_location *loc = &p->locations[i];

		if (loc->mapping_id && !pprof_profile__mapping(p, loc->mapping_id))
			abort();
		for (j = 0; j < loc->line_cnt; j++)
			pprof_profile__function(p, loc->lines[j].function_id);
	}
	name = pprof_profile__intern(p, "fuzz_function");
	if (name > 0) {
		line.function_id = pprof_profile__add_function(p, name, name, 0, 0);
		line.line = 1;
	}
	if (p->location_cnt && line.function_id)
		pprof_profile__set_lines(p, &p->locations[0], &line, 1);
	pb_buf__init(&b, FUZZ_MAX_SZ * 2);
	if (!pprof_profile__encode(p, &b)) {
		if (pprof_profile__decode(b.data, b.len, FUZZ_MAX_SZ * 2, &again))
			abort(); /* what we write must read back */
		pprof_profile__free(again);
	}
	pb_buf__free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_profile *p = NULL;

	if (!pprof_profile__decode(data, size, FUZZ_MAX_SZ, &p))
		exercise(p);
	pprof_profile__free(p);
	return 0;
}

#ifdef FUZZ_PPROF_SEEDS
/* Seed corpus: a small profile written raw and gzipped into the folder argv[1]. */
int main(int argc, char **argv)
{
	struct profile_opts opts = { .period_ns = 10101010,
				     .start_time_ns = 1700000000000000000ULL };
	struct profile_mapping exe = { "/usr/bin/app", "0123abcd", 0x1000, 0x3000, 0x1000 };
	struct profile_line lines[] = { { "inner", "a.c", 3 }, { "outer", "a.c", 9 } };
	uint32_t m, f[3], i;
	struct profile *prof;
	struct pb_buf b;
	char path[4096];
	FILE *out;

	if (argc != 2)
		return 2;
	prof = profile__new(&opts);
	if (!prof)
		return 1;
	m = profile__add_mapping(prof, &exe);
	f[0] = profile__add_frame(prof,
				  &(struct profile_frame){ FRAME_NATIVE, m, 0x1100, NULL, 0 });
	f[1] = profile__add_frame(prof,
				  &(struct profile_frame){ FRAME_NATIVE, m, 0x1200, lines, 2 });
	f[2] = profile__add_frame(prof, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff0000, NULL,
								 0 });
	for (i = 1; i <= 3; i++) {
		struct profile_sample s = { f + 3 - i, i, 100 + i, 100 + i, "app", "t", 0,
					    1000 * i, i };

		profile__add_sample(prof, &s);
	}
	profile__set_end_time(prof, 1700000001000000000ULL);
	pb_buf__init(&b, PPROF_MAX_SZ);
	if (pprof__encode(prof, &b))
		return 1;
	snprintf(path, sizeof(path), "%s/seed.pb", argv[1]);
	out = fopen(path, "wb");
	if (!out || fwrite(b.data, 1, b.len, out) != b.len || fclose(out))
		return 1;
	snprintf(path, sizeof(path), "%s/seed.pb.gz", argv[1]);
	if (pprof__write(prof, path))
		return 1;
	pb_buf__free(&b);
	profile__free(prof);
	return 0;
}
#endif
