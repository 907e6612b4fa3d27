/* Least privilege after start-up: once the BPF programs are loaded and attached and the perf
 * events opened, `record` and `agent` keep only the capabilities their running phase uses.
 *
 * Kept (each only if the process had it at start):
 *   CAP_SYS_PTRACE         /proc/PID/maps, /proc/PID/root and process_vm_readv (Python
 *                          frames) of processes of other users or not dumpable;
 *   CAP_DAC_READ_SEARCH    executables and libraries whatever their mode and folders;
 *   CAP_CHECKPOINT_RESTORE /proc/PID/map_files/ links (deleted files, containers);
 *   CAP_BPF                only where the kernel checks it on every bpf() call, even on the
 *                          map fds already held (before 6.5 with unprivileged BPF disabled):
 *                          probed, not guessed;
 *   CAP_DAC_OVERRIDE       only with PRIVILEGES_WRITE_ANY_PATH (`record` writes its outputs
 *                          at the end, wherever the user asked, e.g. a user's own folder);
 *   CAP_PERFMON and        only with PRIVILEGES_ATTACH_PROBES (allocation uprobes bound to
 *   CAP_SYS_ADMIN          each process of a command's tree, opened as the processes start:
 *                          6.18 refuses a uprobe perf event, even system-wide, with
 *                          CAP_PERFMON alone, EACCES; measured).
 * Everything else goes: CAP_PERFMON otherwise (perf events are opened once, CPUs brought
 * online later are not sampled), CAP_SYSLOG (/proc/kallsyms is read once), CAP_SYS_RESOURCE,
 * CAP_SYS_ADMIN otherwise, ...
 *
 * Invariants after privileges__drop(), in every thread of the process (capabilities are per
 * thread: threads started earlier, such as the OTLP client's, are reached by a signal):
 * effective = permitted = the kept set, inheritable and ambient sets empty, no_new_privs set,
 * and the bounding set reduced to the kept set where CAP_SETPCAP allowed it. Processes forked
 * before the call (record's command) keep what they had.
 */
#ifndef STACKSCOPE_PRIVILEGES_H
#define STACKSCOPE_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum privileges_flags {
	PRIVILEGES_WRITE_ANY_PATH = 1 << 0, /* keep CAP_DAC_OVERRIDE */
	PRIVILEGES_LOG_DEBUG = 1 << 1,      /* the summary line at debug level, not info */
	PRIVILEGES_ATTACH_PROBES = 1 << 2,  /* keep CAP_PERFMON and CAP_SYS_ADMIN: `record
					     * --alloc -- COMMAND` opens each new process's
					     * uprobes as it runs */
};

/* One thread's credentials as /proc/.../status shows them. */
struct cap_state {
	uint64_t eff, prm, inh, bnd, amb;
	bool no_new_privs;
};

/* In a child about to exec a command (record's): the command gets the rights of the user who
 * started stackscope, not the ambient capabilities stackscope was given (root's are unchanged).
 * Async-signal-safe.
 */
void privileges__command_child(void);

/* Reduces every thread's capabilities to the running phase's set (see above) and logs one line
 * naming what remains. A capability already absent is not an error. 0, or -errno when a thread
 * kept more than the set (logged as a warning; the run can go on).
 */
int privileges__drop(unsigned int flags);

/* The set privileges__drop() keeps out of `permitted`, given the flags and whether bpf() needs
 * CAP_BPF on held fds.
 */
uint64_t privileges__running_set(uint64_t permitted, unsigned int flags, bool bpf_needs_cap);

/* Parses a /proc/PID/status or /proc/PID/task/TID/status file. 0 or -errno (-EINVAL: a field
 * is missing).
 */
int cap_state__read(const char *status_path, struct cap_state *out);

/* Writes "cap_a,cap_b" (lower case, numbers for unnamed bits; "none" when empty) into buf,
 * truncated to cap bytes with a NUL. Returns the length it needed, like snprintf.
 */
size_t cap_set__format(uint64_t set, char *buf, size_t cap);

#endif
