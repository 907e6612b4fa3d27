/* The UI's trace table and trace links (trace_list.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "profile/trace_label.h"
#include "serve/trace_list.h"

#define PH_TRACE "{trace_id}"
#define PH_SPAN "{span_id}"

static bool url_byte_ok(char c)
{
	return c > ' ' && c < 0x7f && !strchr("\"'<>\\`{}", c);
}

int trace_url__check(const char *tmpl, char *why, size_t cap)
{
	const char *s, *host;
	bool has_trace = false;

	if (!strncasecmp(tmpl, "https://", 8))
		host = tmpl + 8;
	else if (!strncasecmp(tmpl, "http://", 7))
		host = tmpl + 7;
	else {
		snprintf(why, cap, "not an http:// or https:// URL");
		return -EINVAL;
	}
	if (strlen(tmpl) >= TRACE_URL_MAX) {
		snprintf(why, cap, "longer than %d bytes", TRACE_URL_MAX - 1);
		return -EINVAL;
	}
	if (!*host || *host == '/' || *host == '{') {
		snprintf(why, cap, "no host");
		return -EINVAL;
	}
	for (s = tmpl; *s; s++) {
		if (!strncmp(s, PH_TRACE, strlen(PH_TRACE))) {
			has_trace = true;
			s += strlen(PH_TRACE) - 1;
		} else if (!strncmp(s, PH_SPAN, strlen(PH_SPAN))) {
			s += strlen(PH_SPAN) - 1;
		} else if (!url_byte_ok(*s)) {
			snprintf(
				why, cap,
				*s == '{' || *s == '}'
					? "a brace that is not {trace_id} or {span_id}"
					: "a space, quote, <, >, \\, ` or a byte outside printable ASCII");
			return -EINVAL;
		}
	}
	if (!has_trace) {
		snprintf(why, cap, "no {trace_id} in it");
		return -EINVAL;
	}
	return 0;
}

static bool is_hex_id(const char *id, size_t len)
{
	size_t i;

	if (!id || strlen(id) != len)
		return false;
	for (i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

int trace_url__expand(const char *tmpl, const char *trace_id, const char *span_id, char *out,
		      size_t cap)
{
	size_t n = 0, k;
	const char *s, *put;

	if (!is_hex_id(trace_id, 32))
		return -EINVAL;
	for (s = tmpl; *s; s++) {
		put = NULL;
		if (!strncmp(s, PH_TRACE, strlen(PH_TRACE))) {
			put = trace_id;
			s += strlen(PH_TRACE) - 1;
		} else if (!strncmp(s, PH_SPAN, strlen(PH_SPAN))) {
			if (!is_hex_id(span_id, 16))
				return -EINVAL;
			put = span_id;
			s += strlen(PH_SPAN) - 1;
		}
		k = put ? strlen(put) : 1;
		if (n + k >= cap)
			return -E2BIG;
		memcpy(out + n, put ? put : s, k);
		n += k;
	}
	if (!cap)
		return -E2BIG;
	out[n] = '\0';
	return 0;
}

/* One sample's ids and count; interned strings of the profile. */
struct span_count {
	const char *trace, *span;
	uint64_t count;
};

struct trace_row {
	const char *trace, *top_span;
	uint64_t count, top_count;
	uint32_t spans;
};

static int by_ids(const void *a, const void *b)
{
	const struct span_count *x = a, *y = b;
	int c = strcmp(x->trace, y->trace);

	return c ? c : strcmp(x->span ?: "", y->span ?: "");
}

static int by_count(const void *a, const void *b)
{
	const struct trace_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->trace, y->trace);
}

/* The sample's trace and span ids (NULL: none). */
static void sample_ids(const struct profile *p, uint32_t set, const char **trace, const char **span)
{
	struct profile_label l;
	uint32_t i, n = profile__label_cnt(p, set);

	*trace = *span = NULL;
	for (i = 0; i < n; i++) {
		if (!profile__label(p, set, i, &l))
			continue;
		if (!strcmp(l.key, TRACE_LABEL_TRACE))
			*trace = l.value;
		else if (!strcmp(l.key, TRACE_LABEL_SPAN))
			*span = l.value;
	}
}

int trace_list__json(const struct profile *p, const char *tmpl, size_t limit, struct json_out *j)
{
	size_t i, n = profile__sample_cnt(p), cnt = 0, rows = 0;
	struct span_count *sc = calloc(n ? n : 1, sizeof(*sc));
	struct trace_row *tr = calloc(n ? n : 1, sizeof(*tr));
	uint64_t span_sum = 0;
	char url[TRACE_URL_MAX];
	int err = 0;

	if (!sc || !tr) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		const char *trace, *span;

		if (s->off_cpu_ns || s->mem_kind || !s->labels)
			continue;
		sample_ids(p, s->labels, &trace, &span);
		if (trace)
			sc[cnt++] = (struct span_count){ trace, span, s->count };
	}
	qsort(sc, cnt, sizeof(*sc), by_ids);
	/* one row per trace; its spans counted, the one with most samples kept */
	for (i = 0; i < cnt; i++) {
		bool new_trace = !rows || strcmp(tr[rows - 1].trace, sc[i].trace);
		bool new_span = new_trace || !i || strcmp(sc[i - 1].span ?: "", sc[i].span ?: "");

		if (new_trace)
			tr[rows++] = (struct trace_row){ .trace = sc[i].trace };
		if (new_span) {
			tr[rows - 1].spans += sc[i].span != NULL;
			span_sum = 0;
		}
		tr[rows - 1].count += sc[i].count;
		span_sum += sc[i].count;
		if (sc[i].span && span_sum > tr[rows - 1].top_count) {
			tr[rows - 1].top_count = span_sum;
			tr[rows - 1].top_span = sc[i].span;
		}
	}
	qsort(tr, rows, sizeof(*tr), by_count);
	json_out__raw(j, "{\"trace_url\":");
	if (tmpl)
		json_out__str(j, tmpl);
	else
		json_out__raw(j, "null");
	json_out__raw(j, ",\"traces\":[");
	for (i = 0; i < rows && i < limit; i++) {
		json_out__raw(j, i ? ",{\"trace_id\":" : "{\"trace_id\":");
		json_out__str(j, tr[i].trace);
		json_out__raw_u64(j, ",\"samples\":", tr[i].count);
		json_out__raw_u64(j, ",\"spans\":", tr[i].spans);
		if (tr[i].top_span) {
			json_out__raw(j, ",\"span_id\":");
			json_out__str(j, tr[i].top_span);
		}
		/* a stored id that is not hex (an imported pprof's label) gets no link */
		if (tmpl &&
		    !trace_url__expand(tmpl, tr[i].trace, tr[i].top_span, url, sizeof(url))) {
			json_out__raw(j, ",\"url\":");
			json_out__str(j, url);
		}
		json_out__raw(j, "}");
	}
	json_out__raw(j, "]}");
cleanup:
	free(sc);
	free(tr);
	return err;
}
