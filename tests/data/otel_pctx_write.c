/* Process context writing for the test publishers (otel_pctx_write.h). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "otel_pctx_write.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

void pctx_put(struct pctx_buf *b, const void *d, size_t n)
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

static void varint(struct pctx_buf *b, uint64_t v)
{
	uint8_t c;

	do {
		c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		pctx_put(b, &c, 1);
	} while (v);
}

static void tag(struct pctx_buf *b, unsigned num, unsigned wire)
{
	varint(b, (uint64_t)num << 3 | wire);
}

void pctx_lenfield(struct pctx_buf *b, unsigned num, const struct pctx_buf *body)
{
	tag(b, num, 2);
	varint(b, body->len);
	pctx_put(b, body->p, body->len);
}

void pctx_strfield(struct pctx_buf *b, unsigned num, const char *s)
{
	tag(b, num, 2);
	varint(b, strlen(s));
	pctx_put(b, s, strlen(s));
}

void pctx_kv(struct pctx_buf *out, unsigned field, const char *key, char kind, const void *s,
	     int64_t i, double d)
{
	struct pctx_buf k = { 0 }, v = { 0 }, arr = { 0 }, el;
	uint64_t bits;
	int64_t n;

	pctx_strfield(&k, 1, key);
	if (kind == 's') {
		pctx_strfield(&v, 1, s);
	} else if (kind == 'b' || kind == 'i') {
		tag(&v, kind == 'b' ? 2 : 3, 0);
		varint(&v, (uint64_t)i);
	} else if (kind == 'd') {
		tag(&v, 4, 1);
		memcpy(&bits, &d, 8);
		pctx_put(&v, &bits, 8);
	} else { /* ArrayValue { repeated AnyValue values = 1 } of strings */
		for (n = 0; n < i; n++) {
			el = (struct pctx_buf){ 0 };
			pctx_strfield(&el, 1, ((const char *const *)s)[n]);
			pctx_lenfield(&arr, 1, &el);
			free(el.p);
		}
		pctx_lenfield(&v, 5, &arr);
		free(arr.p);
	}
	pctx_lenfield(&k, 2, &v);
	pctx_lenfield(out, field, &k);
	free(k.p);
	free(v.p);
}

uint64_t pctx_boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct pctx_header *pctx_map_header(int memfd_ok)
{
	struct pctx_header *h = MAP_FAILED;
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

void pctx_publish(struct pctx_header *h, const void *payload, uint64_t size)
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
	now = pctx_boottime_ns();
	if (now <= last)
		now = last + 1;
	last = now;
	atomic_store(&h->published_ns, now);
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h, sysconf(_SC_PAGESIZE),
	      (unsigned long)"OTEL_CTX");
}
