/* The writing side of OpenTelemetry's process context (OTEP 4719), from the OTEP, for the test
 * publishers (otel_pctx_pub.c, otel_tctx_pub.c): a protobuf encoder just big enough for a
 * ProcessContext, the 32-byte header in a mapping named OTEL_CTX, and the OTEP's publication
 * (and update) protocol.
 */
#ifndef OTEL_PCTX_WRITE_H
#define OTEL_PCTX_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct pctx_header {
	char signature[8];
	uint32_t version;
	uint32_t payload_size;
	_Atomic uint64_t published_ns;
	uint64_t payload;
};

struct pctx_buf {
	uint8_t *p;
	size_t len, cap;
};

void pctx_put(struct pctx_buf *b, const void *d, size_t n);
/* A LEN field num holding body. */
void pctx_lenfield(struct pctx_buf *b, unsigned num, const struct pctx_buf *body);
void pctx_strfield(struct pctx_buf *b, unsigned num, const char *s);
/* KeyValue { key = 1; AnyValue value = 2 } as field `field` of out, with AnyValue of kind 's'
 * (s), 'i' (i), 'b' (i != 0), 'd' (d) or 'a' (an ArrayValue of the strings s[0..i), s being a
 * const char *const * then).
 */
void pctx_kv(struct pctx_buf *out, unsigned field, const char *key, char kind, const void *s,
	     int64_t i, double d);

uint64_t pctx_boottime_ns(void);
/* The header's page: a memfd named OTEL_CTX when memfd_ok (else anonymous), not inherited. */
struct pctx_header *pctx_map_header(int memfd_ok);
/* The publication or update protocol: time 0, fields, barrier, a new time; then the mapping
 * named [anon:OTEL_CTX] where the kernel names anonymous memory.
 */
void pctx_publish(struct pctx_header *h, const void *payload, uint64_t size);

#endif
