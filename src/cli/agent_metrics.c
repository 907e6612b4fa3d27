/* The agent's Prometheus text as tables: each metric a row (family, labels, value) of a table
 * per group, printed in order; a family's "# TYPE" line comes before its first row, counter
 * for the names ending in _total, gauge for the others. Names and order are an interface
 * (dashboards, tests/system/test_agent.sh): append, never rename.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "cli/agent_metrics.h"
#include "cli/metrics_server.h"
#include "export/otlp_client.h"
#include "pipeline/agent_export.h"
#include "pipeline/process_context_table.h"
#include "pipeline/alloc_live.h"
#include "pipeline/session.h"
#include "pipeline/trace_handler.h"
#include "sampler/off_cpu_join.h"
#include "proc/selection.h"
#include "sampler/sampler.h"
#include "unwind/deferred.h"
#include "unwind/unwind_maps.h"

struct metric {
	const char *family; /* without the stackscope_ prefix */
	const char *labels; /* "kind=\"user\"", or NULL */
	uint64_t value;
};

struct metrics_text {
	char *buf;
	size_t n, cap;
	const char *family; /* of the last line */
};

static void text__printf(struct metrics_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void text__printf(struct metrics_text *t, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(t->buf + t->n, t->n < t->cap ? t->cap - t->n : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		t->n += (size_t)w;
}

static void text__family(struct metrics_text *t, const char *family)
{
	size_t len = strlen(family);
	bool counter = len > 6 && !strcmp(family + len - 6, "_total");

	if (t->family && !strcmp(t->family, family))
		return;
	t->family = family;
	text__printf(t, "# TYPE stackscope_%s %s\n", family, counter ? "counter" : "gauge");
}

static void text__labels(struct metrics_text *t, const char *family, const char *labels)
{
	text__family(t, family);
	text__printf(t, labels ? "stackscope_%s{%s}" : "stackscope_%s%s", family,
		     labels ? labels : "");
}

static void text__rows(struct metrics_text *t, const struct metric *rows, size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++) {
		text__labels(t, rows[i].family, rows[i].labels);
		text__printf(t, " %llu\n", (unsigned long long)rows[i].value);
	}
}

#define ROWS(t, ...)                                                    \
	do {                                                            \
		const struct metric rows_[] = { __VA_ARGS__ };          \
		text__rows(t, rows_, sizeof(rows_) / sizeof(rows_[0])); \
	} while (0)

/* One row per runtime of a family labelled runtime="NAME",<labels>. */
static void runtime_row(struct metrics_text *t, const char *family, const char *name,
			const char *labels, uint64_t value)
{
	text__family(t, family);
	text__printf(t, "stackscope_%s{runtime=\"%s\",%s} %llu\n", family, name, labels,
		     (unsigned long long)value);
}

static void runtime_rows(struct metrics_text *t, const struct session_stats *st)
{
	static const struct {
		const char *family, *labels[2];
	} families[] = {
		{ "runtime_frames_total", { "result=\"symbolized\"", "result=\"marker\"" } },
		{ "runtime_processes_total", { "result=\"attached\"", "result=\"rejected\"" } },
	};
	size_t f, i, k;
	char label[160];

	for (f = 0; f < 2; f++) {
		text__family(t, families[f].family);
		for (i = 0; i < st->runtime_cnt; i++) {
			const struct interp_runtime_stats *rs = &st->runtimes[i];
			const uint64_t v[2][2] = { { rs->frames, rs->markers },
						   { rs->procs_attached, rs->procs_rejected } };

			for (k = 0; k < 2; k++)
				runtime_row(t, families[f].family, rs->rt->name,
					    families[f].labels[k], v[f][k]);
		}
	}
	text__family(t, "runtime_events_total");
	for (i = 0; i < st->runtime_cnt; i++) {
		const struct interp_runtime_stats *rs = &st->runtimes[i];

		for (k = 0; k < rs->rt->bpf_counter_cnt + rs->rt->stat_cnt; k++) {
			bool bpf = k < rs->rt->bpf_counter_cnt;
			size_t j = bpf ? k : k - rs->rt->bpf_counter_cnt;

			snprintf(label, sizeof(label), "event=\"%s\"",
				 bpf ? rs->rt->bpf_counter_names[j] : rs->rt->stat_names[j]);
			runtime_row(t, "runtime_events_total", rs->rt->name, label,
				    bpf ? rs->bpf[j] : rs->own[j]);
		}
	}
}

/* Every stay off CPU, by what became of it (sampled: in a profile); short ones untimed. */
static void off_cpu_rows(struct metrics_text *t, const struct session_stats *st)
{
	const uint64_t *c = st->counters;
	const struct {
		const char *outcome;
		uint64_t stays, ns;
		bool timed;
	} oc[] = {
		{ "sampled", st->off_cpu->joined, c[COUNTER_OFF_CPU_NS], true },
		{ "short", c[COUNTER_OFF_CPU_SHORT], 0, false },
		{ "predicted_short", c[COUNTER_OFF_CPU_NOT_WALKED],
		  c[COUNTER_OFF_CPU_NOT_WALKED_NS], true },
		{ "over_budget", c[COUNTER_OFF_CPU_OVER_BUDGET], c[COUNTER_OFF_CPU_OVER_BUDGET_NS],
		  true },
		{ "ringbuf_full", c[COUNTER_OFF_CPU_LOST], c[COUNTER_OFF_CPU_LOST_NS], true },
		{ "no_stack", st->off_cpu->unmatched, st->off_cpu->unmatched_ns, true },
	};
	size_t i;

	for (i = 0; i < sizeof(oc) / sizeof(oc[0]); i++) {
		text__family(t, "off_cpu_stays_total");
		text__printf(t, "stackscope_off_cpu_stays_total{outcome=\"%s\"} %llu\n",
			     oc[i].outcome, (unsigned long long)oc[i].stays);
	}
	for (i = 0; i < sizeof(oc) / sizeof(oc[0]); i++) {
		if (!oc[i].timed)
			continue;
		text__family(t, "off_cpu_seconds_total");
		text__printf(t, "stackscope_off_cpu_seconds_total{outcome=\"%s\"} %.6f\n",
			     oc[i].outcome, (double)oc[i].ns / 1e9);
	}
}

/* --alloc: sampled allocations and what became of them; the live map's overflow (eBPF's map
 * full, or the table's: those allocations are never in use in the view).
 */
static void alloc_rows(struct metrics_text *t, const struct session_stats *st)
{
	const uint64_t *c = st->counters;
	const struct alloc_live_stats *al = st->alloc_live;

	ROWS(t, { "alloc_samples_total", NULL, c[COUNTER_ALLOC_SAMPLED] },
	     { "alloc_frees_total", NULL, c[COUNTER_ALLOC_FREED] },
	     { "alloc_live_overflow_total", "map=\"bpf\"", c[COUNTER_ALLOC_LIVE_FULL] },
	     { "alloc_live_overflow_total", "map=\"table\"", al->full },
	     { "alloc_live_dropped_total", "reason=\"process_exited\"", al->exited },
	     { "alloc_live_dropped_total", "reason=\"replaced\"", c[COUNTER_ALLOC_REPLACED] },
	     { "alloc_live_entries", NULL, al->live });
}

size_t agent_metrics__format(struct session *s, const struct agent_export *ex,
			     struct metrics_server *ms, uint64_t rss_bytes, char *buf, size_t cap)
{
	struct metrics_text t = { .buf = buf, .cap = cap };
	struct session_stats st;
	struct agent_export_stats es;
	struct metrics_server_stats mst;
	const uint64_t *c;
	char label[64];
	size_t i;

	session__stats(s, &st);
	agent_export__stats(ex, &es);
	metrics_server__stats(ms, &mst);
	c = st.counters;
	ROWS(&t, { "samples_total", NULL, c[COUNTER_SAMPLES] },
	     { "samples_lost_total", "reason=\"ringbuf_full\"", c[COUNTER_RINGBUF_FULL] },
	     { "samples_lost_total", "reason=\"malformed\"", st.trace->bad_records },
	     { "process_events_lost_total", NULL, c[COUNTER_EVENTS_LOST] });
	text__family(&t, "user_stacks_total");
	for (i = 0; i < UNWIND_END_CNT; i++) {
		snprintf(label, sizeof(label), "end=\"%s\"", unwind_end__name(i));
		ROWS(&t, { "user_stacks_total", label, c[COUNTER_UNWIND_END_BASE + i] });
	}
	ROWS(&t, { "frames_total", "kind=\"kernel\"", st.trace->kernel_frames },
	     { "frames_total", "kind=\"user\"", st.trace->user_frames },
	     { "frames_total", "kind=\"user_frame_pointer\"", c[COUNTER_FP_FRAMES] },
	     { "frames_total", "kind=\"user_frame_memo\"", c[COUNTER_MEMO_FRAMES] },
	     { "frames_total", "kind=\"user_unresolved\"", st.trace->user_unresolved },
	     { "frames_total", "kind=\"user_mapping_replaced\"", st.trace->user_replaced },
	     { "exports_total", "result=\"ok\"", es.ok },
	     { "exports_total", "result=\"failed\"", es.failed },
	     { "exports_total", "result=\"retried\"", es.retried },
	     { "exports_total", "result=\"dropped\"", es.dropped },
	     { "export_bytes_sent_total", NULL, es.bytes_sent },
	     { "export_bytes_delivered_total", NULL, es.bytes_delivered });
	if (es.otlp) {
		for (i = 0; i < OTLP_LOST_REASON_CNT; i++) {
			snprintf(label, sizeof(label), "reason=\"%s\"", otlp_lost_reason__name(i));
			ROWS(&t, { "exports_lost_total", label, es.lost[i] });
		}
		ROWS(&t, { "exports_delivered_late_total", NULL, es.delivered_late },
		     { "export_outages_total", NULL, es.outages },
		     { "export_collector_up", NULL, es.collector_unavailable ? 0 : 1 });
	}
	if (es.store)
		ROWS(&t, { "store_intervals_total", "result=\"written\"", es.store_written },
		     { "store_intervals_total", "result=\"failed\"", es.store_failed },
		     { "store_intervals_total", "result=\"kept\"", es.store_kept },
		     { "store_intervals_total", "result=\"written_late\"", es.store_written_late },
		     { "store_intervals_total", "result=\"lost\"", es.store_lost },
		     { "store_intervals_total", "result=\"dropped_size\"", es.store_dropped_size },
		     { "store_intervals_total", "result=\"dropped_age\"", es.store_dropped_age },
		     { "store_pending_intervals", NULL, es.store_pending },
		     { "store_pending_bytes", NULL, es.store_pending_bytes },
		     { "store_recovered_total", NULL, es.store_recovered },
		     { "store_bytes", NULL, es.store_bytes });
	ROWS(&t, { "export_queue_bytes", NULL, es.queue_bytes },
	     { "memory_bytes", "kind=\"rss\"", rss_bytes },
	     { "memory_bytes", "kind=\"bpf_maps\"", st.bpf_map_bytes },
	     { "processes", NULL, st.processes_alive },
	     { "process_mapping_updates_total", "source=\"proc\"", st.process_scans },
	     { "process_mapping_updates_total", "source=\"bpf\"", st.process_bpf_syncs },
	     { "processes_gone_before_read_total", NULL, st.processes_gone_before_read },
	     { "executables", NULL, st.executables });
	if (st.process_contexts) {
		text__family(&t, "process_context_events_total");
		for (i = 0; i < PCTX_STAT_CNT; i++) {
			snprintf(label, sizeof(label), "event=\"%s\"", pctx_stat__name(i));
			ROWS(&t,
			     { "process_context_events_total", label, st.process_contexts->v[i] });
		}
	}
	if (st.unwind)
		ROWS(&t, { "unwind_tables", NULL, st.unwind->files_loaded },
		     { "unwind_entries", NULL, st.unwind->entries_used },
		     { "unwind_tables_queued", NULL, st.tables.queued },
		     { "unwind_table_builds_total", "thread=\"sampling\"", st.tables.built_inline },
		     { "unwind_table_builds_total", "thread=\"worker\"", st.tables.built_worker },
		     { "unwind_tables_evicted_total", NULL, st.tables.evicted },
		     { "unwind_pool_full_total", NULL, st.tables.pool_full });
	ROWS(&t, { "samples_deferred_total", "outcome=\"sent\"", c[COUNTER_DEFERRED] },
	     { "samples_deferred_total", "outcome=\"over_budget\"", c[COUNTER_DEFER_OVER_BUDGET] },
	     { "samples_deferred_total", "outcome=\"copy_lost\"", c[COUNTER_DEFER_LOST] });
	if (st.deferred) {
		const struct deferred_stats *d = st.deferred;

		ROWS(&t, { "samples_deferred_total", "outcome=\"completed\"", d->completed },
		     { "samples_deferred_total", "outcome=\"expired\"", d->expired },
		     { "samples_deferred_total", "outcome=\"process_gone\"", d->gone },
		     { "samples_deferred_total", "outcome=\"queue_full\"", d->queue_full },
		     { "samples_deferred_total", "outcome=\"no_room\"", d->no_room },
		     { "samples_deferred_total", "outcome=\"stack_copy_short\"", d->stack_short },
		     { "samples_deferred_total", "outcome=\"runtime_unplaced\"",
		       d->runtime_unplaced },
		     { "samples_deferred_runtime_kept_total", NULL, d->runtime_kept },
		     { "samples_deferred_total", "outcome=\"unpaired\"", d->unpaired },
		     { "samples_deferred_queued", NULL, d->queued });
	}
	ROWS(&t, { "samples_forked_via_parent_total", NULL, c[COUNTER_FORK_INHERITED] });
	{
		struct selection_stats ss;

		selection__stats(session__selection(s), &ss);
		ROWS(&t, { "samples_not_selected_total", "where=\"ebpf\"", c[COUNTER_SEL_DROPPED] },
		     { "samples_not_selected_total", "where=\"after_walk\"", ss.user_dropped },
		     { "samples_not_selected_bpf_ns_total", NULL, c[COUNTER_SEL_NS] },
		     { "samples_unclassified_total", NULL, c[COUNTER_SEL_UNCLASSIFIED] },
		     { "samples_probabilistic_off_total", NULL, c[COUNTER_PROB_OFF] },
		     { "probabilistic_intervals_total", "state=\"on\"", ss.prob_on },
		     { "probabilistic_intervals_total", "state=\"off\"", ss.prob_off });
	}
	if (st.off_cpu)
		off_cpu_rows(&t, &st);
	if (st.alloc_live)
		alloc_rows(&t, &st);
	ROWS(&t, { "hostile_files_total", "event=\"changed_in_place\"", st.files.changed_in_place },
	     { "hostile_files_total", "event=\"pages_zeroed\"", st.pages_zeroed },
	     { "hostile_files_total", "event=\"not_regular\"", st.opens.not_regular },
	     { "hostile_files_total", "event=\"root_escape\"", st.opens.escapes });
	runtime_rows(&t, &st);
	ROWS(&t, { "metrics_connections_total", "result=\"served\"", mst.served },
	     { "metrics_connections_total", "result=\"rejected\"", mst.rejected },
	     { "metrics_connections_total", "result=\"refused\"", mst.refused },
	     { "metrics_connections_total", "result=\"timed_out\"", mst.timed_out });
	return t.n < cap ? t.n : cap - 1;
}
