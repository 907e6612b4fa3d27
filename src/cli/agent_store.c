/* The agent's store sink. See agent_store.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/agent_store.h"
#include "cli/pprof_dir.h"

struct agent_store {
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
static int open_store(struct agent_store *as)
{
	char err[512], moved[4200];
	int ret;

	as->st = store__open(&as->opts, err, sizeof(err));
	if (as->st)
		return 0;
	ret = -errno;
	if (ret == -EBADMSG) {
		if (store__quarantine(as->opts.path, moved, sizeof(moved))) {
			pr_err("store %s is unusable (%s) and cannot be moved aside: %s\n",
			       as->opts.path, err, strerror(errno));
			return ret;
		}
		as->recovered++;
		pr_err("store %s is corrupt (%s): moved to %s; profiling continues into a fresh "
		       "%s\n",
		       as->opts.path, err, moved, as->opts.path);
		as->st = store__open(&as->opts, err, sizeof(err));
		if (as->st)
			return 0;
		ret = -errno;
	}
	pr_err("cannot open the store %s: %s\n", as->opts.path, err);
	return ret;
}

struct agent_store *agent_store__open(const char *path, uint64_t max_sz, uint64_t max_age_ns)
{
	struct agent_store *as = calloc(1, sizeof(*as));
	int err;

	if (!as)
		return NULL;
	as->opts = (struct store_opts){ .path = path, .max_sz = max_sz, .max_age_ns = max_age_ns };
	/* the default place is the agent's state folder: made root's alone, as for pprof files */
	if (!strcmp(path, STORE_DEFAULT_PATH) &&
	    (err = pprof_dir__prepare("/var/lib/stackscope"))) {
		pr_err("cannot keep the store in /var/lib/stackscope: %s\n", strerror(-err));
		free(as);
		errno = -err;
		return NULL;
	}
	err = open_store(as);
	if (err) {
		free(as);
		errno = -err;
		return NULL;
	}
	return as;
}

void agent_store__free(struct agent_store *as)
{
	if (!as)
		return;
	store__close(as->st);
	free(as);
}

void agent_store__write(struct agent_store *as, const struct profile *p, store_process_fn lookup,
			void *ctx)
{
	struct store_stats s;
	int err;

	if (!as->st && open_store(as)) {
		as->past.write_failed++;
		return;
	}
	err = store__write(as->st, p, lookup, ctx);
	if (err == -EBADMSG) {
		/* corrupt under our feet: keep what was counted, start a fresh file, retry once */
		store__stats(as->st, &s);
		add_stats(&as->past, &s);
		store__close(as->st);
		as->st = NULL;
		pr_err("store %s turned out corrupt while writing\n", as->opts.path);
		if (open_store(as) == 0)
			err = store__write(as->st, p, lookup, ctx);
	}
	if (err)
		pr_warn("cannot write an interval into the store %s: %s (interval dropped)\n",
			as->opts.path, strerror(-err));
}

void agent_store__stats(const struct agent_store *as, struct agent_store_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (as->st)
		store__stats(as->st, &out->store);
	add_stats(&out->store, &as->past);
	out->recovered = as->recovered;
}
