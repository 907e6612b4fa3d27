/* `stackscope agent`: continuous whole-system profiling, one profile per interval, exported
 * as OTLP profiles (or pprof files when no endpoint is configured), with self-observability
 * in the log and on an optional Prometheus endpoint.
 *
 * One thread samples and builds profiles; exporting runs elsewhere (the OTLP client's own
 * thread) or is a bounded local file write, so sampling never waits for a receiver.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "base/http_server.h"
#include "base/log.h"
#include "cli/agent_options.h"
#include "pipeline/agent_export.h"
#include "cli/commands.h"
#include "cli/metrics_server.h"
#include "base/privileges.h"
#include "pipeline/session.h"
#include "profile/profile.h"
#include "serve/serve_api.h"
#include "store/store.h"
#include "pipeline/trace_handler.h"
#include "sampler/off_cpu_join.h"
#include "sampler/sampler.h"
#include "unwind/deferred.h"
#include "unwind/unwind_maps.h"

/* The ring buffer is drained on this timer (samples never wake the reader; execs of unknown
 * files and urgent table builds do, or shorten it). The ring holds a second of samples at
 * the agent's rate; each wake-up costs the poll loop's housekeeping, a quarter of the agent's
 * CPU under churn at 10 a second.
 */
#define POLL_INTERVAL_MS 250
/* The metrics text is built when a scrape asks for it, not on a timer: a build reads every
 * per-CPU counter of the BPF side (a syscall each), /proc/self/statm and every process of the
 * tracker (two thirds of the agent's CPU under churn when done at every poll, an eighth of its
 * userspace CPU still once a second). A scrape gets a text at most METRICS_MAX_AGE_MS old: an
 * older one is rebuilt at the loop's next turn (at most a poll interval later), the scrape
 * waiting for it up to METRICS_FRESH_WAIT_MS (metrics_server.h).
 */
#define METRICS_MAX_AGE_MS 1000
#define METRICS_FRESH_WAIT_MS (2 * POLL_INTERVAL_MS)
/* Free heap worth giving back after an interval: below it, malloc_trim()'s madvise calls (a
 * TLB flush on every CPU each) and the faults that fill the same pages again next interval
 * cost more than the few MiB they return (a tenth of the agent's CPU under churn, when every
 * interval trimmed).
 */
#define TRIM_SLACK_SZ (4u << 20)
/* At a stop, deferred samples wait this long at most for tables being built (shorter than
 * record's: a service manager's stop timeout).
 */
#define AGENT_FLUSH_WAIT_NS (3 * 1000000000ULL)

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static uint64_t rss_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Prometheus text exposition of the session, export and metrics-server counters. */
static size_t format_metrics(struct session *s, const struct agent_export *ex,
			     struct metrics_server *ms, char *buf, size_t cap)
{
	struct session_stats st;
	struct agent_export_stats es;
	struct metrics_server_stats mst;
	size_t n = 0, i;

	session__stats(s, &st);
	agent_export__stats(ex, &es);
	metrics_server__stats(ms, &mst);
#define EMIT(...)                                                              \
	do {                                                                   \
		int w = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__); \
		if (w > 0)                                                     \
			n += (size_t)w;                                        \
	} while (0)
	EMIT("# TYPE stackscope_samples_total counter\n");
	EMIT("stackscope_samples_total %llu\n", (unsigned long long)st.counters[COUNTER_SAMPLES]);
	EMIT("# TYPE stackscope_samples_lost_total counter\n");
	EMIT("stackscope_samples_lost_total{reason=\"ringbuf_full\"} %llu\n",
	     (unsigned long long)st.counters[COUNTER_RINGBUF_FULL]);
	EMIT("stackscope_samples_lost_total{reason=\"malformed\"} %llu\n",
	     (unsigned long long)st.trace->bad_records);
	EMIT("# TYPE stackscope_process_events_lost_total counter\n");
	EMIT("stackscope_process_events_lost_total %llu\n",
	     (unsigned long long)st.counters[COUNTER_EVENTS_LOST]);
	EMIT("# TYPE stackscope_user_stacks_total counter\n");
	for (i = 0; i < UNWIND_END_CNT; i++)
		EMIT("stackscope_user_stacks_total{end=\"%s\"} %llu\n", unwind_end__name(i),
		     (unsigned long long)st.counters[COUNTER_UNWIND_END_BASE + i]);
	EMIT("# TYPE stackscope_frames_total counter\n");
	EMIT("stackscope_frames_total{kind=\"kernel\"} %llu\n",
	     (unsigned long long)st.trace->kernel_frames);
	EMIT("stackscope_frames_total{kind=\"user\"} %llu\n",
	     (unsigned long long)st.trace->user_frames);
	EMIT("stackscope_frames_total{kind=\"user_frame_pointer\"} %llu\n",
	     (unsigned long long)st.counters[COUNTER_FP_FRAMES]);
	EMIT("stackscope_frames_total{kind=\"user_unresolved\"} %llu\n",
	     (unsigned long long)st.trace->user_unresolved);
	EMIT("stackscope_frames_total{kind=\"user_mapping_replaced\"} %llu\n",
	     (unsigned long long)st.trace->user_replaced);
	EMIT("# TYPE stackscope_exports_total counter\n");
	EMIT("stackscope_exports_total{result=\"ok\"} %llu\n", (unsigned long long)es.ok);
	EMIT("stackscope_exports_total{result=\"failed\"} %llu\n", (unsigned long long)es.failed);
	EMIT("stackscope_exports_total{result=\"retried\"} %llu\n", (unsigned long long)es.retried);
	EMIT("stackscope_exports_total{result=\"dropped\"} %llu\n", (unsigned long long)es.dropped);
	EMIT("# TYPE stackscope_export_bytes_sent_total counter\n");
	EMIT("stackscope_export_bytes_sent_total %llu\n", (unsigned long long)es.bytes_sent);
	EMIT("# TYPE stackscope_export_bytes_delivered_total counter\n");
	EMIT("stackscope_export_bytes_delivered_total %llu\n",
	     (unsigned long long)es.bytes_delivered);
	if (es.otlp) {
		EMIT("# TYPE stackscope_exports_lost_total counter\n");
		for (i = 0; i < OTLP_LOST_REASON_CNT; i++)
			EMIT("stackscope_exports_lost_total{reason=\"%s\"} %llu\n",
			     otlp_lost_reason__name(i), (unsigned long long)es.lost[i]);
		EMIT("# TYPE stackscope_exports_delivered_late_total counter\n");
		EMIT("stackscope_exports_delivered_late_total %llu\n",
		     (unsigned long long)es.delivered_late);
		EMIT("# TYPE stackscope_export_outages_total counter\n");
		EMIT("stackscope_export_outages_total %llu\n", (unsigned long long)es.outages);
		EMIT("# TYPE stackscope_export_collector_up gauge\n");
		EMIT("stackscope_export_collector_up %d\n", es.collector_unavailable ? 0 : 1);
	}
	if (es.store) {
		EMIT("# TYPE stackscope_store_intervals_total counter\n");
		EMIT("stackscope_store_intervals_total{result=\"written\"} %llu\n",
		     (unsigned long long)es.store_written);
		EMIT("stackscope_store_intervals_total{result=\"failed\"} %llu\n",
		     (unsigned long long)es.store_failed);
		EMIT("stackscope_store_intervals_total{result=\"dropped_size\"} %llu\n",
		     (unsigned long long)es.store_dropped_size);
		EMIT("stackscope_store_intervals_total{result=\"dropped_age\"} %llu\n",
		     (unsigned long long)es.store_dropped_age);
		EMIT("# TYPE stackscope_store_recovered_total counter\n");
		EMIT("stackscope_store_recovered_total %llu\n",
		     (unsigned long long)es.store_recovered);
		EMIT("# TYPE stackscope_store_bytes gauge\n");
		EMIT("stackscope_store_bytes %llu\n", (unsigned long long)es.store_bytes);
	}
	EMIT("# TYPE stackscope_export_queue_bytes gauge\n");
	EMIT("stackscope_export_queue_bytes %llu\n", (unsigned long long)es.queue_bytes);
	EMIT("# TYPE stackscope_memory_bytes gauge\n");
	EMIT("stackscope_memory_bytes{kind=\"rss\"} %llu\n", (unsigned long long)rss_bytes());
	EMIT("stackscope_memory_bytes{kind=\"bpf_maps\"} %llu\n",
	     (unsigned long long)st.bpf_map_bytes);
	EMIT("# TYPE stackscope_processes gauge\n");
	EMIT("stackscope_processes %llu\n", (unsigned long long)st.processes_alive);
	EMIT("# TYPE stackscope_process_mapping_updates_total counter\n");
	EMIT("stackscope_process_mapping_updates_total{source=\"proc\"} %llu\n",
	     (unsigned long long)st.process_scans);
	EMIT("stackscope_process_mapping_updates_total{source=\"bpf\"} %llu\n",
	     (unsigned long long)st.process_bpf_syncs);
	EMIT("# TYPE stackscope_processes_gone_before_read_total counter\n");
	EMIT("stackscope_processes_gone_before_read_total %llu\n",
	     (unsigned long long)st.processes_gone_before_read);
	EMIT("# TYPE stackscope_executables gauge\n");
	EMIT("stackscope_executables %zu\n", st.executables);
	if (st.unwind) {
		EMIT("# TYPE stackscope_unwind_tables gauge\n");
		EMIT("stackscope_unwind_tables %llu\n",
		     (unsigned long long)st.unwind->files_loaded);
		EMIT("# TYPE stackscope_unwind_entries gauge\n");
		EMIT("stackscope_unwind_entries %llu\n",
		     (unsigned long long)st.unwind->entries_used);
		EMIT("# TYPE stackscope_unwind_tables_queued gauge\n");
		EMIT("stackscope_unwind_tables_queued %llu\n",
		     (unsigned long long)st.tables.queued);
		EMIT("# TYPE stackscope_unwind_table_builds_total counter\n");
		EMIT("stackscope_unwind_table_builds_total{thread=\"sampling\"} %llu\n",
		     (unsigned long long)st.tables.built_inline);
		EMIT("stackscope_unwind_table_builds_total{thread=\"worker\"} %llu\n",
		     (unsigned long long)st.tables.built_worker);
		EMIT("# TYPE stackscope_unwind_tables_evicted_total counter\n");
		EMIT("stackscope_unwind_tables_evicted_total %llu\n",
		     (unsigned long long)st.tables.evicted);
		EMIT("# TYPE stackscope_unwind_pool_full_total counter\n");
		EMIT("stackscope_unwind_pool_full_total %llu\n",
		     (unsigned long long)st.tables.pool_full);
	}
	EMIT("# TYPE stackscope_samples_deferred_total counter\n");
	EMIT("stackscope_samples_deferred_total{outcome=\"sent\"} %llu\n",
	     (unsigned long long)st.counters[COUNTER_DEFERRED]);
	EMIT("stackscope_samples_deferred_total{outcome=\"over_budget\"} %llu\n",
	     (unsigned long long)st.counters[COUNTER_DEFER_OVER_BUDGET]);
	EMIT("stackscope_samples_deferred_total{outcome=\"copy_lost\"} %llu\n",
	     (unsigned long long)st.counters[COUNTER_DEFER_LOST]);
	if (st.deferred) {
		EMIT("stackscope_samples_deferred_total{outcome=\"completed\"} %llu\n",
		     (unsigned long long)st.deferred->completed);
		EMIT("stackscope_samples_deferred_total{outcome=\"expired\"} %llu\n",
		     (unsigned long long)st.deferred->expired);
		EMIT("stackscope_samples_deferred_total{outcome=\"process_gone\"} %llu\n",
		     (unsigned long long)st.deferred->gone);
		EMIT("stackscope_samples_deferred_total{outcome=\"queue_full\"} %llu\n",
		     (unsigned long long)st.deferred->queue_full);
		EMIT("stackscope_samples_deferred_total{outcome=\"no_room\"} %llu\n",
		     (unsigned long long)st.deferred->no_room);
		EMIT("stackscope_samples_deferred_total{outcome=\"stack_copy_short\"} %llu\n",
		     (unsigned long long)st.deferred->stack_short);
		EMIT("stackscope_samples_deferred_total{outcome=\"unpaired\"} %llu\n",
		     (unsigned long long)st.deferred->unpaired);
		EMIT("# TYPE stackscope_samples_deferred_queued gauge\n");
		EMIT("stackscope_samples_deferred_queued %llu\n",
		     (unsigned long long)st.deferred->queued);
	}
	EMIT("# TYPE stackscope_samples_forked_via_parent_total counter\n");
	EMIT("stackscope_samples_forked_via_parent_total %llu\n",
	     (unsigned long long)st.counters[COUNTER_FORK_INHERITED]);
	if (st.off_cpu) { /* every stay off CPU, by what became of it (sampled: in a profile) */
		const uint64_t *c = st.counters;
		const struct {
			const char *outcome;
			uint64_t stays, ns;
		} oc[] = {
			{ "sampled", st.off_cpu->joined, c[COUNTER_OFF_CPU_NS] },
			{ "short", c[COUNTER_OFF_CPU_SHORT], 0 },
			{ "predicted_short", c[COUNTER_OFF_CPU_NOT_WALKED],
			  c[COUNTER_OFF_CPU_NOT_WALKED_NS] },
			{ "over_budget", c[COUNTER_OFF_CPU_OVER_BUDGET],
			  c[COUNTER_OFF_CPU_OVER_BUDGET_NS] },
			{ "ringbuf_full", c[COUNTER_OFF_CPU_LOST], c[COUNTER_OFF_CPU_LOST_NS] },
			{ "no_stack", st.off_cpu->unmatched, st.off_cpu->unmatched_ns },
		};

		EMIT("# TYPE stackscope_off_cpu_stays_total counter\n");
		for (i = 0; i < sizeof(oc) / sizeof(oc[0]); i++)
			EMIT("stackscope_off_cpu_stays_total{outcome=\"%s\"} %llu\n", oc[i].outcome,
			     (unsigned long long)oc[i].stays);
		EMIT("# TYPE stackscope_off_cpu_seconds_total counter\n");
		for (i = 0; i < sizeof(oc) / sizeof(oc[0]); i++)
			if (i != 1) /* short stays are not timed */
				EMIT("stackscope_off_cpu_seconds_total{outcome=\"%s\"} %.6f\n",
				     oc[i].outcome, (double)oc[i].ns / 1e9);
	}
	EMIT("# TYPE stackscope_hostile_files_total counter\n");
	EMIT("stackscope_hostile_files_total{event=\"changed_in_place\"} %llu\n",
	     (unsigned long long)st.files.changed_in_place);
	EMIT("stackscope_hostile_files_total{event=\"pages_zeroed\"} %llu\n",
	     (unsigned long long)st.pages_zeroed);
	EMIT("stackscope_hostile_files_total{event=\"not_regular\"} %llu\n",
	     (unsigned long long)st.opens.not_regular);
	EMIT("stackscope_hostile_files_total{event=\"root_escape\"} %llu\n",
	     (unsigned long long)st.opens.escapes);
	/* Language runtimes: frames, processes, and every counter of theirs, by name. */
	EMIT("# TYPE stackscope_runtime_frames_total counter\n");
	for (i = 0; i < st.runtime_cnt; i++) {
		const struct interp_runtime_stats *rs = &st.runtimes[i];

		EMIT("stackscope_runtime_frames_total{runtime=\"%s\",result=\"symbolized\"} %llu\n",
		     rs->rt->name, (unsigned long long)rs->frames);
		EMIT("stackscope_runtime_frames_total{runtime=\"%s\",result=\"marker\"} %llu\n",
		     rs->rt->name, (unsigned long long)rs->markers);
	}
	EMIT("# TYPE stackscope_runtime_processes_total counter\n");
	for (i = 0; i < st.runtime_cnt; i++)
		EMIT("stackscope_runtime_processes_total{runtime=\"%s\",result=\"attached\"} %llu\n"
		     "stackscope_runtime_processes_total{runtime=\"%s\",result=\"rejected\"} %llu\n",
		     st.runtimes[i].rt->name, (unsigned long long)st.runtimes[i].procs_attached,
		     st.runtimes[i].rt->name, (unsigned long long)st.runtimes[i].procs_rejected);
	EMIT("# TYPE stackscope_runtime_events_total counter\n");
	for (i = 0; i < st.runtime_cnt; i++) {
		const struct interp_runtime_stats *rs = &st.runtimes[i];
		size_t k;

		for (k = 0; k < rs->rt->bpf_counter_cnt; k++)
			EMIT("stackscope_runtime_events_total{runtime=\"%s\",event=\"%s\"} %llu\n",
			     rs->rt->name, rs->rt->bpf_counter_names[k],
			     (unsigned long long)rs->bpf[k]);
		for (k = 0; k < rs->rt->stat_cnt; k++)
			EMIT("stackscope_runtime_events_total{runtime=\"%s\",event=\"%s\"} %llu\n",
			     rs->rt->name, rs->rt->stat_names[k], (unsigned long long)rs->own[k]);
	}
	EMIT("# TYPE stackscope_metrics_connections_total counter\n");
	EMIT("stackscope_metrics_connections_total{result=\"served\"} %llu\n",
	     (unsigned long long)mst.served);
	EMIT("stackscope_metrics_connections_total{result=\"rejected\"} %llu\n",
	     (unsigned long long)mst.rejected);
	EMIT("stackscope_metrics_connections_total{result=\"refused\"} %llu\n",
	     (unsigned long long)mst.refused);
	EMIT("stackscope_metrics_connections_total{result=\"timed_out\"} %llu\n",
	     (unsigned long long)mst.timed_out);
#undef EMIT
	return n < cap ? n : cap - 1;
}

static void log_counters(struct session *s, const struct agent_export *ex)
{
	struct session_stats st;
	struct agent_export_stats es;
	uint64_t incomplete = 0;
	size_t i;

	session__stats(s, &st);
	agent_export__stats(ex, &es);
	for (i = 1; i < UNWIND_END_CNT; i++)
		if (unwind_end__incomplete(i))
			incomplete += st.counters[COUNTER_UNWIND_END_BASE + i];
	pr_info("samples %llu, lost %llu (ring buffer full), incomplete stacks %llu; exports ok %llu "
		"failed %llu retried %llu dropped %llu, bytes sent %llu delivered %llu; rss %.1f MiB, "
		"bpf maps %.1f MiB; %llu processes, %zu executables; unwind tables %llu queued, %llu "
		"evicted, %llu without room (%llu retries skipped: still no room)\n",
		(unsigned long long)st.counters[COUNTER_SAMPLES],
		(unsigned long long)st.counters[COUNTER_RINGBUF_FULL],
		(unsigned long long)incomplete, (unsigned long long)es.ok,
		(unsigned long long)es.failed, (unsigned long long)es.retried,
		(unsigned long long)es.dropped, (unsigned long long)es.bytes_sent,
		(unsigned long long)es.bytes_delivered, (double)rss_bytes() / 1048576.0,
		(double)st.bpf_map_bytes / 1048576.0, (unsigned long long)st.processes_alive,
		st.executables, (unsigned long long)st.tables.queued,
		(unsigned long long)st.tables.evicted, (unsigned long long)st.tables.pool_full,
		(unsigned long long)st.tables.no_room_waits);
	if (st.deferred && st.counters[COUNTER_DEFERRED] + st.counters[COUNTER_DEFER_OVER_BUDGET])
		pr_info("deferred unwinding: %llu samples with a stack copy, %llu completed (%llu "
			"ended where the copy did), %llu expired, %llu of processes gone, %llu queue "
			"full, %llu for a table with no room in the pool, %llu over budget, %llu copies "
			"lost\n",
			(unsigned long long)st.counters[COUNTER_DEFERRED],
			(unsigned long long)st.deferred->completed,
			(unsigned long long)st.deferred->stack_short,
			(unsigned long long)st.deferred->expired,
			(unsigned long long)st.deferred->gone,
			(unsigned long long)st.deferred->queue_full,
			(unsigned long long)st.deferred->no_room,
			(unsigned long long)st.counters[COUNTER_DEFER_OVER_BUDGET],
			(unsigned long long)st.counters[COUNTER_DEFER_LOST]);
	for (i = 0; i < st.runtime_cnt; i++) {
		const struct interp_runtime_stats *rs = &st.runtimes[i];

		if (rs->files)
			pr_info("%s: %llu processes attached (%llu rejected), frames %llu symbolized, "
				"%llu markers; eBPF: %s %llu\n",
				rs->rt->name, (unsigned long long)rs->procs_attached,
				(unsigned long long)rs->procs_rejected,
				(unsigned long long)rs->frames, (unsigned long long)rs->markers,
				rs->rt->bpf_counter_cnt ? rs->rt->bpf_counter_names[0] : "-",
				(unsigned long long)rs->bpf[0]);
	}
}

static int run(const struct agent_options *o)
{
	struct session_opts so = {
		.freq_hz = o->freq_hz,
		.filter = FILTER_OFF,
		.symbolize = o->symbolize,
		.timestamps_cap = 4096,
		.cache_dir = o->cache_dir,
		.unwind_entry_cap = (size_t)o->unwind_entries,
		.symbolize_lines =
			o->symbolize_lines, /* never waits: late debug info fills later intervals */
		/* well past the 60 s process grace and any interval's export */
		.sampled_tables_only = true,
		.evict_exe_ns =
			(uint64_t)((o->interval_s * 3 > 600 ? o->interval_s * 3 : 600) * 1e9),
		.off_cpu = o->off_cpu,
		.off_cpu_min_ns = o->off_cpu_min_ns,
		.off_cpu_rate = o->off_cpu_rate,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct session *s = NULL;
	struct agent_export *ex = NULL;
	struct metrics_server *ms = NULL;
	struct http_server *ui = NULL;
	struct serve_api *ui_api = NULL;
	struct metrics_server_opts mo = { .max_age_ms = METRICS_MAX_AGE_MS,
					  .fresh_wait_ms = METRICS_FRESH_WAIT_MS };
	uint64_t now, next_report, next_log;
	char *metrics = NULL;
	const size_t metrics_cap = 16384;
	int err = 0;

	ex = agent_export__new(&o->export);
	if (!ex)
		return -errno;
	if (o->metrics_addr) {
		ms = metrics_server__start(o->metrics_addr, &mo);
		if (!ms) {
			err = -errno;
			pr_err("cannot serve metrics on %s: %s\n", o->metrics_addr,
			       strerror(errno));
			goto out;
		}
		metrics = malloc(metrics_cap);
	}
	if (o->ui_addr) { /* the web UI reads the store on its own thread and connection */
		ui = serve__start(o->ui_addr, o->export.store_path ?: STORE_DEFAULT_PATH, &ui_api);
		if (!ui) {
			err = -errno;
			pr_err("cannot serve the UI on %s: %s\n", o->ui_addr, strerror(errno));
			goto out;
		}
		pr_info("web UI on %s (port %u)\n", o->ui_addr, http_server__port(ui));
	}
	s = session__new(&so);
	if (!s) {
		err = -errno;
		goto out;
	}
	agent_export__set_session(ex, s);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	err = session__start(s);
	if (err)
		goto out;
	if (ms && metrics) /* a scrape from now on gets numbers, not 503 */
		metrics_server__publish(ms, metrics,
					format_metrics(s, ex, ms, metrics, metrics_cap));
	privileges__drop(0); /* loaded, attached, port bound: keep only what running needs */
	pr_info("agent running at %u Hz, reporting every %.1f s to %s\n", o->freq_hz, o->interval_s,
		agent_export__describe(ex));
	now = clock_ns(CLOCK_MONOTONIC);
	next_report = now + (uint64_t)(o->interval_s * 1e9);
	next_log = now + (uint64_t)(o->log_interval_s * 1e9);
	while (!stop_requested) {
		err = session__poll(s, POLL_INTERVAL_MS);
		if (err)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= next_report) {
			struct profile *p = session__take_profile(s);

			next_report += (uint64_t)(o->interval_s * 1e9);
			if (next_report < now)
				next_report = now + (uint64_t)(o->interval_s * 1e9);
			if (p)
				agent_export__report(ex, p); /* takes ownership */
			if (mallinfo2().fordblks >= TRIM_SLACK_SZ)
				malloc_trim(0); /* the interval's profile is gone: give it back */
		}
		if (ms && metrics && metrics_server__wanted(ms))
			metrics_server__publish(ms, metrics,
						format_metrics(s, ex, ms, metrics, metrics_cap));
		if (now >= next_log) {
			next_log = now + (uint64_t)(o->log_interval_s * 1e9);
			log_counters(s, ex);
		}
	}
	/* Flush the last (partial) interval. */
	if (!err) {
		struct profile *p;

		session__poll(s, 0);
		session__flush_deferred(s, AGENT_FLUSH_WAIT_NS);
		p = session__take_profile(s);
		if (p)
			agent_export__report(ex, p);
	}
	agent_export__flush(ex, 5000);
	log_counters(s, ex);
	pr_info("agent stopped\n");
out:
	agent_export__free(ex);
	metrics_server__stop(ms);
	http_server__stop(ui);
	serve_api__free(ui_api);
	free(metrics);
	session__free(s);
	return err;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_options opts;

	if (agent_options__parse(argc, argv, &opts))
		return 2;
	if (opts.help) {
		agent_options__usage(stdout);
		return 0;
	}
	log__set_level(opts.verbose ? LOG_DEBUG : LOG_INFO);
	return run(&opts) ? 1 : 0;
}
