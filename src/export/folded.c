/* Folded-stacks export (see folded.h).
 *
 * Each aggregated sample is rendered once into a text arena; the rendered stacks are sorted
 * and equal neighbours merged, so samples that differ only in pid, tid or thread name fold
 * into one line. A sample's labels (goroutine pprof labels) come right after the process name,
 * one pseudo-frame each, "[label: key=value]", so a flame graph splits by them. Invariant: a rendered stack has ';' only between names and no control
 * characters; names may contain spaces, since readers split the count off at the last one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/output_file.h"
#include "export/folded.h"
#include "profile/trace_label.h"

struct folded_text {
	char *data;
	size_t len, cap;
};

struct folded_line {
	size_t off; /* into folded_text.data, NUL-terminated */
	uint64_t count;
};

static int folded_text__reserve(struct folded_text *t, size_t n)
{
	if (n > SIZE_MAX / 2 - t->len)
		return -ENOMEM;
	return array__reserve_bounded((void **)&t->data, &t->cap, t->len + n, 1, 4096,
				      SIZE_MAX / 2);
}

/* Appends one sanitized name. */
static int folded_text__name(struct folded_text *t, const char *name)
{
	size_t len, i;
	int err;

	if (!name || !*name)
		name = "[unknown]";
	len = strlen(name);
	err = folded_text__reserve(t, len + 1);
	if (err)
		return err;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = ' ';
		t->data[t->len++] = (char)c;
	}
	return 0;
}

static int folded_text__char(struct folded_text *t, char c)
{
	int err = folded_text__reserve(t, 1);

	if (!err)
		t->data[t->len++] = c;
	return err;
}

/* Appends "[trace: TRACE_ID span SPAN_ID]" for the sample's span labels (trace_label.h), or
 * nothing without both.
 */
static int folded_text__trace(struct folded_text *t, const struct profile *p, uint32_t labels)
{
	const char *trace = NULL, *span = NULL;
	struct profile_label label;
	uint32_t i;
	int err = 0;

	for (i = 0; profile__label(p, labels, i, &label); i++) {
		if (!strcmp(label.key, TRACE_LABEL_TRACE))
			trace = label.value;
		else if (!strcmp(label.key, TRACE_LABEL_SPAN))
			span = label.value;
	}
	if (!trace || !span)
		return 0;
	err = folded_text__char(t, ';');
	err = err ?: folded_text__name(t, "[trace: ");
	err = err ?: folded_text__name(t, trace);
	err = err ?: folded_text__name(t, " span ");
	err = err ?: folded_text__name(t, span);
	return err ?: folded_text__char(t, ']');
}

/* Appends "comm;[label: k=v];...;root;...;leaf\0" for one aggregated sample. */
static int folded_text__sample(struct folded_text *t, const struct profile *p,
			       const struct profile_agg_sample *s, const struct folded_opts *o)
{
	struct profile_label label;
	const uint32_t *frames;
	uint32_t cnt, i;
	size_t line_cnt, l;
	int err;

	err = folded_text__name(t, s->comm);
	if (!err && o->trace_frames)
		err = folded_text__trace(t, p, s->labels);
	for (i = 0; !err && profile__label(p, s->labels, i, &label); i++) {
		if (trace_label__is_key(label.key)) /* its own frame, when asked */
			continue;
		err = folded_text__char(t, ';');
		err = err ?: folded_text__name(t, "[label: ");
		err = err ?: folded_text__name(t, label.key);
		err = err ?: folded_text__char(t, '=');
		if (*label.value) /* an empty name would read "[unknown]" */
			err = err ?: folded_text__name(t, label.value);
		err = err ?: folded_text__char(t, ']');
	}
	frames = profile__stack(p, s->stack, &cnt);
	for (i = cnt; i-- > 0 && !err;) {
		const struct profile_frame *f = profile__frame(p, frames[i]);

		line_cnt = f->line_cnt ? f->line_cnt : 1;
		for (l = line_cnt; l-- > 0 && !err;) {
			err = folded_text__char(t, ';');
			err = err ?: folded_text__name(t, profile__frame_name(p, frames[i], l));
		}
	}
	return err ?: folded_text__char(t, '\0');
}

static int folded_line__cmp(const void *a, const void *b, void *base)
{
	const struct folded_line *x = a, *y = b;

	return strcmp((const char *)base + x->off, (const char *)base + y->off);
}

int folded__fwrite(const struct profile *p, FILE *out)
{
	return folded__fwrite_opts(p, out, &(struct folded_opts){ 0 });
}

int folded__fwrite_opts(const struct profile *p, FILE *out, const struct folded_opts *o)
{
	size_t cnt = profile__sample_cnt(p), i, j;
	struct folded_text text = { 0 };
	struct folded_line *lines;
	int err = 0;

	lines = calloc(cnt ? cnt : 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (i = 0; i < cnt && !err; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);

		lines[i].off = text.len;
		/* with off-CPU samples, every weight is in ns: on CPU count x period */
		lines[i].count = profile__has_off_cpu(p) ? profile__sample_ns(p, s) : s->count;
		err = folded_text__sample(&text, p, s, o);
	}
	if (err)
		goto cleanup;
	qsort_r(lines, cnt, sizeof(*lines), folded_line__cmp, text.data);
	for (i = 0; i < cnt; i = j) {
		uint64_t sum = 0;

		for (j = i; j < cnt && !strcmp(text.data + lines[i].off, text.data + lines[j].off);
		     j++)
			sum = profile__count_add(sum, lines[j].count);
		if (fprintf(out, "%s %llu\n", text.data + lines[i].off, (unsigned long long)sum) <
		    0) {
			err = -EIO;
			break;
		}
	}
	if (!err && fflush(out))
		err = -EIO;
cleanup:
	free(text.data);
	free(lines);
	return err;
}

int folded__write(const struct profile *p, const char *path)
{
	return folded__write_opts(p, path, &(struct folded_opts){ 0 });
}

int folded__write_opts(const struct profile *p, const char *path, const struct folded_opts *o)
{
	struct output_file *out;
	FILE *f;
	int err = output_file__open_stream(path, &out, &f);

	return err ?: output_file__finish(out, folded__fwrite_opts(p, f, o));
}
