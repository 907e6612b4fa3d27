/* Per-task perf events (task_events.h: why, and how threads created meanwhile are told apart). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/array.h"
#include "base/log.h"
#include "base/u64_map.h"
#include "sampler/task_events.h"

/* Listings of phase (1) at most: a process that makes threads faster than they are listed is
 * left to phase (3), which gives the ones made before (2) an event as well.
 */
#define LISTING_ROUNDS_MAX 8
/* fds kept free for what the recording opens after the events (files, maps, sockets). */
#define FD_HEADROOM 256

struct task_event {
	pid_t tid;
	int fd;
	size_t proc; /* index of its process in the pids given */
};

struct task_events {
	struct task_event *ev;
	size_t cnt, cap;
	struct u64_map seen; /* tid -> itself: listed once (an event, gone, or left to a copy) */
	struct task_events_opts o;
	struct task_events_stats st;
};

/* One listing's new threads. */
struct tid_list {
	struct task_event *t; /* fd unused */
	size_t cnt, cap;
	size_t proc; /* the process being listed */
};

int task_list__each(const char *proc_root, pid_t pid, int (*fn)(pid_t tid, void *ctx), void *ctx)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%d/task", proc_root, (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!err && (d = readdir(dir))) {
		char *end;
		long tid;

		errno = 0;
		tid = strtol(d->d_name, &end, 10);
		if (end == d->d_name || *end || errno || tid <= 0 || tid > INT_MAX)
			continue; /* "." and ".." */
		err = fn((pid_t)tid, ctx);
	}
	closedir(dir);
	return err;
}

pid_t task_list__last_pid(const char *proc_root)
{
	char path[PATH_MAX], buf[256], *last;
	ssize_t n;
	long v;
	int fd;

	snprintf(path, sizeof(path), "%s/loadavg", proc_root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	last = strrchr(buf, ' ');
	if (!last)
		return -EINVAL;
	errno = 0;
	v = strtol(last + 1, NULL, 10);
	if (errno || v < 0 || v > INT_MAX)
		return -EINVAL;
	return (pid_t)v;
}

enum task_birth task_birth__of(pid_t tid, pid_t before, pid_t after, pid_t listed)
{
	/* a read that failed, or the pids wrapped around between the reads */
	if (before < 0 || after < before || listed < after)
		return TASK_BORN_DURING;
	if (tid <= before)
		return TASK_BORN_BEFORE;
	return tid > after ? TASK_BORN_AFTER : TASK_BORN_DURING;
}

static int collect_new(pid_t tid, void *ctx)
{
	void **args = ctx;
	struct task_events *te = args[0];
	struct tid_list *l = args[1];

	if (u64_map__get(&te->seen, (uint64_t)tid))
		return 0;
	if (u64_map__set(&te->seen, (uint64_t)tid, (void *)(uintptr_t)tid) ||
	    array__reserve((void **)&l->t, &l->cap, l->cnt + 1, sizeof(*l->t)))
		return -ENOMEM;
	l->t[l->cnt++] = (struct task_event){ .tid = tid, .fd = -1, .proc = l->proc };
	return 0;
}

/* The threads of pids not listed before, into l. */
static int list_new(struct task_events *te, const pid_t *pids, size_t cnt, struct tid_list *l)
{
	void *args[2] = { te, l };
	int err;

	l->cnt = 0;
	for (l->proc = 0; l->proc < cnt; l->proc++) {
		err = task_list__each("/proc", pids[l->proc], collect_new, args);
		if (err && err != -ENOENT && err != -ESRCH) /* a process gone: nothing of it */
			return err;
	}
	return 0;
}

static size_t open_fd_cnt(void)
{
	DIR *dir = opendir("/proc/self/fd");
	size_t n = 0;

	if (!dir)
		return 0;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n;
}

/* Room for `more` fds beside those open and FD_HEADROOM: the soft RLIMIT_NOFILE raised up to the
 * hard one where it is short (a command, forked already, keeps its own). 0 or -EMFILE.
 */
static int reserve_fds(size_t more)
{
	size_t need = open_fd_cnt() + more + FD_HEADROOM;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -EMFILE;
	if (rl.rlim_cur == RLIM_INFINITY || need <= rl.rlim_cur)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && need > rl.rlim_max)
		return -EMFILE;
	rl.rlim_cur = need;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -EMFILE : 0;
}

/* tid's cpu-clock event, enabled, without a program: its fd, or -errno. */
static int open_event(struct task_events *te, pid_t tid)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = te->o.freq_hz,
		.freq = 1,
		.inherit = 1,
		.inherit_thread = te->st.inherit_thread,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0 && errno == EINVAL && te->st.inherit_thread) {
		/* before 5.13: the bit is reserved (new processes inherit, the filter rejects them) */
		te->st.inherit_thread = false;
		pr_debug("per-task events: no inherit_thread (Linux 5.13+): a -p target's new "
			 "processes inherit the event, the pid filter rejects their samples\n");
		attr.inherit_thread = 0;
		fd = (int)syscall(__NR_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd < 0 ? -errno : fd;
}

static int set_program(struct task_events *te, int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_SET_BPF, te->o.prog_fd) ? -errno : 0;
}

/* Events for the tids of l (the program set too when with_program); a thread gone is counted.
 * 0 or -errno (-E2BIG: over max_threads, -EMFILE: no fds for them).
 */
static int open_events(struct task_events *te, const struct tid_list *l, bool with_program)
{
	size_t i;
	int fd, err;

	if (!l->cnt)
		return 0;
	if (te->cnt + l->cnt > te->o.max_threads)
		return -E2BIG;
	err = reserve_fds(l->cnt);
	err = err ?: array__reserve((void **)&te->ev, &te->cap, te->cnt + l->cnt, sizeof(*te->ev));
	if (err)
		return err;
	for (i = 0; i < l->cnt; i++) {
		fd = open_event(te, l->t[i].tid);
		if (fd == -ESRCH) { /* exited since the listing */
			te->st.gone++;
			continue;
		}
		if (fd < 0)
			return fd;
		te->ev[te->cnt] = l->t[i];
		te->ev[te->cnt++].fd = fd;
		err = with_program ? set_program(te, fd) : 0;
		if (err)
			return err;
	}
	return 0;
}

static int by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct task_event *)a)->tid, y = ((const struct task_event *)b)->tid;

	return (x > y) - (x < y);
}

/* Of the pids given, those with an event on one of their threads. */
static int count_processes(struct task_events *te, size_t cnt)
{
	bool *has = calloc(cnt, sizeof(*has));
	size_t i;

	if (!has)
		return -ENOMEM;
	for (i = 0; i < te->cnt; i++)
		has[te->ev[i].proc] = true;
	for (i = 0; i < cnt; i++)
		te->st.processes += has[i];
	free(has);
	return 0;
}

static int open_all(struct task_events *te, const pid_t *pids, size_t cnt)
{
	struct tid_list fresh = { 0 };
	pid_t before, after, listed;
	int err = 0, round;
	size_t i, n;

	/* (1) every thread an event without the program, until a listing finds none new */
	for (round = 0; round < LISTING_ROUNDS_MAX; round++) {
		err = list_new(te, pids, cnt, &fresh);
		if (!err && round > 0)
			te->st.late += (unsigned int)fresh.cnt;
		err = err ?: open_events(te, &fresh, false);
		if (err || !fresh.cnt)
			break;
	}
	if (err)
		goto out;
	/* (2) the program on each, a main thread first */
	qsort(te->ev, te->cnt, sizeof(*te->ev), by_tid);
	before = task_list__last_pid("/proc");
	for (i = 0; i < te->cnt && !err; i++)
		err = set_program(te, te->ev[i].fd);
	after = task_list__last_pid("/proc");
	if (err)
		goto out;
	/* (3) the threads made since the last listing of (1) */
	err = list_new(te, pids, cnt, &fresh);
	listed = task_list__last_pid("/proc");
	if (err)
		goto out;
	for (i = 0, n = 0; i < fresh.cnt; i++) {
		enum task_birth b = task_birth__of(fresh.t[i].tid, before, after, listed);

		if (b == TASK_BORN_BEFORE)
			fresh.t[n++] = fresh.t[i]; /* inherited no program: an event of its own */
		else if (b == TASK_BORN_DURING)
			te->st.raced++;
	}
	fresh.cnt = n;
	te->st.late += (unsigned int)fresh.cnt;
	err = open_events(te, &fresh, true);
	if (err)
		goto out;
	if (!te->cnt) {
		err = -ESRCH;
		goto out;
	}
	te->st.threads = (unsigned int)te->cnt;
	err = count_processes(te, cnt);
out:
	free(fresh.t);
	return err;
}

int task_events__open(struct task_events **out, const pid_t *pids, size_t cnt,
		      const struct task_events_opts *opts)
{
	struct task_events *te = calloc(1, sizeof(*te));
	int err;

	*out = NULL;
	if (!te)
		return -ENOMEM;
	te->o = *opts;
	if (!te->o.max_threads)
		te->o.max_threads = TASK_EVENTS_MAX;
	te->st.follow_children = opts->follow_children;
	te->st.inherit_thread = !opts->follow_children;
	err = open_all(te, pids, cnt);
	if (err) {
		task_events__free(te);
		return err;
	}
	*out = te;
	return 0;
}

const struct task_events_stats *task_events__stats(const struct task_events *te)
{
	return &te->st;
}

void task_events__disable(struct task_events *te)
{
	size_t i;

	/* an ioctl on an event reaches the copies its threads' children inherited */
	for (i = 0; te && i < te->cnt; i++)
		ioctl(te->ev[i].fd, PERF_EVENT_IOC_DISABLE, 0);
}

void task_events__free(struct task_events *te)
{
	size_t i;

	if (!te)
		return;
	for (i = 0; i < te->cnt; i++)
		close(te->ev[i].fd);
	free(te->ev);
	u64_map__free(&te->seen);
	free(te);
}
