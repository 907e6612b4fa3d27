/* `stackscope agent` on SIGHUP. See agent_reload.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "cli/agent_options.h"
#include "cli/agent_reload.h"
#include "pipeline/agent_export.h"
#include "pipeline/session.h"
#include "proc/selection.h"

enum field_type { F_STR, F_BOOL, F_UINT, F_U64, F_DOUBLE };

struct reload_field {
	const char *key;
	size_t offset; /* in struct agent_options */
	enum field_type type;
};

#define FIELD(key, member, type)                                  \
	{                                                         \
		key, offsetof(struct agent_options, member), type \
	}

/* What needs a restart. */
static const struct reload_field fixed_fields[] = {
	FIELD("freq", common.freq_hz, F_UINT),
	FIELD("cache-dir", common.cache_dir, F_STR),
	FIELD("no-symbolize", common.symbolize, F_BOOL),
	FIELD("off-cpu", common.off_cpu, F_BOOL),
	FIELD("off-cpu-min", common.off_cpu_min_ns, F_U64),
	FIELD("off-cpu-rate", common.off_cpu_rate, F_UINT),
	FIELD("unwind-entries", unwind_entries, F_U64),
	FIELD("symbolize-lines", symbolize_lines, F_BOOL),
	FIELD("metrics-addr", metrics_addr, F_STR),
	FIELD("ui", ui_addr, F_STR),
	FIELD("allow-host", allow_hosts, F_STR),
	FIELD("output-dir", export.output_dir, F_STR),
	FIELD("output-dir", export.output_dir_set, F_BOOL),
	FIELD("output-max-mb", export.output_max_bytes, F_U64),
	FIELD("queue-max-mb", export.queue_max_bytes, F_U64),
	FIELD("store", export.store_path, F_STR),
	FIELD("store-max-mb", export.store_max_bytes, F_U64),
	FIELD("store-max-age", export.store_max_age_s, F_DOUBLE),
	FIELD("include-cmdline", export.include_cmdline, F_BOOL),
	FIELD("include-env", export.include_env, F_BOOL),
	FIELD("host-root", export.host_root, F_STR), /* pod names: the exporter's, selection's */
	FIELD("node-name", export.node_name, F_STR),
};

/* What a rebuilt exporter takes. */
static const struct reload_field otlp_fields[] = {
	FIELD("otlp-endpoint", export.otlp_endpoint, F_STR),
	FIELD("otlp-protocol", export.otlp_protocol, F_STR),
	FIELD("otlp-headers", export.otlp_headers, F_STR),
	FIELD("otlp-ca", export.otlp_ca_file, F_STR),
	FIELD("otlp-cert", export.otlp_cert_file, F_STR),
	FIELD("otlp-key", export.otlp_key_file, F_STR),
	FIELD("otlp-server-name", export.otlp_server_name, F_STR),
	FIELD("otlp-insecure", export.otlp_insecure, F_BOOL),
};

#define CNT(a) (sizeof(a) / sizeof((a)[0]))

static bool field_equal(const struct reload_field *f, const struct agent_options *a,
			const struct agent_options *b)
{
	const char *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;
	const char *sa, *sb;

	switch (f->type) {
	case F_STR:
		sa = *(const char *const *)pa;
		sb = *(const char *const *)pb;
		return sa == sb || (sa && sb && !strcmp(sa, sb));
	case F_BOOL:
		return *(const bool *)pa == *(const bool *)pb;
	case F_UINT:
		return *(const unsigned int *)pa == *(const unsigned int *)pb;
	case F_U64:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case F_DOUBLE:
		return *(const double *)pa == *(const double *)pb;
	}
	return true;
}

static void field_copy(const struct reload_field *f, struct agent_options *to,
		       const struct agent_options *from)
{
	static const size_t sizes[] = { [F_STR] = sizeof(char *),
					[F_BOOL] = sizeof(bool),
					[F_UINT] = sizeof(unsigned int),
					[F_U64] = sizeof(uint64_t),
					[F_DOUBLE] = sizeof(double) };

	memcpy((char *)to + f->offset, (const char *)from + f->offset, sizes[f->type]);
}

static bool headers_equal(const struct agent_export_opts *a, const struct agent_export_opts *b)
{
	size_t i;

	if (a->otlp_header_cnt != b->otlp_header_cnt)
		return false;
	for (i = 0; i < a->otlp_header_cnt; i++)
		if (strcmp(a->otlp_header_list[i], b->otlp_header_list[i]))
			return false;
	return true;
}

void agent_reload__probabilistic(const struct agent_options *o, struct session *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	selection__set_probabilistic(session__selection(s), o->prob_threshold,
				     (uint64_t)(o->prob_interval_s * 1e9),
				     (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

/* The selection rules of next, when they differ from cur's. 0, -ENOMEM. */
static int reload_selection(const struct agent_options *cur, const struct agent_options *next,
			    struct session *s)
{
	struct selection_rules *rules;
	char why[256];

	if (selection_spec__equal(&cur->common.select, &next->common.select))
		return 0;
	rules = selection_rules__new(&next->common.select, why, sizeof(why));
	if (!rules)
		return -errno;
	selection__set_rules(session__selection(s), rules);
	pr_info("SIGHUP: selection: %zu rules now\n", next->common.select.cnt);
	return 0;
}

int agent_reload(int argc, char **argv, struct agent_options **o, struct agent_export **ex,
		 struct session *s)
{
	struct agent_options *cur = *o, *next = malloc(sizeof(*next));
	struct agent_export *nex = NULL;
	bool otlp_changed = false;
	size_t i;
	int err;

	if (!next)
		return -ENOMEM;
	if (!cur->config_path) {
		pr_info("SIGHUP: no --config file to re-read\n");
		free(next);
		return 0;
	}
	err = agent_options__parse(argc, argv, next);
	if (err) {
		pr_warn("SIGHUP: %s has errors (above): the running configuration is kept\n",
			cur->config_path);
		free(next);
		return -EINVAL;
	}
	next->common.help = false;
	for (i = 0; i < CNT(fixed_fields); i++) {
		if (field_equal(&fixed_fields[i], cur, next))
			continue;
		if (i == 0 || strcmp(fixed_fields[i].key, fixed_fields[i - 1].key))
			pr_warn("SIGHUP: %s changed in %s: it needs a restart, the running value "
				"is kept\n",
				fixed_fields[i].key, cur->config_path);
		field_copy(&fixed_fields[i], next, cur);
	}
	for (i = 0; i < CNT(otlp_fields); i++)
		if (!field_equal(&otlp_fields[i], cur, next))
			otlp_changed = true;
	if (!headers_equal(&cur->export, &next->export))
		otlp_changed = true;

	err = reload_selection(cur, next, s);
	if (err)
		goto fail;
	if (cur->prob_threshold != next->prob_threshold ||
	    cur->prob_interval_s != next->prob_interval_s) {
		agent_reload__probabilistic(next, s);
		pr_info("SIGHUP: probabilistic profiling: %u %% every %.1f s\n",
			next->prob_threshold, next->prob_interval_s);
	}
	if (cur->common.verbose != next->common.verbose)
		log__set_level(next->common.verbose ? LOG_DEBUG : LOG_INFO);

	if (!otlp_changed) { /* the exporter keeps borrowing cur->export: cur takes the rest */
		cur->common.select = next->common.select;
		cur->prob_threshold = next->prob_threshold;
		cur->prob_interval_s = next->prob_interval_s;
		cur->common.verbose = next->common.verbose;
		cur->interval_s = next->interval_s;
		cur->log_interval_s = next->log_interval_s;
		free(next);
		pr_info("SIGHUP: %s applied\n", cur->config_path);
		return 0;
	}
	/* A new exporter over next->export; the old one's queue gets its chance first. */
	agent_export__flush(*ex, 2000);
	agent_export__free(*ex);
	*ex = NULL;
	nex = agent_export__new(&next->export);
	if (!nex) {
		pr_warn("SIGHUP: the new OTLP settings are refused (above): the running ones are "
			"kept\n");
		for (i = 0; i < CNT(otlp_fields); i++)
			field_copy(&otlp_fields[i], next, cur);
		memcpy(next->export.otlp_header_list, cur->export.otlp_header_list,
		       sizeof(next->export.otlp_header_list));
		next->export.otlp_header_cnt = cur->export.otlp_header_cnt;
		nex = agent_export__new(&next->export);
		if (!nex) {
			err = -errno;
			goto fail;
		}
	}
	agent_export__set_session(nex, s);
	*ex = nex;
	*o = next;
	free(cur);
	pr_info("SIGHUP: %s applied; exporting to %s\n", next->config_path,
		agent_export__describe(nex));
	return 0;
fail:
	free(next);
	return err;
}
