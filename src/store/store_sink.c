/* The agent's store sink. See store_sink.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "store/store_sink.h"
#include "export/pprof_dir.h"

struct store_sink {
	struct store_opts opts;
	struct store *st;
	struct store_stats past; /* counters of the files replaced after corruption */
	uint64_t recovered;
};

static void add_stats(struct store_stats *sum, const struct store_stats *s)
{
	sum->intervals_written += s->intervals_written;
	sum->write_failed += s->write_failed;
	sum->dropped_size += s->dropped_size;
	sum->dropped_age += s->dropped_age;
	sum->samples_written += s->samples_written;
	sum->gc_runs += s->gc_runs;
}

/* Opens the store, moving a corrupt file aside once. 0 or -errno (logged). */
static int open_store(struct store_sink *sink)
{
	char err[512], moved[4200];
	int ret;

	sink->st = store__open(&sink->opts, err, sizeof(err));
	if (sink->st)
		return 0;
	ret = -errno;
	if (ret == -EBADMSG) {
		if (store__quarantine(sink->opts.path, moved, sizeof(moved))) {
			pr_err("store %s is unusable (%s) and cannot be moved aside: %s\n",
			       sink->opts.path, err, strerror(errno));
			return ret;
		}
		sink->recovered++;
		pr_err("store %s is corrupt (%s): moved to %s; profiling continues into a fresh "
		       "%s\n",
		       sink->opts.path, err, moved, sink->opts.path);
		sink->st = store__open(&sink->opts, err, sizeof(err));
		if (sink->st)
			return 0;
		ret = -errno;
	}
	pr_err("cannot open the store %s: %s\n", sink->opts.path, err);
	return ret;
}

struct store_sink *store_sink__open(const char *path, uint64_t max_sz, uint64_t max_age_ns)
{
	struct store_sink *sink = calloc(1, sizeof(*sink));
	int err;

	if (!sink)
		return NULL;
	sink->opts =
		(struct store_opts){ .path = path, .max_sz = max_sz, .max_age_ns = max_age_ns };
	/* the default place is the agent's state folder: made root's alone, as for pprof files */
	if (!strcmp(path, STORE_DEFAULT_PATH) &&
	    (err = pprof_dir__prepare("/var/lib/stackscope"))) {
		pr_err("cannot keep the store in /var/lib/stackscope: %s\n", strerror(-err));
		free(sink);
		errno = -err;
		return NULL;
	}
	err = open_store(sink);
	if (err) {
		free(sink);
		errno = -err;
		return NULL;
	}
	return sink;
}

void store_sink__free(struct store_sink *sink)
{
	if (!sink)
		return;
	store__close(sink->st);
	free(sink);
}

void store_sink__write(struct store_sink *sink, const struct profile *p, store_process_fn lookup,
			void *ctx)
{
	struct store_stats s;
	int err;

	if (!sink->st && open_store(sink)) {
		sink->past.write_failed++;
		return;
	}
	err = store__write(sink->st, p, lookup, ctx);
	if (err == -EBADMSG) {
		/* corrupt under our feet: keep what was counted, start a fresh file, retry once */
		store__stats(sink->st, &s);
		add_stats(&sink->past, &s);
		store__close(sink->st);
		sink->st = NULL;
		pr_err("store %s turned out corrupt while writing\n", sink->opts.path);
		if (open_store(sink) == 0)
			err = store__write(sink->st, p, lookup, ctx);
	}
	if (err)
		pr_warn("cannot write an interval into the store %s: %s (interval dropped)\n",
			sink->opts.path, strerror(-err));
}

void store_sink__stats(const struct store_sink *sink, struct store_sink_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (sink->st)
		store__stats(sink->st, &out->store);
	add_stats(&out->store, &sink->past);
	out->recovered = sink->recovered;
}
