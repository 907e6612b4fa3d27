/* The OTLP profiles dictionary's link_table (opentelemetry-proto profiles v1development: Link
 * {trace_id = 1 (16 bytes), span_id = 2 (8 bytes)}): the spans samples were taken in, each
 * once, entry 0 the empty Link{} (as pdata writes it and profcheck expects). A sample's
 * labels trace_id/span_id (pipeline/sample_trace.h) become its link_index.
 * Not thread-safe; a zeroed struct is an empty table; otlp_links__free() accepts one.
 */
#ifndef STACKSCOPE_OTLP_LINK_H
#define STACKSCOPE_OTLP_LINK_H

#include <stdint.h>

#include "base/id_index.h"
#include "export/protobuf.h"
#include "profile/profile.h"

struct otlp_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

struct otlp_links {
	struct otlp_link *links; /* [0]: the zero link, once anything was added */
	size_t cnt, cap;
	struct id_index idx;
};

/* The link index of the span named by labels trace_id and span_id among the profile label set
 * `labels` of p (0: none, or not two valid W3C ids); *err = -ENOMEM on failure.
 */
uint32_t otlp_links__of_labels(struct otlp_links *t, const struct profile *p, uint32_t labels,
			       int *err);

/* Whether a label of a sample with link index `link` is one the link stands for (the
 * exporter leaves it out of the attributes then).
 */
bool otlp_links__covers(uint32_t link, const char *key);

/* The table as `field` entries of out (at least the zero entry). */
void otlp_links__write(const struct otlp_links *t, struct pb_buf *out, uint32_t field);

void otlp_links__free(struct otlp_links *t);

#endif
