/* A live thread of a process whose main thread has exited (pthread_exit()) while others run on.
 *
 * The leader's /proc/PID entries that describe the address space and the filesystem view
 * (maps, map_files, root) are empty or gone once it has exited, though the process lives on:
 * a thread's own entries under /proc/PID/task/TID describe the same. Used when the leader's
 * entry fails (not on every read): a process that is gone costs one failed opendir more.
 */
#ifndef STACKSCOPE_LIVE_THREAD_H
#define STACKSCOPE_LIVE_THREAD_H

#include <stddef.h>
#include <sys/types.h>

/* "/proc/PID/task/TID/LEAF" of a thread of pid other than its leader into buf, for each
 * such thread in turn while try(buf, ctx) returns -ESRCH (that thread exited meanwhile, or has
 * no mm either). Returns what the last try returned, or -ESRCH when pid has no other thread.
 */
int live_thread__try(pid_t pid, const char *leaf, int (*try)(const char *path, void *ctx),
		     void *ctx);

#endif
