/* The agent's embedded sink when no OTLP endpoint is configured: each interval's profile is
 * written as DIR/stackscope-<UTC time>.pb.gz, and the oldest such files are deleted so the
 * folder holds at most max_bytes of them. Other files in DIR are never touched.
 *
 * The agent runs as root: DIR must be a folder only root can write into (not a symlink,
 * owned by root, writable by neither group nor others: output_file__open_dir()), checked at
 * every write, and every file is created and renamed relative to that folder's descriptor
 * with base/output_file.h's rules, so nothing planted in or instead of DIR is written through.
 */
#ifndef STACKSCOPE_PPROF_DIR_H
#define STACKSCOPE_PPROF_DIR_H

#include <stdint.h>

struct profile;

struct pprof_dir_stats {
	uint64_t written;
	uint64_t failed;
	uint64_t deleted; /* oldest files removed to stay under the cap */
	uint64_t bytes;   /* bytes written */
};

/* Creates dir (and its parents) if needed, 0750, and checks it as above. 0 or -errno:
 * -ELOOP for a symlink, -EACCES for a folder others could write into (clear message logged
 * by the caller).
 */
int pprof_dir__prepare(const char *dir);
/* Write p; then trim the folder to max_bytes. 0 or -errno. */
int pprof_dir__write(const char *dir, uint64_t max_bytes, const struct profile *p, uint64_t when_ns,
		     struct pprof_dir_stats *stats);

#endif
