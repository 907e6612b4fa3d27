/* Agent export: OTLP or a pprof folder. See agent_export.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "cli/agent_export.h"
#include "cli/agent_options.h"
#include "cli/pprof_dir.h"
#include "cli/session.h"
#include "profile/profile.h"

struct agent_export {
	const struct agent_options *opts;
	struct session *session;
	struct pprof_dir_stats dir_stats;
	char describe[512];
};

struct agent_export *agent_export__new(const struct agent_options *o)
{
	struct agent_export *ex = calloc(1, sizeof(*ex));
	int err;

	if (!ex)
		return NULL;
	ex->opts = o;
	if (o->otlp_endpoint) {
		pr_err("OTLP export is not available in this build yet; use --output-dir\n");
		free(ex);
		errno = ENOTSUP;
		return NULL;
	}
	err = pprof_dir__prepare(o->output_dir);
	if (err) {
		pr_err("cannot write profiles into %s: %s\n", o->output_dir, strerror(-err));
		free(ex);
		errno = -err;
		return NULL;
	}
	snprintf(ex->describe, sizeof(ex->describe), "%s (pprof files, at most %llu MiB)",
		 o->output_dir, (unsigned long long)(o->output_max_bytes >> 20));
	return ex;
}

void agent_export__free(struct agent_export *ex)
{
	free(ex);
}

void agent_export__set_session(struct agent_export *ex, struct session *s)
{
	ex->session = s;
}

const char *agent_export__describe(const struct agent_export *ex)
{
	return ex->describe;
}

void agent_export__report(struct agent_export *ex, struct profile *p)
{
	int err;

	if (profile__total_samples(p)) {
		err = pprof_dir__write(ex->opts->output_dir, ex->opts->output_max_bytes, p,
				       profile__start_time_ns(p), &ex->dir_stats);
		if (err)
			pr_warn("cannot write a profile into %s: %s\n", ex->opts->output_dir,
				strerror(-err));
	}
	profile__free(p);
}

void agent_export__flush(struct agent_export *ex, int timeout_ms)
{
	(void)ex;
	(void)timeout_ms;
}

void agent_export__stats(const struct agent_export *ex, struct agent_export_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->ok = ex->dir_stats.written;
	out->failed = ex->dir_stats.failed;
	out->dropped = ex->dir_stats.deleted;
	out->bytes = ex->dir_stats.bytes;
}
