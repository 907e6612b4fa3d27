/* How a process sees the file system: its root directory, held open so that files it named
 * (a .gnu_debuglink next to its executable, its /usr/lib/debug) can be looked up as it sees
 * them even after it exited, and never outside that root (base/safe_open.h).
 *
 * Paths in /proc/PID/maps are printed relative to the reader's root: a chroot'ed process's
 * files show as host paths ("/srv/jail/bin/app"), a container's in its own mount namespace as
 * its paths ("/bin/app"). proc_root__inner() turns either into the path the process uses.
 * A process whose root is ours gets no proc_root (fd -1): the host view is its view.
 */
#ifndef STACKSCOPE_PROC_ROOT_H
#define STACKSCOPE_PROC_ROOT_H

#include <stddef.h>
#include <sys/types.h>

struct proc_root {
	int fd;          /* O_PATH of the process's root; -1 when it is ours */
	char ref[32];    /* "/proc/self/fd/N": a path prefix naming that root; "" when ours */
	char *host_path; /* where that root is in our view ("/srv/jail"), NULL if unreachable */
};

/* The root of process pid: 0, or -errno (ESRCH: gone). out is zeroed with fd -1 on error. */
int proc_root__open(pid_t pid, struct proc_root *out);
/* Another reference to the same root (its own fd). 0 or -errno. */
int proc_root__dup(const struct proc_root *r, struct proc_root *out);
void proc_root__close(struct proc_root *r);
/* The path the process uses for maps_path (a path from its /proc/PID/maps as we read it). */
const char *proc_root__inner(const struct proc_root *r, const char *maps_path);

#endif
