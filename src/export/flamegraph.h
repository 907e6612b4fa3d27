/* Interactive SVG flamegraph export, self-contained (inline CSS and JavaScript, no external
 * script or font).
 *
 * Layout: root "all" at the bottom, one level of process names (comm), then frames root to
 * leaf with inline chains expanded outermost to innermost; nodes with the same name under the
 * same parent are merged; children sorted by name; widths proportional to samples. Frames
 * narrower than FLAMEGRAPH_MIN_PX are left out, with their samples still counted in their
 * parents. Colours: hue family by kind (native red, inlined aqua, kernel orange, error
 * grey, process blue, interpreted green), shade from a hash of the name.
 * In the browser: hover shows name, samples and percentage; click zooms (Reset Zoom undoes);
 * Search (or Ctrl-F) highlights matches of a regular expression and shows their share.
 */
#ifndef STACKSCOPE_FLAMEGRAPH_H
#define STACKSCOPE_FLAMEGRAPH_H

#include <stdio.h>

#include "profile/profile.h"

#define FLAMEGRAPH_WIDTH 1200 /* px */
#define FLAMEGRAPH_MIN_PX 0.1

/* Writes the SVG to an open stream; title may be NULL ("CPU flame graph"; with off-CPU
 * samples "Off-CPU flame graph", or "Wall-clock ..." with both: widths are then ns, and
 * frames mostly off CPU are drawn in blues).
 * Returns 0, -ENOMEM, or -EIO on a write error.
 */
int flamegraph__fwrite(const struct profile *p, FILE *out, const char *title);

/* Writes the SVG to path under the rules of base/output_file.h (a regular file replaced
 * atomically, a device, FIFO or "-" written in place, a symlink refused). 0 or -errno.
 */
int flamegraph__write(const struct profile *p, const char *path, const char *title);

#endif
