/* `stackscope record`: one recording session from options to output files and summary.
 *
 * Order matters: options are validated and the BPF programs loaded before any command is
 * started; a command is forked stopped on a pipe and released only once sampling runs, so
 * its first samples are not lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/record_options.h"
#include "export/flamegraph.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "profile/profile.h"
#include "profile/trace_handler.h"
#include "sampler/sampler.h"
#include "symbolize/kallsyms.h"
#include "unwind/unwind_maps.h"

#define POLL_INTERVAL_MS 100
/* Unwind tables of files no live process maps are unloaded after this long. */
#define TABLE_IDLE_GRACE_NS (10 * 1000000000ULL)

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t child_exited;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		child_exited = 1;
	else
		stop_requested = 1;
}

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct session {
	struct record_options *opts;
	struct sampler *sampler;
	struct exe_registry *reg;
	struct process_table *pt;
	struct kallsyms *ks;
	struct profile *prof;
	struct trace_handler *th;
	struct unwind_maps *um;
	pid_t child;
	int child_status;
	uint64_t exec_events, exit_events, mmap_events;
};

static int on_record(const void *data, size_t size, void *ctx)
{
	struct session *s = ctx;
	const struct record_header *h = data;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (size < sizeof(*h))
		return 0;
	switch (h->kind) {
	case RECORD_SAMPLE:
		if (trace_handler__sample(s->th, data, size, now) == -ENOMEM)
			return -ENOMEM;
		break;
	case RECORD_EXEC:
		s->exec_events++;
		process_table__exec(s->pt, (pid_t)h->pid, now);
		break;
	case RECORD_MMAP:
		s->mmap_events++;
		process_table__mapped(s->pt, (pid_t)h->pid, now);
		break;
	case RECORD_EXIT:
		s->exit_events++;
		process_table__exit(s->pt, (pid_t)h->pid, now);
		break;
	default:
		break;
	}
	return 0;
}

static void load_executable(struct executable *exe, void *ctx)
{
	struct session *s = ctx;

	if (s->um)
		unwind_maps__load(s->um, exe);
}

static void unload_executable(struct executable *exe, void *ctx)
{
	struct session *s = ctx;

	if (s->um)
		unwind_maps__unload(s->um, exe);
}

/* Fork the command, stopped until `go` is written to. */
static pid_t spawn_stopped(char **argv, int *go_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		char c;

		close(fds[1]);
		signal(SIGINT, SIG_DFL);
		if (read(fds[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "stackscope record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int write_outputs(struct session *s)
{
	int err = 0;
	size_t i;

	for (i = 0; i < s->opts->output_cnt; i++) {
		const struct record_output *o = &s->opts->outputs[i];
		int e;

		switch (o->format) {
		case OUTPUT_PPROF:
			e = pprof__write(s->prof, o->path);
			break;
		case OUTPUT_FOLDED:
			e = folded__write(s->prof, o->path);
			break;
		default:
			e = flamegraph__write(s->prof, o->path, "stackscope record");
			break;
		}
		if (e) {
			pr_err("cannot write %s: %s\n", o->path, strerror(-e));
			err = e;
		} else if (!s->opts->quiet) {
			pr_info("wrote %s\n", o->path);
		}
	}
	return err;
}

static void print_summary(struct session *s, double secs)
{
	uint64_t c[COUNTER_CNT];
	const struct trace_handler_stats *ts = trace_handler__stats(s->th);
	struct process_stats ps;
	struct profile_top_entry top[10];
	size_t n, i;
	uint64_t total = profile__total_samples(s->prof);

	sampler__counters(s->sampler, c);
	process_table__stats(s->pt, &ps);
	fprintf(stderr, "\n");
	fprintf(stderr, "duration       %.2f s at %u Hz on %u CPUs\n", secs, s->opts->freq_hz,
		sampler__cpu_cnt(s->sampler));
	fprintf(stderr, "samples        %llu recorded, %llu in the profile, %zu processes\n",
		(unsigned long long)c[COUNTER_SAMPLES], (unsigned long long)total,
		profile__process_cnt(s->prof));
	fprintf(stderr, "lost samples   %llu (ring buffer full: %llu, malformed: %llu)\n",
		(unsigned long long)(c[COUNTER_RINGBUF_FULL] + ts->bad_records),
		(unsigned long long)c[COUNTER_RINGBUF_FULL], (unsigned long long)ts->bad_records);
	fprintf(stderr, "user stacks    ");
	for (i = 0; i < UNWIND_END_CNT; i++)
		if (c[COUNTER_UNWIND_END_BASE + i])
			fprintf(stderr, "%s%s: %llu", i ? ", " : "", unwind_end__name(i),
				(unsigned long long)c[COUNTER_UNWIND_END_BASE + i]);
	fprintf(stderr, "\n");
	fprintf(stderr, "frames         kernel %llu (%llu unsymbolized), user %llu (%llu via frame "
			"pointer, %llu unsymbolized, %llu unresolved)\n",
		(unsigned long long)ts->kernel_frames, (unsigned long long)ts->kernel_unsymbolized,
		(unsigned long long)ts->user_frames, (unsigned long long)c[COUNTER_FP_FRAMES],
		(unsigned long long)ts->user_unsymbolized, (unsigned long long)ts->user_unresolved);
	if (c[COUNTER_KSTACK_FAILED] || c[COUNTER_KSTACK_TRUNCATED] || c[COUNTER_EVENTS_LOST] ||
	    c[COUNTER_UNKNOWN_PID])
		fprintf(stderr, "other          kernel stack failed %llu, truncated %llu; process "
				"events lost %llu; samples before their process was known %llu\n",
			(unsigned long long)c[COUNTER_KSTACK_FAILED],
			(unsigned long long)c[COUNTER_KSTACK_TRUNCATED],
			(unsigned long long)c[COUNTER_EVENTS_LOST],
			(unsigned long long)c[COUNTER_UNKNOWN_PID]);
	fprintf(stderr, "processes      %llu seen (%llu exited), %zu executables, BPF maps %.1f MiB\n",
		(unsigned long long)(ps.alive + ps.exited), (unsigned long long)ps.exited,
		exe_registry__cnt(s->reg), sampler__map_memory(s->sampler) / 1048576.0);
	if (s->um) {
		const struct unwind_maps_stats *us = unwind_maps__stats(s->um);

		fprintf(stderr, "unwind tables  %llu files loaded (%llu without CFI, %llu failed), "
				"%llu entries, %llu rules\n",
			(unsigned long long)us->files_loaded, (unsigned long long)us->files_no_cfi,
			(unsigned long long)us->files_failed, (unsigned long long)us->entries_used,
			(unsigned long long)us->rules_used);
	}
	{
		uint64_t run_ns, run_cnt;

		if (!sampler__prog_stats(s->sampler, &run_ns, &run_cnt) && run_cnt)
			fprintf(stderr, "bpf time       %.0f ns per sample (%llu runs)\n",
				(double)run_ns / (double)run_cnt, (unsigned long long)run_cnt);
	}
	n = profile__top_self(s->prof, top, 10);
	if (n) {
		fprintf(stderr, "top functions by self samples:\n");
		for (i = 0; i < n; i++)
			fprintf(stderr, "  %6.2f%%  %8llu  %s\n",
				total ? 100.0 * (double)top[i].self / (double)total : 0.0,
				(unsigned long long)top[i].self, top[i].name);
	}
}

static int run(struct session *s)
{
	struct record_options *o = s->opts;
	struct sampler_opts so = { .freq_hz = o->freq_hz };
	struct profile_opts po;
	struct trace_handler_opts to;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t start_mono, deadline = 0, now;
	int go_fd = -1, err = 0;
	size_t i;

	so.filter = o->command ? FILTER_FOLLOW_CHILDREN : o->pid_cnt ? FILTER_PIDS : FILTER_OFF;
	s->sampler = sampler__new(&so, on_record, s);
	if (!s->sampler)
		return -errno;
	s->ks = kallsyms__load(KALLSYMS_PATH);
	if (!s->ks)
		pr_warn("kernel symbols unavailable (%s): kernel frames stay addresses\n",
			strerror(errno));
	s->um = unwind_maps__new(sampler__files_fd(s->sampler), sampler__unwind_pages_fd(s->sampler),
				 sampler__unwind_entries_fd(s->sampler),
				 sampler__unwind_rules_fd(s->sampler),
				 sampler__unwind_entry_cap(s->sampler));
	if (!s->um)
		pr_warn("native unwind tables disabled (%s): frame pointers only\n", strerror(errno));
	{
		struct exe_registry_ops ops = {
			.load = load_executable, .unload = unload_executable, .ctx = s
		};

		s->reg = exe_registry__new(&ops);
	}
	s->pt = s->reg ? process_table__new(s->reg, sampler__mappings_fd(s->sampler)) : NULL;
	po.period_ns = 1000000000ULL / o->freq_hz;
	po.start_time_ns = clock_ns(CLOCK_REALTIME);
	po.timestamps_cap = 0;
	s->prof = profile__new(&po);
	to.symbolize = o->symbolize;
	to.mono_to_wall_ns = (int64_t)(po.start_time_ns - clock_ns(CLOCK_MONOTONIC));
	s->th = s->prof && s->pt ? trace_handler__new(s->prof, s->reg, s->pt, s->ks, &to) : NULL;
	if (!s->th)
		return -ENOMEM;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o->command) {
		sigaction(SIGCHLD, &sa, NULL);
		s->child = spawn_stopped(o->command, &go_fd);
		if (s->child < 0) {
			pr_err("cannot start '%s': %s\n", o->command[0], strerror(errno));
			return -errno;
		}
		sampler__filter_pid(s->sampler, s->child);
	}
	for (i = 0; i < o->pid_cnt; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			pr_err("no process with pid %d\n", (int)o->pids[i]);
			return -ESRCH;
		}
		sampler__filter_pid(s->sampler, o->pids[i]);
	}

	now = clock_ns(CLOCK_MONOTONIC);
	if (o->command)
		process_table__scan(s->pt, s->child, now);
	else if (o->pid_cnt)
		for (i = 0; i < o->pid_cnt; i++)
			process_table__scan(s->pt, o->pids[i], now);
	else
		process_table__scan_all(s->pt, now);

	err = sampler__start(s->sampler);
	if (err)
		return err;
	start_mono = clock_ns(CLOCK_MONOTONIC);
	if (o->duration_s > 0)
		deadline = start_mono + (uint64_t)(o->duration_s * 1e9);
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			pr_warn("cannot release the command: %s\n", strerror(errno));
		close(go_fd);
	}
	if (!o->quiet)
		pr_info("recording%s at %u Hz%s... (Ctrl-C to stop)\n",
			o->command ? " the command" : o->pid_cnt ? " the processes" : " every CPU",
			o->freq_hz, o->duration_s > 0 ? " for a fixed duration" : "");

	while (!stop_requested) {
		err = sampler__poll(s->sampler, POLL_INTERVAL_MS);
		if (err < 0 && err != -EINTR) {
			pr_err("reading samples: %s\n", strerror(-err));
			break;
		}
		err = 0;
		now = clock_ns(CLOCK_MONOTONIC);
		process_table__tick(s->pt, now);
		exe_registry__collect(s->reg, now, TABLE_IDLE_GRACE_NS);
		if (deadline && now >= deadline)
			break;
		if (child_exited && s->child > 0 &&
		    waitpid(s->child, &s->child_status, WNOHANG) == s->child) {
			s->child = 0;
			break;
		}
	}
	sampler__poll(s->sampler, 0); /* drain */
	now = clock_ns(CLOCK_MONOTONIC);
	profile__set_end_time(s->prof, po.start_time_ns + (now - start_mono));
	err = write_outputs(s);
	if (!o->quiet)
		print_summary(s, (double)(now - start_mono) / 1e9);
	return err;
}

int cmd_record(int argc, char **argv)
{
	struct record_options opts;
	struct session s = { .opts = &opts };
	int err;

	if (record_options__parse(argc, argv, &opts))
		return 2;
	if (opts.help) {
		record_options__usage(stdout);
		return 0;
	}
	log__set_level(opts.verbose ? LOG_DEBUG : LOG_INFO);
	raise_fd_limit();
	err = run(&s);
	if (s.child > 0) {
		kill(s.child, SIGTERM);
		waitpid(s.child, &s.child_status, 0);
	}
	trace_handler__free(s.th);
	profile__free(s.prof);
	process_table__free(s.pt);
	exe_registry__free(s.reg);
	unwind_maps__free(s.um);
	kallsyms__free(s.ks);
	sampler__free(s.sampler);
	if (err)
		return 1;
	if (opts.command && WIFEXITED(s.child_status) && WEXITSTATUS(s.child_status))
		pr_info("the command exited with status %d\n", WEXITSTATUS(s.child_status));
	return 0;
}
