/* The Thread-Local Context Record of OTEP 4947 (byte-packed, host byte order), and the
 * publisher's two calls (otel_tctx_lib.c).
 */
#ifndef OTEL_TCTX_H
#define OTEL_TCTX_H

#include <stdint.h>

struct otel_tctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid; /* 1: the record counts */
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs_data[36];
} __attribute__((packed, aligned(8)));

_Static_assert(__builtin_offsetof(struct otel_tctx_record, attrs_data) == 28, "the OTEP's head");

void otel_tctx_attach(struct otel_tctx_record *r); /* NULL: detach */
void *otel_tctx_current(void);

#endif
