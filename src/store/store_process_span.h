/* What the store knows of one pid in a time range, for the web UI's source view
 * (serve/source_view.h): it must tell whether the process living under that pid now is the one
 * that was sampled before it reads a file through its root, and whether a process that is gone
 * ran in a container. The store keeps no start time; the end of the first interval holding a
 * sample of the pid bounds it: a process that started after that end is not the one sampled.
 */
#ifndef STACKSCOPE_STORE_PROCESS_SPAN_H
#define STACKSCOPE_STORE_PROCESS_SPAN_H

#include <stdint.h>

struct store;

struct store_process_span {
	uint64_t first_end_ns; /* end of the first interval with a sample of the pid; 0: none */
	char container[65];    /* a container id of its rows ("" none; the largest of several) */
};

/* Fills *out for pid over the intervals overlapping [from_ns, to_ns) (to 0: no end). 0 or
 * -errno (out->first_end_ns 0: the pid has no sample there).
 */
int store__process_span(struct store *st, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			struct store_process_span *out);

#endif
