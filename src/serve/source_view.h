/* The web UI's source view (GET /api/source, docs/API.md): one function's source file with each
 * line's share of the samples, read on this host through the sampled process's root.
 *
 * The file is only ever one that a frame of the function names in the store's data for the
 * range (a UI user cannot name another), read for one process (the one with most samples in
 * it, or the pid filter's), through that process's /proc/PID/root when the process living under
 * that pid now is the one sampled (same name and container, started before the end of the
 * first interval holding a sample of the pid); when it is gone, through this host's root only if
 * it did not run in a container. The file itself is read by serve/source_file.h (caps,
 * refusals). When it cannot be shown, the answer still holds the lines' heat, and "reason" says
 * why in one line.
 *
 * Heat: a line's total is the samples with a frame on that line of the file anywhere on the
 * stack (counted once per sample); its self is the samples whose innermost frame of the file's
 * kind (the innermost script frame of that runtime, or the innermost native frame) is on it.
 */
#ifndef STACKSCOPE_SOURCE_VIEW_H
#define STACKSCOPE_SOURCE_VIEW_H

#include <stddef.h>

struct json_out;
struct profile;
struct store;
struct store_filter;

/* Writes the answer's JSON object for function (a frame's display name, as in the flamegraph)
 * over p, the merged samples of filter f from st; file (NULL: the function's file with most
 * samples) must be one of the function's files. 0, or an HTTP status (404: no such function or
 * file in the range, 500/503 a store error) with why filled.
 */
int source_view__json(struct store *st, const struct profile *p, const struct store_filter *f,
		      const char *function, const char *file, struct json_out *j, char *why,
		      size_t why_sz);

#endif
