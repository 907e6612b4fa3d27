/* Checks the glibc TSD offsets of src/interp/common/glibc_tsd.h in a real process (run natively, and
 * cross-built under qemu-aarch64 by tests/unit/test_glibc_tsd.c): in the main thread and in a
 * second one, a fresh pthread key's value set by pthread_setspecific() must be found at
 * pthread_self() + FROM_PTHREAD + 16 k and at the thread pointer + FROM_TP + 16 k, and the
 * thread's kernel id (gettid) at pthread_self() + TID.
 * Usage: glibc_tsd FROM_PTHREAD FROM_TP TID (decimal or 0x, FROM_TP may be negative);
 * prints one "thread N key K pthread=ok|bad tp=ok|bad tid=ok|bad" line per thread.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static long from_pthread, from_tp, tid_off;
static pthread_key_t key;

static void *report(void *arg)
{
	uintptr_t marker = 0x5ca1ab1e0000ULL + (uintptr_t)arg;
	char *self = (char *)pthread_self();
	char *tp = __builtin_thread_pointer();

	pthread_setspecific(key, (void *)marker);
	printf("thread %d key %u pthread=%s tp=%s tid=%s\n", (int)(uintptr_t)arg, (unsigned)key,
	       *(uintptr_t *)(self + from_pthread + 16 * (long)key) == marker ? "ok" : "bad",
	       *(uintptr_t *)(tp + from_tp + 16 * (long)key) == marker ? "ok" : "bad",
	       *(pid_t *)(self + tid_off) == (pid_t)syscall(SYS_gettid) ? "ok" : "bad");
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_key_t first;
	pthread_t t;

	if (argc != 4)
		return 2;
	from_pthread = strtol(argv[1], NULL, 0);
	from_tp = strtol(argv[2], NULL, 0);
	tid_off = strtol(argv[3], NULL, 0);
	/* a key other than 0: the 16-byte stride is part of what is checked */
	if (pthread_key_create(&first, NULL) || pthread_key_create(&key, NULL))
		return 1;
	report((void *)0);
	if (pthread_create(&t, NULL, report, (void *)1) || pthread_join(t, NULL))
		return 1;
	return 0;
}
