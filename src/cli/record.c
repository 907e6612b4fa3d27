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
#include "base/output_file.h"
#include "cli/commands.h"
#include "base/privileges.h"
#include "cli/record_options.h"
#include "pipeline/alloc_live.h"
#include "pipeline/process_context_table.h"
#include "pipeline/session.h"
#include "sampler/alloc_procs.h"
#include "sampler/off_cpu_join.h"
#include "unwind/deferred.h"
#include "export/flamegraph.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "profile/profile.h"
#include "profile/runtime_fold.h"
#include "pipeline/trace_handler.h"
#include "sampler/sampler.h"
#include "sampler/task_events.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_maps.h"
#include "unwind/segment_maker.h"

/* Most samples wake nobody (BPF_RB_NO_WAKEUP; only a young process's samples with runtime
 * frames do: wake_reader() in bpf/sampler.bpf.c): they wait for the next poll. A runtime's
 * frames are named from the process's memory when read, so the wait is how long a code object
 * has to be freed, or the process to exit, first: `pip3 --version` lost 3.7 % of its Python
 * frames to markers at 100 ms, 0.8 % at 10 ms (0.4 % with the wake-up); npm's V8 frames 1.5-11 %
 * against 0.6 %; record's own CPU the same within the noise.
 */
#define POLL_INTERVAL_MS 10
/* At the end, deferred samples wait this long at most for tables being built (a cold clang's
 * libLLVM: seconds on a loaded box); a recording of a warm workload does not wait at all.
 */
#define RECORD_FLUSH_WAIT_NS (15 * 1000000000ULL)

/* Signals: SIGINT, SIGTERM and SIGHUP (a terminal that went away) end the recording, which is
 * then written as at its end; SIGPIPE is ignored from the start (a reader of stderr or of
 * `-o -` that left is an error to report, not a reason to lose the recording); the command
 * gets the default dispositions back.
 */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t child_exited;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		child_exited = 1;
	else
		stop_requested = 1;
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
		/* ignored here, and an ignored signal stays ignored across exec */
		signal(SIGPIPE, SIG_DFL);
		if (read(fds[0], &c, 1) != 1)
			_exit(127);
		privileges__command_child();
		execvp(argv[0], argv);
		fprintf(stderr, "stackscope record: cannot run '%s': %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	*go_fd = fds[1];
	return pid;
}

struct record_run {
	struct record_options *opts;
	struct segment_maker *maker; /* the entry pool's segments (unwind/segment_maker.h) */
	struct session *session;
	struct profile *prof;
	pid_t child;
	int child_status;
};

static int write_outputs(struct record_run *s)
{
	struct profile *folded = NULL; /* --fold runtime: for the folded and SVG outputs */
	int err = 0;
	size_t i;

	for (i = 0; i < s->opts->output_cnt; i++) {
		const struct record_output *o = &s->opts->outputs[i];
		const struct profile *view = s->prof;
		int e;

		if (s->opts->fold_runtime && o->format != OUTPUT_PPROF) {
			if (!folded && !(folded = runtime_fold__copy(s->prof)))
				pr_warn("--fold runtime: %s: written unfolded\n", strerror(errno));
			if (folded)
				view = folded;
		}
		switch (o->format) {
		case OUTPUT_PPROF:
			e = pprof__write(s->prof, o->path);
			break;
		case OUTPUT_FOLDED:
			e = folded__write_opts(view, o->path,
					       &(struct folded_opts){ s->opts->trace_frames });
			break;
		default:
			e = flamegraph__write(view, o->path,
					      !s->opts->common.off_cpu ? "stackscope record"
					      : s->opts->cpu ? "stackscope record: wall clock "
							       "(off CPU in blue)"
							     : "stackscope record: off CPU");
			break;
		}
		if (e) {
			pr_err("cannot write %s: %s\n", o->path, output_file__strerror(e));
			err = e;
		} else if (!s->opts->quiet) {
			pr_info("wrote %s\n", o->path);
		}
	}
	profile__free(folded);
	return err;
}

/* One line per language runtime seen: its eBPF counters (why frames are missing), then what
 * userspace did (src/interp/).
 */
static void print_runtime(const struct interp_runtime_stats *rs)
{
	const struct interp_runtime *rt = rs->rt;
	size_t i;

	if (!rs->files && !rs->bpf[0])
		return;
	fprintf(stderr,
		"%-14s %llu files (%llu unsupported), %llu processes (%llu rejected); "
		"frames %llu symbolized, %llu markers, %llu through a forked child's "
		"parent; eBPF:",
		rt->name, (unsigned long long)rs->files, (unsigned long long)rs->files_unsupported,
		(unsigned long long)rs->procs_attached, (unsigned long long)rs->procs_rejected,
		(unsigned long long)rs->frames, (unsigned long long)rs->markers,
		(unsigned long long)rs->forked_frames);
	for (i = 0; i < rt->bpf_counter_cnt; i++)
		fprintf(stderr, "%s %s %llu", i ? "," : "", rt->bpf_counter_names[i],
			(unsigned long long)rs->bpf[i]);
	for (i = 0; i < rt->stat_cnt; i++)
		fprintf(stderr, "; %s %llu", rt->stat_names[i], (unsigned long long)rs->own[i]);
	if (rs->code_ranges_dropped)
		fprintf(stderr, "; code ranges dropped %llu",
			(unsigned long long)rs->code_ranges_dropped);
	fprintf(stderr, "\n");
}

/* OBI's map, when one was pinned: read or refused, and the samples it gave a span. */
static void print_obi_map(const struct session_stats *st)
{
	const struct obi_map_stats *o = &st->obi;
	uint64_t set = 0, zero = 0;
	size_t i;

	if (!o->attached && !o->refused)
		return;
	for (i = 0; i < st->runtime_cnt; i++) {
		if (st->runtimes[i].rt->frame_kind != FRAME_KIND_OTEL)
			continue;
		set = st->runtimes[i].bpf[OTEL_COUNTER_OBI_SET];
		zero = st->runtimes[i].bpf[OTEL_COUNTER_OBI_NO_TRACE];
	}
	fprintf(stderr,
		"OBI map        %llu maps read, %llu refused (not of traces_ctx_v1's layout), "
		"%llu gone; eBPF: samples with an OBI span %llu, OBI entry without trace id %llu\n",
		(unsigned long long)o->attached, (unsigned long long)o->refused,
		(unsigned long long)o->gone, (unsigned long long)set, (unsigned long long)zero);
}

/* Off-CPU: what went into the profile, and every stay left out, by reason, with its time. */
static void print_off_cpu(const uint64_t *c, const struct off_cpu_join_stats *j)
{
	fprintf(stderr,
		"off-CPU        %llu stays, %.1f ms in the profile; %llu stacks walked; skipped: "
		"%llu shorter than the minimum, %llu predicted short (%.1f ms, no stack), %llu "
		"over the walk budget (%.1f ms), %llu lost to a full ring buffer (%.1f ms), %llu "
		"without their stack (%.1f ms), %llu stacks expired, %llu malformed\n",
		(unsigned long long)j->joined, (double)c[COUNTER_OFF_CPU_NS] / 1e6,
		(unsigned long long)c[COUNTER_OFF_CPU_WALKS],
		(unsigned long long)c[COUNTER_OFF_CPU_SHORT],
		(unsigned long long)c[COUNTER_OFF_CPU_NOT_WALKED],
		(double)c[COUNTER_OFF_CPU_NOT_WALKED_NS] / 1e6,
		(unsigned long long)c[COUNTER_OFF_CPU_OVER_BUDGET],
		(double)c[COUNTER_OFF_CPU_OVER_BUDGET_NS] / 1e6,
		(unsigned long long)c[COUNTER_OFF_CPU_LOST],
		(double)c[COUNTER_OFF_CPU_LOST_NS] / 1e6, (unsigned long long)j->unmatched,
		(double)j->unmatched_ns / 1e6, (unsigned long long)j->expired,
		(unsigned long long)j->bad_records);
	if (c[COUNTER_OFF_CPU_WALKS])
		fprintf(stderr, "off-CPU walks  %.0f ns per stack walked at a switch out\n",
			(double)c[COUNTER_OFF_CPU_PROG_NS] / (double)c[COUNTER_OFF_CPU_WALKS]);
}

/* Which perf events sampled: per task (and what the listings met) or per CPU. */
static void print_sampling(const struct session_stats *st)
{
	const struct task_events_stats *t = st->task_events;

	if (!t) {
		fprintf(stderr, "sampling       per-CPU events on %u CPUs\n", st->cpu_cnt);
		return;
	}
	fprintf(stderr,
		"sampling       per-task events on %u threads of %u processes (new threads%s "
		"inherit them); %u threads exited before their event, %u found by a later "
		"listing, %u made while the program was set\n",
		t->threads, t->processes,
		t->follow_children  ? " and processes"
		: t->inherit_thread ? ""
				    : " and processes, whose samples the pid filter rejects,",
		t->gone, t->late, t->raced);
}

static void print_summary(struct record_run *r, double secs)
{
	struct session_stats st;
	const struct trace_handler_stats *ts;
	const uint64_t *c = st.counters;
	struct profile_top_entry top[10];
	uint64_t total = profile__total_samples(r->prof);
	size_t n, i;

	session__stats(r->session, &st);
	ts = st.trace;
	fprintf(stderr, "\n");
	fprintf(stderr, "duration       %.2f s at %u Hz on %u CPUs\n", secs,
		r->opts->common.freq_hz, st.cpu_cnt);
	if (r->opts->cpu) /* else no perf event: off-CPU samples only */
		print_sampling(&st);
	fprintf(stderr, "samples        %llu recorded, %llu in the profile, %zu processes\n",
		(unsigned long long)c[COUNTER_SAMPLES], (unsigned long long)total,
		profile__process_cnt(r->prof));
	fprintf(stderr, "lost samples   %llu (ring buffer full: %llu, malformed: %llu)\n",
		(unsigned long long)(c[COUNTER_RINGBUF_FULL] + ts->bad_records),
		(unsigned long long)c[COUNTER_RINGBUF_FULL], (unsigned long long)ts->bad_records);
	fprintf(stderr, "user stacks   ");
	for (i = 0, n = 0; i < UNWIND_END_CNT; i++)
		if (c[COUNTER_UNWIND_END_BASE + i])
			fprintf(stderr, "%s %s: %llu", n++ ? "," : "", unwind_end__name(i),
				(unsigned long long)c[COUNTER_UNWIND_END_BASE + i]);
	/* the reasons are the eBPF walks' ends: a deferred one may have been completed since */
	if (st.deferred && st.deferred->completed)
		fprintf(stderr,
			"; as the walks in eBPF ended: %llu of them completed since (deferred)",
			(unsigned long long)st.deferred->completed);
	fprintf(stderr, "\n");
	fprintf(stderr,
		"frames         kernel %llu (%llu unsymbolized), user %llu (%llu via frame "
		"pointer, %llu from the frame memo, %llu unsymbolized, %llu unresolved, %llu placed late, %llu not placed: "
		"mapping replaced since, %llu from Go pclntab); %llu unique frames with source "
		"lines\n",
		(unsigned long long)ts->kernel_frames, (unsigned long long)ts->kernel_unsymbolized,
		(unsigned long long)ts->user_frames, (unsigned long long)c[COUNTER_FP_FRAMES],
		(unsigned long long)c[COUNTER_MEMO_FRAMES],
		(unsigned long long)ts->user_unsymbolized, (unsigned long long)ts->user_unresolved,
		(unsigned long long)ts->user_late_resolved, (unsigned long long)ts->user_replaced,
		(unsigned long long)ts->user_go, (unsigned long long)ts->user_lines);
	if (c[COUNTER_KSTACK_FAILED] || c[COUNTER_KSTACK_TRUNCATED] || c[COUNTER_EVENTS_LOST] ||
	    c[COUNTER_UNKNOWN_PID] || c[COUNTER_FORK_INHERITED])
		fprintf(stderr,
			"other          kernel stack failed %llu, truncated %llu; process "
			"events lost %llu; samples before their process was known %llu; "
			"forked children resolved through their parent %llu\n",
			(unsigned long long)c[COUNTER_KSTACK_FAILED],
			(unsigned long long)c[COUNTER_KSTACK_TRUNCATED],
			(unsigned long long)c[COUNTER_EVENTS_LOST],
			(unsigned long long)c[COUNTER_UNKNOWN_PID],
			(unsigned long long)c[COUNTER_FORK_INHERITED]);
	if (st.deferred && (c[COUNTER_DEFERRED] || c[COUNTER_DEFER_OVER_BUDGET]))
		fprintf(stderr,
			"deferred       %llu samples with a stack copy: %llu completed (%llu ended "
			"where the copy did), %llu expired, %llu of processes gone before a scan, "
			"%llu queue full, %llu for a table with no room in the pool; %llu over budget, "
			"%llu copies lost (ring buffer full), %llu unpaired; %llu further parts "
			"joined (deep stacks), %llu parts not sent; runtime frames kept in %llu, "
			"not placed in the replay of %llu (as eBPF walked them)\n",
			(unsigned long long)c[COUNTER_DEFERRED],
			(unsigned long long)st.deferred->completed,
			(unsigned long long)st.deferred->stack_short,
			(unsigned long long)st.deferred->expired,
			(unsigned long long)st.deferred->gone,
			(unsigned long long)st.deferred->queue_full,
			(unsigned long long)st.deferred->no_room,
			(unsigned long long)c[COUNTER_DEFER_OVER_BUDGET],
			(unsigned long long)c[COUNTER_DEFER_LOST],
			(unsigned long long)st.deferred->unpaired,
			(unsigned long long)st.deferred->more_parts,
			(unsigned long long)c[COUNTER_DEFER_PART_REFUSED],
			(unsigned long long)st.deferred->runtime_kept,
			(unsigned long long)st.deferred->runtime_unplaced);
	if (st.deferred && (st.deferred->verified || st.deferred->verify_mismatch))
		fprintf(stderr,
			"replay check   %llu identical to eBPF, %llu different, %llu identical up to "
			"the end of the stack copy, %llu not comparable\n",
			(unsigned long long)st.deferred->verified,
			(unsigned long long)st.deferred->verify_mismatch,
			(unsigned long long)st.deferred->verify_short,
			(unsigned long long)st.deferred->verify_skipped);
	if (st.off_cpu)
		print_off_cpu(c, st.off_cpu);
	if (c[COUNTER_ALLOC_SAMPLED] || c[COUNTER_ALLOC_FREED])
		fprintf(stderr,
			"allocations    %llu sampled, %llu failed, %llu not tracked (live map "
			"full), %llu replaced before their free, %llu freed, %llu frees lost\n",
			(unsigned long long)c[COUNTER_ALLOC_SAMPLED],
			(unsigned long long)c[COUNTER_ALLOC_FAILED],
			(unsigned long long)c[COUNTER_ALLOC_LIVE_FULL],
			(unsigned long long)c[COUNTER_ALLOC_REPLACED],
			(unsigned long long)c[COUNTER_ALLOC_FREED],
			(unsigned long long)c[COUNTER_ALLOC_FREE_LOST]);
	if (st.alloc_live && (st.alloc_live->tracked || st.alloc_live->ended))
		fprintf(stderr,
			"in use         %llu sampled allocations kept, %llu freed, %llu taken "
			"out at their process's exit or exec (no free comes for them), %llu "
			"frees unmatched, %llu not kept (table full)\n",
			(unsigned long long)st.alloc_live->tracked,
			(unsigned long long)st.alloc_live->freed,
			(unsigned long long)st.alloc_live->ended,
			(unsigned long long)st.alloc_live->unknown,
			(unsigned long long)st.alloc_live->full);
	if (st.alloc_procs) {
		const struct alloc_procs_stats *ap = st.alloc_procs;

		fprintf(stderr,
			"alloc probes   %llu processes of the command probed (no other process "
			"traps); %llu forked children probed %.1f ms after their fork on average "
			"(%.1f ms at most: what they allocated before is not seen), %llu exited "
			"first; %llu allocator files probed after a process mapped them; %llu not "
			"probed (table full), %llu failures\n",
			(unsigned long long)ap->probed, (unsigned long long)ap->forked_late,
			ap->forked_late ? (double)ap->delay_ns_sum / (double)ap->forked_late / 1e6
					: 0.0,
			(double)ap->delay_ns_max / 1e6, (unsigned long long)ap->gone,
			(unsigned long long)ap->files_late, (unsigned long long)ap->full,
			(unsigned long long)ap->failed);
	}
	if (c[COUNTER_MEM_FAULTS] || c[COUNTER_MEM_BRK] || c[COUNTER_MEM_MMAP])
		fprintf(stderr,
			"memory growth  %llu page-fault samples, %llu brk growths, %llu "
			"anonymous mmaps\n",
			(unsigned long long)c[COUNTER_MEM_FAULTS],
			(unsigned long long)c[COUNTER_MEM_BRK],
			(unsigned long long)c[COUNTER_MEM_MMAP]);
	if (c[COUNTER_NEW_MAPPINGS] || c[COUNTER_NEW_MAPPING_UNKNOWN])
		fprintf(stderr,
			"new mappings   %llu entered by eBPF at exec/mmap, %llu of unknown files "
			"and %llu of changed files left to userspace, %llu overwritten; %llu "
			"lookups answered by them\n",
			(unsigned long long)c[COUNTER_NEW_MAPPINGS],
			(unsigned long long)c[COUNTER_NEW_MAPPING_UNKNOWN],
			(unsigned long long)c[COUNTER_NEW_MAPPING_CHANGED],
			(unsigned long long)c[COUNTER_NEW_MAPPING_EVICTED],
			(unsigned long long)c[COUNTER_NEW_MAPPING_USED]);
	fprintf(stderr,
		"processes      %llu seen (%llu exited, %llu of them before the reader got to "
		"them); mappings read from /proc %llu times (%llu more found it gone), taken from eBPF "
		"alone %llu times; "
		"%zu executables, BPF maps %.1f MiB\n",
		(unsigned long long)(st.processes_alive + st.processes_exited),
		(unsigned long long)st.processes_exited,
		(unsigned long long)st.processes_gone_before_read,
		(unsigned long long)(st.process_scans - st.process_scan_failures),
		(unsigned long long)st.process_scan_failures,
		(unsigned long long)st.process_bpf_syncs, st.executables,
		(double)st.bpf_map_bytes / 1048576.0);
	fprintf(stderr,
		"files          %llu identified, %llu changed in place, %llu pages read as "
		"zeros (file shrank), %llu not regular refused, %llu paths leaving their root "
		"refused\n",
		(unsigned long long)st.files.identified,
		(unsigned long long)st.files.changed_in_place, (unsigned long long)st.pages_zeroed,
		(unsigned long long)st.opens.not_regular, (unsigned long long)st.opens.escapes);
	if (st.unwind)
		fprintf(stderr,
			"unwind tables  %llu files loaded (%llu without CFI, %llu failed, "
			"%llu unloaded, %llu with a debug file's CFI, %llu with malformed CFI: "
			"%llu entries skipped), %llu entries (pool: %llu segments, %llu entries; "
			"%llu tables split), "
			"%llu rules, built in %.0f ms\n",
			(unsigned long long)st.unwind->files_loaded,
			(unsigned long long)st.unwind->files_no_cfi,
			(unsigned long long)st.unwind->files_failed,
			(unsigned long long)st.unwind->files_unloaded,
			(unsigned long long)st.unwind->files_debug_frame,
			(unsigned long long)st.unwind->files_cfi_malformed,
			(unsigned long long)st.unwind->cfi_malformed,
			(unsigned long long)st.unwind->entries_used,
			(unsigned long long)st.unwind->segments,
			(unsigned long long)st.unwind->entries_created,
			(unsigned long long)st.unwind->tables_split,
			(unsigned long long)st.unwind->rules_used,
			(double)(st.unwind->build_ns + st.unwind->load_ns) / 1e6);
	if (st.unwind)
		fprintf(stderr,
			"table builds   %llu on the sampling thread, %llu on the worker (%.0f ms), %llu "
			"first because sampled, %llu still queued, %llu evicted from a full pool, %llu "
			"found no room\n",
			(unsigned long long)st.tables.built_inline,
			(unsigned long long)st.tables.built_worker,
			(double)st.tables.worker_busy_ns / 1e6,
			(unsigned long long)st.tables.sampled_first,
			(unsigned long long)st.tables.queued, (unsigned long long)st.tables.evicted,
			(unsigned long long)st.tables.pool_full);
	if (st.cache)
		fprintf(stderr,
			"table cache    %llu hits, %llu misses, %llu corrupt, %llu of an older "
			"format, %llu stored\n",
			(unsigned long long)st.cache->hits, (unsigned long long)st.cache->misses,
			(unsigned long long)st.cache->corrupt,
			(unsigned long long)st.cache->outdated,
			(unsigned long long)st.cache->stores);
	for (i = 0; i < st.runtime_cnt; i++)
		print_runtime(&st.runtimes[i]);
	selection__print_summary(session__selection(r->session), c);
	if (st.process_contexts && (st.process_contexts->v[PCTX_STAT_PUBLISHED] ||
				    st.process_contexts->v[PCTX_STAT_PROBES])) {
		char line[512];

		pctx_stats__format(st.process_contexts, line, sizeof(line));
		fprintf(stderr, "otel context   %s\n", line);
	}
	print_obi_map(&st);
	if (c[COUNTER_SAMPLES])
		fprintf(stderr, "bpf time       %.0f ns per recorded sample (in-program clock)\n",
			(double)c[COUNTER_SAMPLE_NS] / (double)c[COUNTER_SAMPLES]);
	if (st.bpf_run_cnt)
		fprintf(stderr,
			"bpf run time   %.0f ns per run over %llu runs, filtered ones included "
			"(kernel.bpf_stats_enabled)\n",
			(double)st.bpf_run_ns / (double)st.bpf_run_cnt,
			(unsigned long long)st.bpf_run_cnt);
	n = profile__top_self(r->prof, top, 10);
	if (n) {
		char name[512];

		fprintf(stderr, "top functions by self samples:\n");
		for (i = 0; i < n; i++)
			fprintf(stderr, "  %6.2f%%  %8llu  %s\n",
				total ? 100.0 * (double)top[i].self / (double)total : 0.0,
				(unsigned long long)top[i].self,
				log__escape(top[i].name, name, sizeof(name)));
	}
}

static int run(struct record_run *r)
{
	struct record_options *o = r->opts;
	struct session_opts so = {
		.freq_hz = o->common.freq_hz,
		.filter = o->command          ? FILTER_FOLLOW_CHILDREN
			  : o->common.pid_cnt ? FILTER_PIDS
					      : FILTER_OFF,
		.pids = o->common.pids,
		.pid_cnt = o->common.pid_cnt,
		.symbolize = o->common.symbolize,
		.cache_dir = o->common.cache_dir,
		.symbolize_lines = o->common.symbolize,
		.debuginfod_wait_ms = 10000,
		.debug_dirs = o->debug_dirs,
		.debug_dir_cnt = o->debug_dir_cnt,
		.off_cpu = o->common.off_cpu,
		.no_cpu = !o->cpu,
		/* bound to processes known at the start: events on their threads (-p; a command
		 * only with STACKSCOPE_PER_TASK=1: sampler.c's start_task_events())
		 */
		.per_task = o->command || o->common.pid_cnt,
		.off_cpu_min_ns = o->common.off_cpu_min_ns,
		.off_cpu_rate = o->common.off_cpu_rate,
		.map_scale = o->common.map_scale,
		.obi_map = o->common.obi_map,
		.faults = o->common.faults,
		.fault_period = o->common.fault_period,
		.alloc = o->common.alloc,
		.alloc_rate = o->common.alloc_rate,
		.alloc_command = o->command,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t start_mono, deadline = 0, now;
	int go_fd = -1, err = 0;
	size_t i;

	for (i = 0; i < o->common.pid_cnt; i++) {
		if (kill(o->common.pids[i], 0) && errno == ESRCH) {
			pr_err("no process with pid %d\n", (int)o->common.pids[i]);
			return -ESRCH;
		}
	}
	if (o->common.select.cnt) {
		char why[256];

		so.select = selection_rules__new(&o->common.select, why, sizeof(why));
		if (!so.select)
			return -errno;
	}
	/* before the session's heap grows: the maker's fork shares what we have now */
	r->maker = segment_maker__start();
	so.segment_maker = r->maker;
	r->session = session__new(&so);
	if (!r->session)
		return -errno;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (o->command) {
		sigaction(SIGCHLD, &sa, NULL);
		r->child = spawn_stopped(o->command, &go_fd);
		if (r->child < 0) {
			pr_err("cannot start '%s': %s\n", o->command[0], strerror(errno));
			return -errno;
		}
		session__filter_pid(r->session, r->child);
	}
	err = session__start(r->session);
	if (err)
		return err;
	/* After the command's fork: it keeps what record had; outputs go where the user says; the
	 * entry pool's segments come from r->maker.
	 */
	privileges__drop(PRIVILEGES_WRITE_ANY_PATH | PRIVILEGES_LOG_DEBUG |
			 (o->command && o->common.alloc ? PRIVILEGES_ATTACH_PROBES : 0));
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
			o->command          ? " the command"
			: o->common.pid_cnt ? " the processes"
					    : " every CPU",
			o->common.freq_hz, o->duration_s > 0 ? " for a fixed duration" : "");

	while (!stop_requested) {
		err = session__poll(r->session, POLL_INTERVAL_MS);
		if (err)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline)
			break;
		if (child_exited && r->child > 0 &&
		    waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
			r->child = 0;
			break;
		}
	}
	/* "samples recorded" in the summary then counts what the drain below reads */
	session__stop_sampling(r->session);
	if (!err)
		err = session__poll(r->session, 0); /* drain */
	if (!err)
		err = session__flush_deferred(r->session, RECORD_FLUSH_WAIT_NS);
	now = clock_ns(CLOCK_MONOTONIC);
	r->prof = session__take_profile(r->session);
	if (!r->prof)
		return -ENOMEM;
	err = write_outputs(r) ?: err;
	if (!o->quiet)
		print_summary(r, (double)(now - start_mono) / 1e9);
	return err;
}

int cmd_record(int argc, char **argv)
{
	struct record_options opts;
	struct record_run r = { .opts = &opts };
	int err;

	signal(SIGPIPE, SIG_IGN); /* before the first line on stderr (see the top) */
	if (record_options__parse(argc, argv, &opts))
		return 2;
	if (sampling_options__begin(&opts.common, record_options__usage, LOG_INFO, true))
		return 0;
	err = run(&r);
	if (r.child > 0) {
		kill(r.child, SIGTERM);
		waitpid(r.child, &r.child_status, 0);
	}
	profile__free(r.prof);
	session__free(r.session);
	segment_maker__stop(r.maker);
	if (err)
		return 1;
	/* Like time(1): the command's failure is ours (a command that could not run is 127). */
	if (opts.command && WIFEXITED(r.child_status) && WEXITSTATUS(r.child_status)) {
		pr_info("the command exited with status %d\n", WEXITSTATUS(r.child_status));
		return WEXITSTATUS(r.child_status);
	}
	if (opts.command && WIFSIGNALED(r.child_status)) {
		pr_info("the command was killed by signal %d\n", WTERMSIG(r.child_status));
		return 128 + WTERMSIG(r.child_status);
	}
	return 0;
}
