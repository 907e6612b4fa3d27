/* Folded-stacks export (Brendan Gregg's flamegraph.pl / speedscope input): one line
 * "comm;root;...;leaf count" per distinct (comm, stack), inline chains expanded outermost to
 * innermost, lines sorted bytewise so the output is deterministic. Names are sanitized: ';'
 * becomes ':', control characters (newline, tab...) become ' ', empty names "[unknown]".
 * A sample's span (profile/trace_label.h: labels trace_id and span_id, from OpenTelemetry's
 * thread context) is left out, or, with folded_opts.trace_frames, one "[trace: ID span ID]"
 * frame right after the process name (a frame per span splits the graph: only when asked).
 * A profile with off-CPU samples (profile__has_off_cpu) has every count in nanoseconds: off
 * CPU for those, samples x period for CPU ones (with both, a wall-clock view).
 */
#ifndef STACKSCOPE_FOLDED_H
#define STACKSCOPE_FOLDED_H

#include <stdbool.h>
#include <stdio.h>

#include "profile/profile.h"

struct folded_opts {
	bool trace_frames; /* a "[trace: ...]" frame per sample with a span */
};

/* Writes to an open stream. Returns 0, -ENOMEM, or -EIO on a write error. */
int folded__fwrite(const struct profile *p, FILE *out);

/* Writes to path under the rules of base/output_file.h (a regular file replaced atomically,
 * a device, FIFO or "-" written in place, a symlink refused). Returns 0 or -errno.
 */
int folded__write(const struct profile *p, const char *path);

/* The same with options (folded__fwrite/folded__write: all off). */
int folded__fwrite_opts(const struct profile *p, FILE *out, const struct folded_opts *o);
int folded__write_opts(const struct profile *p, const char *path, const struct folded_opts *o);

#endif
