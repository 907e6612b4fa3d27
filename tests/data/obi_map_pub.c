/* A stand-in for OBI (OpenTelemetry eBPF Instrumentation) writing its shared map traces_ctx_v1
 * (BPF_MAP_TYPE_LRU_HASH, key pid_tgid = tgid << 32 | tid, value trace id (16 bytes) and span id
 * (8)), for tests/system/test_obi_map.sh. Raw bpf(2) calls: no libbpf needed.
 *
 *   obi_map_pub pin PATH [value_size [type]]  create such a map (or one of another value size
 *                                             or type) and pin it at PATH
 *   obi_map_pub run PATH SECS                 spans, OBI's entries written into the map
 *                                             pinned at PATH (created and pinned when absent)
 *
 * run: each span thread t (0..SPAN_THREADS-1) runs spans 1..SPANS in turn, a few ms each, its
 * entry set to span N while it burns in work_span_N and deleted between spans:
 *   trace id 0b0b...0b<t+1>, span id 0b 00 00 00 00 00 <t+1> <N>.
 * The thread "nospan" burns in work_nospan without an entry; "zero" in work_zero with an entry
 * whose trace id is all zero (no span); "both" in work_both with an entry (span 0b..ff02) and a
 * thread context (OTEP 4947) record of span 5a..ff01 attached: the thread context wins.
 * Every thread first burns STARTUP_NS in work_startup: stackscope learns of a new process (and
 * its thread-context variable) tens of ms after exec.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "otel_tctx.h"

#define SPAN_THREADS 3
#define SPANS 6
#define SPAN_NS (3 * 1000000LL)
#define STARTUP_NS (300 * 1000000LL)

struct obi_value {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

static volatile int stop;
static volatile unsigned long sink;
static int map_fd = -1;

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_create(unsigned int value_size, unsigned int type)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = 8;
	a.value_size = value_size;
	a.max_entries = 1 << 14;
	strncpy(a.map_name, "traces_ctx_v1", sizeof(a.map_name) - 1);
	return (int)sys_bpf(BPF_MAP_CREATE, &a);
}

static int pin(int fd, const char *path)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.bpf_fd = (unsigned int)fd;
	a.pathname = (unsigned long)path;
	return (int)sys_bpf(BPF_OBJ_PIN, &a);
}

static int obj_get(const char *path)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.pathname = (unsigned long)path;
	return (int)sys_bpf(BPF_OBJ_GET, &a);
}

static void entry_set(const struct obi_value *v)
{
	uint64_t key = (uint64_t)getpid() << 32 | (uint32_t)syscall(SYS_gettid);
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (unsigned int)map_fd;
	a.key = (unsigned long)&key;
	if (v) {
		a.value = (unsigned long)v;
		a.flags = BPF_ANY;
		sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
	} else {
		sys_bpf(BPF_MAP_DELETE_ELEM, &a);
	}
}

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

#define WORK(name)                                         \
	__attribute__((noinline)) void name(long long ns)  \
	{                                                  \
		burn(now_ns() + ns);                       \
		__asm__ volatile("" ::: "memory");         \
	}
WORK(work_span_1)
WORK(work_span_2)
WORK(work_span_3)
WORK(work_span_4)
WORK(work_span_5)
WORK(work_span_6)
WORK(work_nospan)
WORK(work_zero)
WORK(work_both)
WORK(work_startup)

static void (*const work_span[SPANS + 1])(long long) = {
	NULL, work_span_1, work_span_2, work_span_3, work_span_4, work_span_5, work_span_6,
};

static void *span_thread(void *arg)
{
	int t = (int)(long)arg, n = 1;
	struct obi_value v;

	work_startup(STARTUP_NS);
	for (; !stop; n = n % SPANS + 1) {
		memset(v.trace_id, 0x0b, 15);
		v.trace_id[15] = (uint8_t)(t + 1);
		memset(v.span_id, 0, 8);
		v.span_id[0] = 0x0b;
		v.span_id[6] = (uint8_t)(t + 1);
		v.span_id[7] = (uint8_t)n;
		entry_set(&v);
		work_span[n](SPAN_NS);
		entry_set(NULL);
		burn(now_ns() + 200000); /* between spans: no entry */
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

static void *zero_thread(void *arg)
{
	struct obi_value v;

	(void)arg;
	memset(&v, 0, sizeof(v));
	v.span_id[0] = 0x0b;
	entry_set(&v);
	while (!stop)
		work_zero(SPAN_NS);
	return NULL;
}

static struct otel_tctx_record both_rec;

static void *both_thread(void *arg)
{
	struct obi_value v;

	(void)arg;
	memset(&v, 0, sizeof(v));
	memset(v.trace_id, 0x0b, 16);
	v.span_id[0] = 0x0b;
	v.span_id[6] = 0xff;
	v.span_id[7] = 2;
	entry_set(&v);
	memset(both_rec.trace_id, 0x5a, 16);
	both_rec.span_id[0] = 0x5a;
	both_rec.span_id[6] = 0xff;
	both_rec.span_id[7] = 1;
	both_rec.trace_flags = 1;
	both_rec.valid = 1;
	otel_tctx_attach(&both_rec);
	work_startup(STARTUP_NS);
	while (!stop)
		work_both(SPAN_NS);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[SPAN_THREADS + 3];
	int n = 0, i;

	if (argc >= 3 && !strcmp(argv[1], "pin")) {
		unsigned int vsz = argc > 3 ? (unsigned int)atoi(argv[3]) : sizeof(struct obi_value);
		unsigned int type = argc > 4 ? (unsigned int)atoi(argv[4]) : BPF_MAP_TYPE_LRU_HASH;
		int fd = map_create(vsz, type);

		if (fd < 0 || pin(fd, argv[2])) {
			fprintf(stderr, "obi_map_pub: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	if (argc < 4 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: obi_map_pub pin PATH [VALUE_SIZE [TYPE]] | run PATH SECS\n");
		return 2;
	}
	map_fd = obj_get(argv[2]);
	if (map_fd < 0) {
		map_fd = map_create(sizeof(struct obi_value), BPF_MAP_TYPE_LRU_HASH);
		if (map_fd < 0 || pin(map_fd, argv[2])) {
			fprintf(stderr, "obi_map_pub: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < SPAN_THREADS; i++)
		pthread_create(&th[n++], NULL, span_thread, (void *)(long)i);
	pthread_create(&th[n++], NULL, nospan_thread, NULL);
	pthread_create(&th[n++], NULL, zero_thread, NULL);
	pthread_create(&th[n++], NULL, both_thread, NULL);
	usleep((useconds_t)(atof(argv[3]) * 1e6 + STARTUP_NS / 1000));
	stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("done\n");
	return 0;
}
