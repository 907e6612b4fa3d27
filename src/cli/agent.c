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
#include "cli/agent_metrics.h"
#include "cli/agent_options.h"
#include "cli/agent_reload.h"
#include "pipeline/agent_export.h"
#include "cli/commands.h"
#include "cli/metrics_server.h"
#include "base/privileges.h"
#include "pipeline/process_context_table.h"
#include "pipeline/session.h"
#include "unwind/segment_maker.h"
#include "profile/profile.h"
#include "serve/otlp_receiver.h"
#include "serve/serve_api.h"
#include "store/store.h"
#include "pipeline/trace_handler.h"
#include "proc/selection.h"
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

/* Signals: SIGINT and SIGTERM stop the agent after it exported its last, partial interval;
 * SIGHUP re-reads --config FILE (cli/agent_reload.h) and ends the interval at once (exported,
 * as at its end), the next one under the new settings; SIGUSR1 writes the counters to the log
 * (its default action would end the agent). SIGPIPE is ignored from the start.
 */
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t flush_requested;
static volatile sig_atomic_t stats_requested;
static volatile sig_atomic_t reload_requested;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		flush_requested = reload_requested = 1;
	else if (sig == SIGUSR1)
		stats_requested = 1;
	else
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
	selection__print_summary(session__selection(s), st.counters);
	if (st.process_contexts && st.process_contexts->v[PCTX_STAT_PUBLISHED]) {
		char line[512];

		pctx_stats__format(st.process_contexts, line, sizeof(line));
		pr_info("otel context: %s\n", line);
	}
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

/* o (malloc'ed) is run()'s: freed at the end (a reload may replace it meanwhile). */
static int run(int argc, char **argv, struct agent_options *o)
{
	struct session_opts so = {
		.freq_hz = o->common.freq_hz,
		.filter = FILTER_OFF,
		.symbolize = o->common.symbolize,
		.timestamps_cap = 4096,
		.cache_dir = o->common.cache_dir,
		/* the pool's cap: as record's (sampler/map_sizing.c: 4M entries times --map-scale,
		 * less on a small machine), unless set. Its segments are made as tables need
		 * them, so the cap costs nothing until used; at 2M, clang 14's two libraries
		 * (1.95M entries) could never be in beside anything else on a busy box
		 * (BENCHMARKS 49-ref: 0 % of clang's stacks complete)
		 */
		.unwind_entry_cap = (size_t)o->unwind_entries,
		.symbolize_lines =
			o->symbolize_lines, /* never waits: late debug info fills later intervals */
		/* well past the 60 s process grace and any interval's export */
		.sampled_tables_only = true,
		.evict_exe_ns =
			(uint64_t)((o->interval_s * 3 > 600 ? o->interval_s * 3 : 600) * 1e9),
		.off_cpu = o->common.off_cpu,
		.off_cpu_min_ns = o->common.off_cpu_min_ns,
		.off_cpu_rate = o->common.off_cpu_rate,
		.map_scale = o->common.map_scale,
		.faults = o->common.faults,
		.fault_period = o->common.fault_period,
		.alloc = o->common.alloc,
		.alloc_rate = o->common.alloc_rate,
		.alloc_carry = true, /* in use: the live set at each interval's end */
		.obi_map = o->common.obi_map,
		.host_root = o->export.host_root,
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct session *s = NULL;
	struct segment_maker *maker = NULL; /* the entry pool's segments */
	struct agent_export *ex = NULL;
	struct metrics_server *ms = NULL;
	struct http_server *ui = NULL;
	struct serve_api *ui_api = NULL;
	struct otlp_receiver *rx = NULL;
	struct metrics_server_opts mo = { .max_age_ms = METRICS_MAX_AGE_MS,
					  .fresh_wait_ms = METRICS_FRESH_WAIT_MS };
	uint64_t now, next_report, next_log;
	char *metrics = NULL;
	const size_t metrics_cap = 65536; /* every runtime's counters: 16 KiB cut the last lines */
	bool profiled = true; /* probabilistic profiling was on at some time in this interval */
	uint64_t skipped_off = 0;
	int err = 0;

	sigaction(SIGHUP, &sa, NULL); /* from the start: it never ends the agent */
	sigaction(SIGUSR1, &sa, NULL);
	if (o->common.select.cnt) {
		char why[256];

		so.select = selection_rules__new(&o->common.select, why, sizeof(why));
		if (!so.select)
			return -errno;
	}
	ex = agent_export__new(&o->export);
	if (!ex) {
		err = -errno;
		goto out;
	}
	mo.hosts = o->allow_hosts;
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
		ui = serve__start_traces(o->ui_addr, o->allow_hosts,
					 o->export.store_path ?: STORE_DEFAULT_PATH, o->trace_url,
					 &ui_api);
		if (!ui) {
			err = -errno;
			pr_err("cannot serve the UI on %s: %s\n", o->ui_addr, strerror(errno));
			goto out;
		}
		pr_info("web UI on %s (port %u)\n", o->ui_addr, http_server__port(ui));
	}
	if (o->otlp_listen || o->otlp_grpc_listen) { /* other agents' profiles, into the store */
		struct otlp_receiver_opts ro = {
			.addr = o->otlp_listen,
			.grpc_addr = o->otlp_grpc_listen,
			.store_path = o->export.store_path ?: STORE_DEFAULT_PATH,
			.store_max_sz = o->export.store_max_bytes,
			.store_max_age_ns = (uint64_t)(o->export.store_max_age_s * 1e9),
		};

		rx = otlp_receiver__start(&ro);
		if (!rx) {
			err = -errno;
			pr_err("cannot receive OTLP on %s%s%s: %s\n", o->otlp_listen ?: "",
			       o->otlp_listen && o->otlp_grpc_listen ? " and " : "",
			       o->otlp_grpc_listen ?: "", strerror(errno));
			goto out;
		}
		if (o->otlp_listen)
			pr_info("OTLP profiles received on %s (port %u)\n", o->otlp_listen,
				otlp_receiver__port(rx));
		if (o->otlp_grpc_listen)
			pr_info("OTLP profiles received over gRPC on %s (port %u)\n",
				o->otlp_grpc_listen, otlp_receiver__grpc_port(rx));
	}
	/* before the session's heap grows: the maker's fork shares what we have now */
	maker = segment_maker__start();
	so.segment_maker = maker;
	s = session__new(&so);
	so.select = NULL; /* the session's now, even when it failed */
	if (!s) {
		err = -errno;
		goto out;
	}
	agent_reload__probabilistic(o, s);
	agent_export__set_session(ex, s);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = session__start(s);
	if (err)
		goto out;
	if (ms && metrics) /* a scrape from now on gets numbers, not 503 */
		metrics_server__publish(ms, metrics,
					agent_metrics__format(s, ex, ms, rss_bytes(), metrics,
							      metrics_cap));
	/* loaded, attached, port bound: keep only what running needs (the entry pool's segments
	 * come from maker)
	 */
	privileges__drop(0);
	pr_info("agent running at %u Hz, reporting every %.1f s to %s\n", o->common.freq_hz,
		o->interval_s, agent_export__describe(ex));
	now = clock_ns(CLOCK_MONOTONIC);
	next_report = now + (uint64_t)(o->interval_s * 1e9);
	next_log = now + (uint64_t)(o->log_interval_s * 1e9);
	while (!stop_requested) {
		err = session__poll(s, POLL_INTERVAL_MS);
		if (err)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (selection__profiling(session__selection(s)))
			profiled = true;
		if (stats_requested) { /* SIGUSR1 */
			stats_requested = 0;
			log_counters(s, ex);
		}
		if (flush_requested) { /* SIGHUP: this interval ends now, the next is a whole one */
			flush_requested = 0;
			next_report = now;
			pr_info("SIGHUP: the interval so far is exported now\n");
		}
		if (now >= next_report) {
			struct profile *p = session__take_profile(s);

			if (p &&
			    !profiled) { /* probabilistic profiling off all along: no profile */
				profile__free(p);
				p = NULL;
				skipped_off++;
				pr_debug("probabilistic profiling was off this interval: nothing "
					 "exported (%llu such intervals)\n",
					 (unsigned long long)skipped_off);
			}
			profiled = selection__profiling(session__selection(s));
			if (p)
				agent_export__report(ex, p); /* takes ownership */
			/* the settings of the file as it is now, for the next interval */
			if (reload_requested) {
				reload_requested = 0;
				err = agent_reload(argc, argv, &o, &ex, s);
				if (err == -EINVAL)
					err = 0;
				if (err || !ex)
					break;
			}
			next_report += (uint64_t)(o->interval_s * 1e9);
			if (next_report < now)
				next_report = now + (uint64_t)(o->interval_s * 1e9);
			if (mallinfo2().fordblks >= TRIM_SLACK_SZ)
				malloc_trim(0); /* the interval's profile is gone: give it back */
		}
		if (ms && metrics && metrics_server__wanted(ms))
			metrics_server__publish(ms, metrics,
						agent_metrics__format(s, ex, ms, rss_bytes(),
								      metrics, metrics_cap));
		if (now >= next_log) {
			next_log = now + (uint64_t)(o->log_interval_s * 1e9);
			log_counters(s, ex);
			if (rx)
				otlp_receiver__log_stats(rx);
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
	if (rx)
		otlp_receiver__log_stats(rx);
	pr_info("agent stopped\n");
out:
	selection_rules__free(so.select);
	agent_export__free(ex);
	metrics_server__stop(ms);
	http_server__stop(ui);
	serve_api__free(ui_api);
	otlp_receiver__stop(rx);
	free(metrics);
	session__free(s);
	segment_maker__stop(maker);
	free(o);
	return err;
}

/* --check-config: the options parsed, what the sinks would refuse checked; 0 or 2. */
static int agent_check_config(const struct agent_options *o)
{
	char err[256];

	if (agent_export__check(&o->export, err, sizeof(err))) {
		fprintf(stderr, "stackscope agent: %s\n", err);
		return 2;
	}
	printf("stackscope agent: the configuration%s%s is good\n", o->config_path ? " in " : "",
	       o->config_path ? o->config_path : "");
	return 0;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_options *opts =
		malloc(sizeof(*opts)); /* a reload may replace it: run() frees */
	int rc;

	signal(SIGPIPE, SIG_IGN); /* a closed log pipe or a client gone: errors, not an end */
	if (!opts)
		return 1;
	if (agent_options__parse(argc, argv, opts)) {
		free(opts);
		return 2;
	}
	if (opts->check_config) {
		rc = agent_check_config(opts);
		free(opts);
		return rc;
	}
	if (sampling_options__begin(&opts->common, agent_options__usage, LOG_INFO, false)) {
		free(opts);
		return 0;
	}
	rc = run(argc, argv, opts) ? 1 : 0;
	return rc;
}
