/* A multi-threaded publisher of OpenTelemetry's thread context (OTEP 4947) for
 * tests/system/test_thread_ctx.sh. Each span thread t (0..SPAN_THREADS-1) runs spans 1..SPANS in
 * turn, a few ms each, burning CPU in work_span_N while span N is attached:
 *   trace id 7e7e...7e<t+1> (16 bytes), span id 5a 00 00 00 00 00 <t+1> <N>, attributes
 *   (attrs-data) key 0 = "/span/<N>", key 1 = "GET".
 * Even threads attach a record per span (the pointer switches), odd ones keep one record and
 * rewrite it in place between valid = 0 and valid = 1. The thread "nospan" burns in work_nospan
 * with nothing attached. Hostile threads (argument "hostile"):
 *   - "unmapped" points the variable at memory just unmapped (work_unmapped);
 *   - "torn" burns in work_torn while the thread "rewriter" rewrites its record from outside,
 *     byte by byte, between two spans (X: span 5a..ff01, Y: span 5a..ff02, trace ids 11.. and
 *     22..), with valid toggled around each rewrite: a sample may see either span whole,
 *     never a mix.
 * With the argument "keymap", the process first publishes its process context (OTEP 4719:
 * service.name "tctx-keymap", threadlocal.schema_version, and threadlocal.attribute_key_map
 * ["http.route"]): key 0 is then named http.route, key 1 is outside the map; the start-up
 * burn is then KEYMAP_STARTUP_NS (a context published at the start is read by the maps scan
 * or by the probe 250 ms after the process is seen).
 * Every thread first burns STARTUP_NS in work_startup with nothing attached: stackscope
 * learns of a new process from its mappings, tens of ms after exec (as for Go's labels), and
 * samples before that cannot carry a span.
 * Runs for argv[1] seconds after that.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "otel_pctx_write.h"
#include "otel_tctx.h"

#define SPAN_THREADS 3
#define SPANS 6
#define SPAN_NS (3 * 1000000LL)
#define STARTUP_NS (300 * 1000000LL)
#define KEYMAP_STARTUP_NS (800 * 1000000LL)

static long long startup_ns = STARTUP_NS;

static volatile int stop;
static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static __attribute__((noinline)) void burn(long long until)
{
	unsigned long x = sink;

	while (now_ns() < until)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

#define WORK(name)                                                 \
	__attribute__((noinline)) void name(long long ns)          \
	{                                                          \
		burn(now_ns() + ns);                               \
		__asm__ volatile("" ::: "memory");                 \
	}
WORK(work_span_1)
WORK(work_span_2)
WORK(work_span_3)
WORK(work_span_4)
WORK(work_span_5)
WORK(work_span_6)
WORK(work_nospan)
WORK(work_unmapped)
WORK(work_torn)
WORK(work_startup)

static void (*const work_span[SPANS + 1])(long long) = {
	NULL, work_span_1, work_span_2, work_span_3, work_span_4, work_span_5, work_span_6,
};

static void fill(struct otel_tctx_record *r, int t, int n)
{
	memset(r->trace_id, 0x7e, 15);
	r->trace_id[15] = (uint8_t)(t + 1);
	memset(r->span_id, 0, 8);
	r->span_id[0] = 0x5a;
	r->span_id[6] = (uint8_t)(t + 1);
	r->span_id[7] = (uint8_t)n;
	r->trace_flags = 1;
	memcpy(r->attrs_data, "\0\7/span/0\1\3GET", 14);
	r->attrs_data[8] = (uint8_t)('0' + n);
	r->attrs_data_size = 14;
}

static void *span_thread(void *arg)
{
	int t = (int)(long)arg;
	static struct otel_tctx_record recs[SPAN_THREADS][SPANS + 1];
	struct otel_tctx_record *r;
	int n = 1;

	work_startup(startup_ns);
	for (; !stop; n = n % SPANS + 1) {
		if (t % 2 == 0) { /* a record per span: the pointer switches */
			r = &recs[t][n];
			fill(r, t, n);
			r->valid = 1;
			otel_tctx_attach(r);
		} else { /* one record rewritten in place */
			r = &recs[t][0];
			r->valid = 0;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			fill(r, t, n);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			r->valid = 1;
			if (otel_tctx_current() != r)
				otel_tctx_attach(r);
		}
		work_span[n](SPAN_NS);
		if (t % 2 == 0) {
			otel_tctx_attach(NULL);
		} else {
			r->valid = 0;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
		}
		burn(now_ns() + 200000); /* between spans: none attached */
	}
	return NULL;
}

static void *nospan_thread(void *arg)
{
	(void)arg;
	while (!stop)
		work_nospan(SPAN_NS);
	return NULL;
}

static void *unmapped_thread(void *arg)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (p == MAP_FAILED)
		return NULL;
	munmap(p, 4096);
	otel_tctx_attach(p);
	while (!stop)
		work_unmapped(SPAN_NS);
	return NULL;
}

static struct otel_tctx_record torn_rec;

static void *torn_thread(void *arg)
{
	(void)arg;
	otel_tctx_attach(&torn_rec);
	while (!stop)
		work_torn(SPAN_NS);
	return NULL;
}

/* Rewrites torn_rec from outside its thread (what the OTEP forbids): byte by byte, X or Y. */
static void *rewriter_thread(void *arg)
{
	volatile uint8_t *b = (volatile uint8_t *)&torn_rec;
	uint8_t v;
	int i, k = 0;

	(void)arg;
	while (!stop) {
		v = k++ % 2 ? 0x22 : 0x11;
		__atomic_store_n(&torn_rec.valid, 0, __ATOMIC_SEQ_CST);
		for (i = 0; i < 16; i++)
			b[i] = v;
		for (i = 16; i < 23; i++)
			b[i] = i == 16 ? 0x5a : 0;
		b[23] = v == 0x11 ? 1 : 2;
		b[22] = 0xff;
		__atomic_store_n(&torn_rec.valid, 1, __ATOMIC_SEQ_CST);
		for (i = 0; i < 50; i++)
			sink += (unsigned long)i;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[SPAN_THREADS + 4];
	int n = 0, i, hostile = argc > 2 && !strcmp(argv[2], "hostile");
	double secs = argc > 1 ? atof(argv[1]) : 3;

	if (argc > 2 && !strcmp(argv[2], "keymap")) {
		static const char *const keys[] = { "http.route" };
		struct pctx_buf res = { 0 }, pc = { 0 };

		pctx_kv(&res, 1, "service.name", 's', "tctx-keymap", 0, 0);
		pctx_lenfield(&pc, 1, &res);
		pctx_kv(&pc, 2, "threadlocal.schema_version", 's', "tlsdesc_v1_dev", 0, 0);
		pctx_kv(&pc, 2, "threadlocal.attribute_key_map", 'a', keys, 1, 0);
		pctx_publish(pctx_map_header(1), pc.p, pc.len);
		startup_ns = KEYMAP_STARTUP_NS;
	}

	for (i = 0; i < SPAN_THREADS; i++)
		pthread_create(&th[n++], NULL, span_thread, (void *)(long)i);
	pthread_create(&th[n++], NULL, nospan_thread, NULL);
	if (hostile) {
		pthread_create(&th[n++], NULL, unmapped_thread, NULL);
		pthread_create(&th[n++], NULL, torn_thread, NULL);
		pthread_create(&th[n++], NULL, rewriter_thread, NULL);
	}
	usleep((useconds_t)(secs * 1e6 + startup_ns / 1000));
	stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	return 0;
}
