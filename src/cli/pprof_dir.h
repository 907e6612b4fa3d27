/* The agent's embedded sink when no OTLP endpoint is configured: each interval's profile is
 * written as DIR/stackscope-<UTC time>.pb.gz, and the oldest such files are deleted so the
 * folder holds at most max_bytes of them. Other files in DIR are never touched.
 */
#ifndef STACKSCOPE_PPROF_DIR_H
#define STACKSCOPE_PPROF_DIR_H

#include <stdint.h>

struct profile;

struct pprof_dir_stats {
	uint64_t written;
	uint64_t failed;
	uint64_t deleted;   /* oldest files removed to stay under the cap */
	uint64_t bytes;     /* bytes written */
};

/* Creates dir if needed; 0 or -errno (clear message logged by the caller). */
int pprof_dir__prepare(const char *dir);
/* Write p; then trim the folder to max_bytes. 0 or -errno. */
int pprof_dir__write(const char *dir, uint64_t max_bytes, const struct profile *p,
		     uint64_t when_ns, struct pprof_dir_stats *stats);

#endif
