/* A pprof file read back into the in-memory profile, so `stackscope store import` can keep
 * profiles written by `stackscope record` or the agent's pprof folder.
 *
 * The mapping "[kernel.kallsyms]" gives kernel frames (no mapping); a location with another
 * mapping is a native frame in it; a location without one is a runtime frame, or an error
 * pseudo-frame when its only function is "[...]" without a file. Labels "pid", "tid" (numbers),
 * "comm" and "thread_comm" become the sample's fields, other string labels its labels. The
 * count is the "samples" value; without one, the "cpu" nanoseconds divided by the period.
 * What pprof cannot say (call_site, runtime names) is lost.
 */
#ifndef STACKSCOPE_PPROF_IMPORT_H
#define STACKSCOPE_PPROF_IMPORT_H

struct pprof_profile;
struct profile;

/* 0 and *out (caller frees), -EBADMSG for a profile that cannot be mapped (no usable sample
 * type, too many labels or frames), or -ENOMEM.
 */
int pprof_import(const struct pprof_profile *pp, struct profile **out);

#endif
