/* A publisher of OpenTelemetry's process context (OTEP 4719), written from the OTEP for
 * tests/system/test_process_ctx.sh: a 32-byte header ("OTEL_CTX", version 2, payload size,
 * CLOCK_BOOTTIME publish time, payload pointer) in a mapping named OTEL_CTX, and a protobuf
 * ProcessContext payload encoded here by hand.
 *
 *   otel_pctx_pub MODE SECONDS
 *   good   memfd mapping (and prctl name): context A, burns in work_a for half the time,
 *          then republishes context B (updating protocol) and burns in work_b
 *   signal as good, but republishes on SIGUSR1 (or after SECONDS), then work_b for 3 s
 *   anon   anonymous mapping named by prctl only ([anon:OTEL_CTX]): context A, work_a
 *   late   no context for the first 1.5 s (work_early), then context A (work_a)
 *   none   never publishes (work_a)
 *   wild   payload pointer to unmapped memory          huge   payload size 2 GiB
 *   lie    a KeyValue whose length runs past the payload (work_a)
 *   nest   an attribute nested 5000 deep, then service.name=nest-ok (work_a)
 *   torn   a thread republishes T1 / T2 in place without pause while the main thread burns:
 *          service.name and pctx.test.peer always agree (torn-1/torn-1 or torn-2/torn-2)
 * It prints "published" on stderr once its first context is out.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "otel_pctx_write.h"

/* ProcessContext { Resource resource = 1 { attributes = 1 }; attributes = 2 } */
static struct pctx_buf context(int which)
{
	struct pctx_buf res = { 0 }, pc = { 0 };

	if (which == 'A') {
		pctx_kv(&res, 1, "service.name", 's', "checkout", 0, 0);
		pctx_kv(&res, 1, "service.instance.id", 's', "pctx-0001", 0, 0);
		pctx_kv(&res, 1, "deployment.environment.name", 's', "staging", 0, 0);
		pctx_kv(&res, 1, "service.version", 's', "1.0", 0, 0);
		pctx_kv(&res, 1, "pctx.test.int", 'i', NULL, 42, 0);
		pctx_kv(&res, 1, "pctx.test.bool", 'b', NULL, 1, 0);
		pctx_kv(&res, 1, "pctx.test.double", 'd', NULL, 0, 0.5);
	} else if (which == 'B') {
		pctx_kv(&res, 1, "service.name", 's', "checkout", 0, 0);
		pctx_kv(&res, 1, "service.instance.id", 's', "pctx-0001", 0, 0);
		pctx_kv(&res, 1, "deployment.environment.name", 's', "production", 0, 0);
		pctx_kv(&res, 1, "service.version", 's', "2.0", 0, 0);
	} else { /* '1', '2': the torn pair, same length */
		char v[8];

		snprintf(v, sizeof(v), "torn-%c", which);
		pctx_kv(&res, 1, "service.name", 's', v, 0, 0);
		pctx_kv(&res, 1, "pctx.test.peer", 's', v, 0, 0);
	}
	pctx_lenfield(&pc, 1, &res);
	if (which == 'A')
		pctx_kv(&pc, 2, "threadlocal.schema_version", 's', "tlsdesc_v1_dev", 0, 0);
	free(res.p);
	return pc;
}

static volatile uint64_t sink;
static volatile sig_atomic_t republish_now;

static void on_usr1(int sig)
{
	(void)sig;
	republish_now = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* three bodies that differ (identical ones are folded into one by -fipa-icf); work_a also
 * ends early on SIGUSR1
 */
#define BURN(name, mul, stop)                                                   \
	__attribute__((noinline)) static void name(double s)              \
	{                                                                 \
		uint64_t end = mono_ns() + (uint64_t)(s * 1e9), i = 0;    \
		while (mono_ns() < end && !(stop))                        \
			for (int k = 0; k < 1000; k++)                    \
				sink += i++ * (mul);                      \
	}
BURN(work_a, 2654435761u, republish_now)
BURN(work_b, 40503u, 0)
BURN(work_early, 97u, 0)

static struct pctx_header *torn_h;
static struct pctx_buf torn_p[2];
static uint8_t *torn_payload;

static void *torn_writer(void *arg)
{
	uint64_t n;

	(void)arg;
	for (n = 1;; n++) { /* rewritten in place, under the update protocol */
		const struct pctx_buf *b = &torn_p[n & 1];
		uint64_t now = pctx_boottime_ns();

		atomic_store(&torn_h->published_ns, 0);
		atomic_thread_fence(memory_order_seq_cst);
		for (size_t i = 0; i < b->len; i++) /* byte by byte: as slow as it gets */
			((volatile uint8_t *)torn_payload)[i] = b->p[i];
		torn_h->payload_size = (uint32_t)b->len;
		atomic_thread_fence(memory_order_seq_cst);
		atomic_store(&torn_h->published_ns, now + n);
		/* a few microseconds published: most reads get one whole, some race the next */
		for (uint64_t end = mono_ns() + 5000; mono_ns() < end;)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "good";
	int sig = !strcmp(mode, "signal");
	double secs = argc > 2 ? atof(argv[2]) : 4;
	struct pctx_buf a = context('A'), b = context('B'), bad = { 0 };
	struct pctx_header *h;
	pthread_t th;

	if (!strcmp(mode, "none")) {
		fprintf(stderr, "published\n");
		work_a(secs);
		return 0;
	}
	if (!strcmp(mode, "late")) {
		work_early(1.5);
		secs -= 1.5;
	}
	if (sig) {
		signal(SIGUSR1, on_usr1);
		mode = "good";
	}
	h = pctx_map_header(strcmp(mode, "anon") != 0);
	if (!strcmp(mode, "wild")) {
		pctx_publish(h, (void *)(uintptr_t)0x10, 200);
	} else if (!strcmp(mode, "huge")) {
		pctx_publish(h, a.p, 0x80000000ull);
	} else if (!strcmp(mode, "lie")) {
		/* resource { attributes: KeyValue of length 1000 } in 19 bytes */
		pctx_put(&bad, "\x0a\x11\x0a\x0f\x0a\xe8\x07service.name", 19);
		pctx_publish(h, bad.p, bad.len);
	} else if (!strcmp(mode, "nest")) {
		/* an AnyValue array_value nested 5000 deep (5 = array_value, 1 = values) */
		struct pctx_buf v = { 0 }, nv, k = { 0 }, res = { 0 }, pc = { 0 };
		int depth;

		for (depth = 0; depth < 5000; depth++) {
			struct pctx_buf arr = { 0 };

			nv = (struct pctx_buf){ 0 };
			pctx_lenfield(&arr, 1, &v);
			pctx_lenfield(&nv, 5, &arr);
			free(arr.p);
			free(v.p);
			v = nv;
		}
		pctx_strfield(&k, 1, "pctx.test.deep");
		pctx_lenfield(&k, 2, &v);
		pctx_lenfield(&res, 1, &k);
		pctx_kv(&res, 1, "service.name", 's', "nest-ok", 0, 0);
		pctx_lenfield(&pc, 1, &res);
		if (pc.len > 60000) /* over the reader's cap would test another thing */
			fprintf(stderr, "nest: payload %zu bytes\n", pc.len);
		pctx_publish(h, pc.p, pc.len);
	} else if (!strcmp(mode, "torn")) {
		torn_p[0] = context('1');
		torn_p[1] = context('2');
		torn_payload = malloc(torn_p[0].len);
		memcpy(torn_payload, torn_p[0].p, torn_p[0].len);
		torn_h = h;
		pctx_publish(h, torn_payload, torn_p[0].len);
		pthread_create(&th, NULL, torn_writer, NULL);
	} else {
		pctx_publish(h, a.p, a.len);
	}
	if (!strcmp(mode, "anon")) { /* named only where the kernel names anonymous memory */
		char line[512];
		int named = 0;
		FILE *f = fopen("/proc/self/maps", "r");

		while (f && fgets(line, sizeof(line), f))
			named |= strstr(line, "[anon:OTEL_CTX]") != NULL;
		if (f)
			fclose(f);
		fprintf(stderr, named ? "anon named\n" : "anon unnamed\n");
	}
	fprintf(stderr, "published\n");
	if (!strcmp(mode, "good")) {
		work_a(sig ? secs : secs / 2);
		pctx_publish(h, b.p, b.len);
		fprintf(stderr, "republished\n");
		work_b(sig ? 3 : secs / 2);
	} else {
		work_a(secs);
	}
	return 0;
}
