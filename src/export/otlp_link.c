/* The OTLP link table (otlp_link.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "export/otlp_link.h"
#include "profile/trace_label.h"

enum { LINK_TRACE_ID = 1, LINK_SPAN_ID = 2 };

static int links__add(struct otlp_links *t, const struct otlp_link *l, uint32_t *out)
{
	uint64_t h = fnv64(l, sizeof(*l), FNV64_INIT);
	size_t i;

	if (!t->cnt) { /* the zero link */
		if (array__reserve((void **)&t->links, &t->cap, 1, sizeof(*t->links)))
			return -ENOMEM;
		memset(&t->links[t->cnt++], 0, sizeof(*t->links));
	}
	if (id_index__reserve(&t->idx))
		return -ENOMEM;
	for (i = id_index__first(&t->idx, h); t->idx.ids[i]; i = id_index__next(&t->idx, i)) {
		if (t->idx.hashes[i] == h && !memcmp(&t->links[t->idx.ids[i]], l, sizeof(*l))) {
			*out = t->idx.ids[i];
			return 0;
		}
	}
	if (t->cnt >= INT32_MAX ||
	    array__reserve((void **)&t->links, &t->cap, t->cnt + 1, sizeof(*t->links)))
		return -ENOMEM;
	t->links[t->cnt] = *l;
	id_index__set(&t->idx, i, h, (uint32_t)t->cnt);
	*out = (uint32_t)t->cnt++;
	return 0;
}

uint32_t otlp_links__of_labels(struct otlp_links *t, const struct profile *p, uint32_t labels,
			       int *err)
{
	const char *trace = NULL, *span = NULL;
	struct profile_label label;
	struct otlp_link l;
	uint32_t i, id = 0;

	for (i = 0; i < PROFILE_MAX_LABELS && profile__label(p, labels, i, &label); i++) {
		if (!strcmp(label.key, TRACE_LABEL_TRACE))
			trace = label.value;
		else if (!strcmp(label.key, TRACE_LABEL_SPAN))
			span = label.value;
	}
	if (*err || !trace_label__parse(trace, l.trace_id, sizeof(l.trace_id)) ||
	    !trace_label__parse(span, l.span_id, sizeof(l.span_id)))
		return 0;
	if (links__add(t, &l, &id))
		*err = -ENOMEM;
	return id;
}

bool otlp_links__covers(uint32_t link, const char *key)
{
	return link && trace_label__is_key(key);
}

void otlp_links__write(const struct otlp_links *t, struct pb_buf *out, uint32_t field)
{
	static const struct otlp_link zero;
	size_t i, mark;

	for (i = 0; i < (t->cnt ? t->cnt : 1); i++) {
		const struct otlp_link *l = t->cnt ? &t->links[i] : &zero;

		pb_buf__begin(out, field, &mark);
		/* entry 0 is the empty Link{} (its fields absent): what the Collector's pdata
		 * writes and sig-profiling's profcheck compares with (docs: OTLP.md, "Link zero
		 * value, a conflict"), not the 16 + 8 zero bytes the proto's comment suggests
		 */
		if (i) {
			pb_buf__bytes(out, LINK_TRACE_ID, l->trace_id, sizeof(l->trace_id));
			pb_buf__bytes(out, LINK_SPAN_ID, l->span_id, sizeof(l->span_id));
		}
		pb_buf__end(out, mark);
	}
}

void otlp_links__free(struct otlp_links *t)
{
	if (!t)
		return;
	free(t->links);
	id_index__free(&t->idx);
	memset(t, 0, sizeof(*t));
}
