/* The services of a profile (service_list.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/process_context_pb.h"
#include "serve/service_list.h"

struct service_row {
	const char *name; /* interned by the profile */
	uint64_t samples;
	uint32_t pids[SERVICE_PIDS_MAX];
	size_t pid_cnt;
};

static int by_samples(const void *a, const void *b)
{
	const struct service_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The value of the sample's label service.name, or NULL. */
static const char *service_of(const struct profile *p, const struct profile_agg_sample *s)
{
	struct profile_label l;
	uint32_t i;

	for (i = 0; i < PROFILE_MAX_LABELS && profile__label(p, s->labels, i, &l); i++) {
		if (!strcmp(l.key, PCTX_SERVICE_LABEL))
			return l.value;
	}
	return NULL;
}

int service_list__json(const struct profile *p, struct json_out *j)
{
	struct service_row *rows = calloc(SERVICE_LIST_MAX, sizeof(*rows));
	size_t n = 0, i, k, cnt = profile__sample_cnt(p);

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		const char *name = s->labels ? service_of(p, s) : NULL;
		struct service_row *r = NULL;

		if (!name || s->off_cpu_ns)
			continue;
		for (k = 0; k < n && !r; k++)
			if (!strcmp(rows[k].name, name))
				r = &rows[k];
		if (!r && n == SERVICE_LIST_MAX)
			continue;
		if (!r) {
			r = &rows[n++];
			r->name = name;
		}
		r->samples += s->count;
		for (k = 0; k < r->pid_cnt && r->pids[k] != s->pid; k++)
			;
		if (k == r->pid_cnt && k < SERVICE_PIDS_MAX)
			r->pids[r->pid_cnt++] = s->pid;
	}
	qsort(rows, n, sizeof(*rows), by_samples);
	json_out__raw(j, "\"services\":[");
	for (i = 0; i < n; i++) {
		json_out__raw(j, i ? ",{\"service\":" : "{\"service\":");
		json_out__str(j, rows[i].name);
		json_out__raw_u64(j, ",\"samples\":", rows[i].samples);
		json_out__raw(j, ",\"pids\":[");
		for (k = 0; k < rows[i].pid_cnt; k++) {
			if (k)
				json_out__raw(j, ",");
			json_out__u64(j, rows[i].pids[k]);
		}
		json_out__raw(j, "]}");
	}
	json_out__raw(j, "]");
	free(rows);
	return 0;
}
