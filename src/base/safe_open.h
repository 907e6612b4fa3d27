/* Opening files that other users or containers control, for reading.
 *
 * A path found through a process (its mapped files, its container root, a .gnu_debuglink in
 * its folder) may name a FIFO (open() blocks until a writer comes), a device (opening one can
 * have side effects), or a symlink planted to lead out of a container's root. Every such open
 * goes through here:
 *  - O_NONBLOCK | O_NOCTTY on open, so neither a FIFO nor a terminal can block or adopt us;
 *  - fstat() afterwards: anything but a regular file is refused with EINVAL (and counted);
 *  - inside a root (a container's "/proc/PID/root"), the whole path is resolved as the process
 *    would see it: openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so absolute symlinks and
 *    ".." stay inside; on kernels without openat2 (before 5.6) the last component is opened
 *    with O_NOFOLLOW instead (counted as a weaker open).
 * The fd returned is blocking again (O_NONBLOCK cleared) and close-on-exec.
 */
#ifndef STACKSCOPE_SAFE_OPEN_H
#define STACKSCOPE_SAFE_OPEN_H

#include <stdint.h>

struct safe_open_stats {
	uint64_t not_regular; /* FIFOs, devices, directories, sockets refused */
	uint64_t escapes;     /* paths that tried to leave their root (EXDEV from openat2) */
	uint64_t no_openat2;  /* in-root opens done without openat2 (old kernel) */
};

/* Open path (host view) for reading: fd, or -errno (-EINVAL: not a regular file). */
int safe_open(const char *path);
/* Open path as seen from root ("/proc/PID/root"; NULL or "" means the host): fd or -errno
 * (-EXDEV: the path leads out of root).
 */
int safe_open_in_root(const char *root, const char *path);
/* Whether path (host view) is an existing regular file we may read: 0 or -errno, without
 * opening it (so a FIFO or device is never opened).
 */
int safe_open__check(const char *path);
void safe_open__stats(struct safe_open_stats *out);

#endif
