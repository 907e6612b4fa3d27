/* libFuzzer target for the OTLP profiles request decoder (src/export/otlp_read.c), which reads
 * what `serve --otlp-listen` receives from the network: the input is a request body (inflated).
 * A decoded request is walked (every sample's stack, frames and names, its process lookup),
 * encoded again by the project's exporter and decoded again, which must succeed with the same
 * sample total. Nothing may crash, hang or leak.
 * Build and run: tests/fuzz/run_fuzz_otlp_read.sh (seeds: requests written by otlp.c, made by
 * this file built with -DFUZZ_OTLP_SEEDS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/otlp.h"
#include "export/otlp_read.h"
#include "profile/profile.h"

#define FUZZ_MAX_SZ ((size_t)16 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const struct otlp_request *q)
{
	const struct profile *p = q->profile;
	struct otlp_request *again = NULL;
	struct otlp_encoder *e;
	struct pb_buf b;
	size_t i;
	uint32_t j, n;

	for (i = 0; i < profile__sample_cnt(p); i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		const uint32_t *frames = profile__stack(p, s->stack, &n);

		for (j = 0; j < n; j++)
			if (!profile__frame_name(p, frames[j], 0))
				abort(); /* every frame id of a stack exists */
		otlp_request__process(q, s->pid);
	}
	e = otlp_encoder__new(NULL);
	if (!e)
		return;
	pb_buf__init(&b, FUZZ_MAX_SZ * 4);
	if (!otlp_encoder__encode(e, p, NULL, NULL, NULL, &b)) {
		if (otlp_request__decode(b.data, b.len, NULL, &again, NULL, 0))
			abort(); /* what we write must read back */
		if (profile__total_samples(again->profile) != profile__total_samples(p))
			abort();
		otlp_request__free(again);
	}
	pb_buf__free(&b);
	otlp_encoder__free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_request *q = NULL;
	char why[128];

	if (size > FUZZ_MAX_SZ)
		return 0;
	if (!otlp_request__decode(data, size, NULL, &q, why, sizeof(why)))
		exercise(q);
	otlp_request__free(q);
	return 0;
}

#ifdef FUZZ_OTLP_SEEDS
/* Seed corpus: a small request (native, kernel, runtime and error frames) in argv[1]. */
int main(int argc, char **argv)
{
	struct profile_opts opts = { .period_ns = 10101010,
				     .start_time_ns = 1700000000000000000ULL,
				     .timestamps_cap = 16 };
	struct profile_mapping exe = { "/usr/bin/app", "0123abcd", 0x1000, 0x3000, 0x1000 };
	struct profile_line lines[] = { { "inner", "a.c", 3, 1 }, { "outer", "a.c", 9, 0 } };
	struct profile_line py[] = { { "handler", "app.py", 7, 0 } };
	struct profile_line err[] = { { "[unwind: no CFI]", NULL, 0, 0 } };
	struct profile_label label = { "route", "/api" };
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	struct otlp_host host = { .host_name = "fuzz-host" };
	uint32_t m, f[5], i;
	struct profile *prof;
	struct pb_buf b;
	char path[4096];
	FILE *out;

	if (argc != 2 || !e)
		return 2;
	prof = profile__new(&opts);
	if (!prof)
		return 1;
	m = profile__add_mapping(prof, &exe);
	f[0] = profile__add_frame(prof, &(struct profile_frame){ FRAME_KERNEL, 0, 0xffff0000,
								 NULL, 0 });
	f[1] = profile__add_frame(prof, &(struct profile_frame){ FRAME_NATIVE, m, 0x1100, NULL,
								 0 });
	f[2] = profile__add_frame(prof, &(struct profile_frame){ FRAME_NATIVE, m, 0x1200, lines,
								 2 });
	f[3] = profile__add_frame(prof, &(struct profile_frame){ .kind = FRAME_RUNTIME,
								 .lines = py,
								 .line_cnt = 1,
								 .runtime = "cpython" });
	f[4] = profile__add_frame(prof, &(struct profile_frame){ FRAME_ERROR, 0, 0, err, 1 });
	for (i = 1; i <= 4; i++) {
		struct profile_sample s = { f + 4 - i, i, 100 + i % 2, 100 + i, "app", "t", i % 2,
					    1700000000000001000ULL + i, 1, &label, 1 };

		profile__add_sample(prof, &s);
	}
	profile__set_end_time(prof, 1700000001000000000ULL);
	pb_buf__init(&b, FUZZ_MAX_SZ);
	if (otlp_encoder__encode(e, prof, &host, NULL, NULL, &b))
		return 1;
	snprintf(path, sizeof(path), "%s/seed.pb", argv[1]);
	out = fopen(path, "wb");
	if (!out || fwrite(b.data, 1, b.len, out) != b.len || fclose(out))
		return 1;
	pb_buf__free(&b);
	profile__free(prof);
	otlp_encoder__free(e);
	return 0;
}
#endif
