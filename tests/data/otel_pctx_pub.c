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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

struct header {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	_Atomic uint64_t published_ns;
	uint64_t payload;
};

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void varint(struct buf *b, uint64_t v)
{
	uint8_t c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		put(b, &c, 1);
	} while (v);
}

static void tag(struct buf *b, unsigned num, unsigned wire)
{
	varint(b, (uint64_t)num << 3 | wire);
}

static void lenfield(struct buf *b, unsigned num, const struct buf *body)
{
	tag(b, num, 2);
	varint(b, body->len);
	put(b, body->p, body->len);
}

static void strfield(struct buf *b, unsigned num, const char *s)
{
	tag(b, num, 2);
	varint(b, strlen(s));
	put(b, s, strlen(s));
}

/* KeyValue { key = 1; AnyValue value = 2 } with AnyValue of kind 's', 'i', 'b' or 'd'. */
static void kv(struct buf *out, unsigned field, const char *key, char kind, const char *s,
	       int64_t i, double d)
{
	struct buf k = { 0 }, v = { 0 };
	uint64_t bits;

	strfield(&k, 1, key);
	if (kind == 's') {
		strfield(&v, 1, s);
	} else if (kind == 'b' || kind == 'i') {
		tag(&v, kind == 'b' ? 2 : 3, 0);
		varint(&v, (uint64_t)i);
	} else {
		tag(&v, 4, 1);
		memcpy(&bits, &d, 8);
		put(&v, &bits, 8);
	}
	lenfield(&k, 2, &v);
	lenfield(out, field, &k);
	free(k.p);
	free(v.p);
}

/* ProcessContext { Resource resource = 1 { attributes = 1 }; attributes = 2 } */
static struct buf context(int which)
{
	struct buf res = { 0 }, pc = { 0 };

	if (which == 'A') {
		kv(&res, 1, "service.name", 's', "checkout", 0, 0);
		kv(&res, 1, "service.instance.id", 's', "pctx-0001", 0, 0);
		kv(&res, 1, "deployment.environment.name", 's', "staging", 0, 0);
		kv(&res, 1, "service.version", 's', "1.0", 0, 0);
		kv(&res, 1, "pctx.test.int", 'i', NULL, 42, 0);
		kv(&res, 1, "pctx.test.bool", 'b', NULL, 1, 0);
		kv(&res, 1, "pctx.test.double", 'd', NULL, 0, 0.5);
	} else if (which == 'B') {
		kv(&res, 1, "service.name", 's', "checkout", 0, 0);
		kv(&res, 1, "service.instance.id", 's', "pctx-0001", 0, 0);
		kv(&res, 1, "deployment.environment.name", 's', "production", 0, 0);
		kv(&res, 1, "service.version", 's', "2.0", 0, 0);
	} else { /* '1', '2': the torn pair, same length */
		char v[8];

		snprintf(v, sizeof(v), "torn-%c", which);
		kv(&res, 1, "service.name", 's', v, 0, 0);
		kv(&res, 1, "pctx.test.peer", 's', v, 0, 0);
	}
	lenfield(&pc, 1, &res);
	if (which == 'A')
		kv(&pc, 2, "threadlocal.schema_version", 's', "tlsdesc_v1_dev", 0, 0);
	free(res.p);
	return pc;
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct header *map_header(int memfd_ok)
{
	struct header *h = MAP_FAILED;
	long page = sysconf(_SC_PAGESIZE);
	int fd = -1;

	if (memfd_ok)
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd >= 0 && ftruncate(fd, page) == 0)
		h = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	if (h == MAP_FAILED)
		h = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		abort();
	madvise(h, page, MADV_DONTFORK);
	return h;
}

static void name_it(struct header *h)
{
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, sysconf(_SC_PAGESIZE),
	      (unsigned long)"OTEL_CTX");
}

/* Publication or update protocol: time 0, fields, barrier, new time (always a new value). */
static void publish(struct header *h, const void *payload, uint64_t size)
{
	static uint64_t last;
	uint64_t now;

	atomic_store(&h->published_ns, 0);
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(h->signature, "OTEL_CTX", 8);
	h->version = 2;
	h->payload_size = (uint32_t)size;
	h->payload = (uint64_t)(uintptr_t)payload;
	atomic_thread_fence(memory_order_seq_cst);
	now = boottime_ns();
	if (now <= last)
		now = last + 1;
	last = now;
	atomic_store(&h->published_ns, now);
	name_it(h);
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

static struct header *torn_h;
static struct buf torn_p[2];
static uint8_t *torn_payload;

static void *torn_writer(void *arg)
{
	uint64_t n;

	(void)arg;
	for (n = 1;; n++) { /* rewritten in place, under the update protocol */
		const struct buf *b = &torn_p[n & 1];
		uint64_t now = boottime_ns();

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
	struct buf a = context('A'), b = context('B'), bad = { 0 };
	struct header *h;
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
	h = map_header(strcmp(mode, "anon") != 0);
	if (!strcmp(mode, "wild")) {
		publish(h, (void *)(uintptr_t)0x10, 200);
	} else if (!strcmp(mode, "huge")) {
		publish(h, a.p, 0x80000000ull);
	} else if (!strcmp(mode, "lie")) {
		/* resource { attributes: KeyValue of length 1000 } in 19 bytes */
		put(&bad, "\x0a\x11\x0a\x0f\x0a\xe8\x07service.name", 19);
		publish(h, bad.p, bad.len);
	} else if (!strcmp(mode, "nest")) {
		/* an AnyValue array_value nested 5000 deep (5 = array_value, 1 = values) */
		struct buf v = { 0 }, nv, k = { 0 }, res = { 0 }, pc = { 0 };
		int depth;

		for (depth = 0; depth < 5000; depth++) {
			struct buf arr = { 0 };

			nv = (struct buf){ 0 };
			lenfield(&arr, 1, &v);
			lenfield(&nv, 5, &arr);
			free(arr.p);
			free(v.p);
			v = nv;
		}
		strfield(&k, 1, "pctx.test.deep");
		lenfield(&k, 2, &v);
		lenfield(&res, 1, &k);
		kv(&res, 1, "service.name", 's', "nest-ok", 0, 0);
		lenfield(&pc, 1, &res);
		if (pc.len > 60000) /* over the reader's cap would test another thing */
			fprintf(stderr, "nest: payload %zu bytes\n", pc.len);
		publish(h, pc.p, pc.len);
	} else if (!strcmp(mode, "torn")) {
		torn_p[0] = context('1');
		torn_p[1] = context('2');
		torn_payload = malloc(torn_p[0].len);
		memcpy(torn_payload, torn_p[0].p, torn_p[0].len);
		torn_h = h;
		publish(h, torn_payload, torn_p[0].len);
		pthread_create(&th, NULL, torn_writer, NULL);
	} else {
		publish(h, a.p, a.len);
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
		publish(h, b.p, b.len);
		fprintf(stderr, "republished\n");
		work_b(sig ? 3 : secs / 2);
	} else {
		work_a(secs);
	}
	return 0;
}
