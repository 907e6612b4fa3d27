/* The values of a sample label in a profile (label_values.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "serve/label_values.h"

struct value_row {
	const char *name; /* interned by the profile */
	uint64_t samples;
	uint32_t pids[LABEL_VALUE_PIDS_MAX];
	size_t pid_cnt;
};

static int by_samples(const void *a, const void *b)
{
	const struct value_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The value of the sample's label named key, or NULL. */
static const char *value_of(const struct profile *p, const struct profile_agg_sample *s,
			    const char *key)
{
	struct profile_label l;
	uint32_t i;

	for (i = 0; i < PROFILE_MAX_LABELS && profile__label(p, s->labels, i, &l); i++) {
		if (!strcmp(l.key, key))
			return l.value;
	}
	return NULL;
}

int label_values__json(const struct profile *p, const char *label, const char *list,
		       const char *item, struct json_out *j)
{
	struct value_row *rows = calloc(LABEL_VALUES_MAX, sizeof(*rows));
	size_t n = 0, i, k, cnt = profile__sample_cnt(p);

	if (!rows)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		const char *name = s->labels ? value_of(p, s, label) : NULL;
		struct value_row *r = NULL;

		if (!name || s->off_cpu_ns)
			continue;
		for (k = 0; k < n && !r; k++)
			if (!strcmp(rows[k].name, name))
				r = &rows[k];
		if (!r && n == LABEL_VALUES_MAX)
			continue;
		if (!r) {
			r = &rows[n++];
			r->name = name;
		}
		r->samples += s->count;
		for (k = 0; k < r->pid_cnt && r->pids[k] != s->pid; k++)
			;
		if (k == r->pid_cnt && k < LABEL_VALUE_PIDS_MAX)
			r->pids[r->pid_cnt++] = s->pid;
	}
	qsort(rows, n, sizeof(*rows), by_samples);
	json_out__raw(j, "\"");
	json_out__raw(j, list);
	json_out__raw(j, "\":[");
	for (i = 0; i < n; i++) {
		json_out__raw(j, i ? ",{\"" : "{\"");
		json_out__raw(j, item);
		json_out__raw(j, "\":");
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
