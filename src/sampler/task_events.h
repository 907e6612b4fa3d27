/* Per-task perf events: `record -p PID` (and `record -- COMMAND` with STACKSCOPE_PER_TASK=1:
 * sampler.c says why not by default) sample only their own threads.
 *
 * One cpu-clock event per thread of the recorded processes (pid = tid, cpu = -1, attr.inherit),
 * as `perf record -p` opens them, instead of one per CPU: the sampling program then runs for
 * their samples only, not for every other process's (which the pid filter rejected: ~5 runs a
 * recorded sample on a busy 2-CPU box), and a CPU that runs none of them takes no sampling
 * interrupt. The pid filter stays as it is and still decides.
 *
 * Inheritance: a thread or process created later by a thread that has an event gets a copy of
 * it, with the event's BPF program (the kernel copies a perf_event program into inherited
 * events: perf_event_alloc(); test_pertask and the kernel matrix's forked case check it on
 * 6.18, 6.1 and 5.10). For -p, attr.inherit_thread (5.13+) limits the copies to new threads: a
 * process a target forks is not recorded (the filter rejects it where the kernel lacks the
 * bit). For a command, the event is opened on its process before the exec: every descendant
 * inherits it, as the filter follows them (FILTER_FOLLOW_CHILDREN).
 *
 * Threads created while the events are opened: one made by a thread without an event yet has
 * none, one made by a thread whose event has the program inherits it; the first must be given an
 * event, the second must not (two events: each of its samples twice). So (1) the events are
 * opened without the program, /proc/PID/task listed again until no new thread shows: a thread
 * found late gets an event of its own whatever it inherited, as a copy without the program
 * records nothing (it costs its interrupt only); (2) the program is set on every event, in
 * ascending tid order (a main thread, the usual creator, first), between two reads of the last
 * pid the kernel allocated (/proc/loadavg); (3) one more listing: a thread whose tid came before
 * the first read inherited no program and gets an event (the kernel copies events before it
 * allocates the new tid), one after the second inherited the program, one in between (made
 * during the microseconds of (2)) is counted and left to what it inherited.
 *
 * Invariants: once task_events__open() returns 0 every event holds the program; none is left
 * open on an error; task_events__free() closes them all (their copies go with them).
 */
#ifndef STACKSCOPE_SAMPLER_TASK_EVENTS_H
#define STACKSCOPE_SAMPLER_TASK_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Threads at most, over all the processes (one fd each); above, per-CPU events. */
#define TASK_EVENTS_MAX 4096

struct task_events;

struct task_events_opts {
	unsigned int freq_hz;
	int prog_fd;          /* the sampling program */
	bool follow_children; /* a command's tree: processes inherit too (no inherit_thread) */
	size_t max_threads;   /* 0: TASK_EVENTS_MAX */
};

struct task_events_stats {
	unsigned int threads;   /* events opened, one per thread */
	unsigned int processes; /* of the pids given, those with an event on a thread */
	unsigned int gone;      /* threads that exited between their listing and their event */
	unsigned int late;      /* threads found by a listing after the first */
	unsigned int raced;     /* made while the program was being set (see the top) */
	bool inherit_thread;    /* only threads inherit (not a -p target's new processes) */
	bool follow_children;   /* new processes inherit too (a command) */
};

/* Opens and attaches the events on every thread of pids[0..cnt). 0, or -errno with nothing
 * left open: -E2BIG more threads than max_threads, -EMFILE not that many fds left (after
 * raising RLIMIT_NOFILE's soft limit up to the hard one), -ESRCH none of the processes has a
 * thread left, else perf_event_open()'s or the attach's error (-EACCES: not allowed on these
 * tasks). The caller falls back to per-CPU events on any of these.
 */
int task_events__open(struct task_events **out, const pid_t *pids, size_t cnt,
		      const struct task_events_opts *opts);
/* Borrowed for the object's life. */
const struct task_events_stats *task_events__stats(const struct task_events *te);
/* No more samples from any event or its inherited copies (the fds stay open). */
void task_events__disable(struct task_events *te);
void task_events__free(struct task_events *te);

/* When a thread found by the last listing was made, from its tid and the last pid allocated
 * before (2), after (2) and after the listing (see the top). A wrap of the pids anywhere in
 * between makes it TASK_BORN_DURING (nothing can be told).
 */
enum task_birth {
	TASK_BORN_BEFORE, /* before (2): no program inherited */
	TASK_BORN_DURING, /* during (2): its creator's event may or may not have had it */
	TASK_BORN_AFTER,  /* after (2): inherited the program from its creator's event */
};
enum task_birth task_birth__of(pid_t tid, pid_t before, pid_t after, pid_t listed);

/* The thread ids of pid under proc_root ("/proc"): each passed to fn; fn's nonzero return
 * stops the walk and is returned. -errno when the directory cannot be read (-ENOENT: the
 * process is gone).
 */
int task_list__each(const char *proc_root, pid_t pid, int (*fn)(pid_t tid, void *ctx), void *ctx);

/* The last pid the kernel allocated (the last field of proc_root/loadavg), or -errno. */
pid_t task_list__last_pid(const char *proc_root);

#endif
