/* The sliding window of `stackscope top` (see window.h): a ring of profiles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/id_index.h"
#include "profile/profile.h"
#include "top/window.h"

struct top_window {
	struct profile **slots; /* ring: slots[(first + i) % cap], i < cnt */
	size_t cap, first, cnt;
};

struct top_window *top_window__new(size_t slot_cap)
{
	struct top_window *w;

	if (!slot_cap) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->slots = calloc(slot_cap, sizeof(*w->slots));
	if (!w->slots) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->cap = slot_cap;
	return w;
}

void top_window__free(struct top_window *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->cnt; i++)
		profile__free(w->slots[(w->first + i) % w->cap]);
	free(w->slots);
	free(w);
}

void top_window__push(struct top_window *w, struct profile *p)
{
	if (!p)
		return;
	if (w->cnt == w->cap) {
		profile__free(w->slots[w->first]);
		w->slots[w->first] = p;
		w->first = (w->first + 1) % w->cap;
		return;
	}
	w->slots[(w->first + w->cnt) % w->cap] = p;
	w->cnt++;
}

size_t top_window__slot_cnt(const struct top_window *w)
{
	return w->cnt;
}

const struct profile *top_window__slot(const struct top_window *w, size_t i)
{
	return i < w->cnt ? w->slots[(w->first + i) % w->cap] : NULL;
}

double top_window__seconds(const struct top_window *w)
{
	uint64_t start, end;

	if (!w->cnt)
		return 0;
	start = profile__start_time_ns(top_window__slot(w, 0));
	end = profile__end_time_ns(top_window__slot(w, w->cnt - 1));
	return end > start ? (double)(end - start) / 1e9 : 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

bool top_filter__match(const struct top_filter *f, const struct profile_agg_sample *s)
{
	if (f->pid && s->pid != f->pid)
		return false;
	if (!f->text[0])
		return true;
	if (all_digits(f->text))
		return strtoul(f->text, NULL, 10) == s->pid;
	return (s->comm && strstr(s->comm, f->text)) ||
	       (s->thread_comm && strstr(s->thread_comm, f->text));
}

size_t top_stack__names(const struct profile *p, uint32_t stack, const char **names,
			uint32_t *frames, size_t cap)
{
	const uint32_t *ids;
	uint32_t frame_cnt, i;
	size_t n = 0;

	ids = profile__stack(p, stack, &frame_cnt);
	for (i = 0; ids && i < frame_cnt && n < cap; i++) {
		const struct profile_frame *f = profile__frame(p, ids[i]);
		size_t line_cnt = f && f->line_cnt ? f->line_cnt : 1, l;

		for (l = 0; l < line_cnt && n < cap; l++) {
			const char *name = profile__frame_name(p, ids[i], l);

			if (!name)
				break;
			if (frames)
				frames[n] = ids[i];
			names[n++] = name;
		}
	}
	return n;
}

const char *top_frame__where(const struct profile *p, uint32_t frame_id)
{
	const struct profile_frame *f = profile__frame(p, frame_id);
	const struct profile_mapping *m;
	const char *slash;

	if (!f)
		return "";
	switch (f->kind) {
	case FRAME_KERNEL:
		return "[kernel]";
	case FRAME_RUNTIME:
		return f->runtime ? f->runtime : "";
	case FRAME_NATIVE:
		m = profile__mapping(p, f->mapping);
		if (!m || !m->path)
			return "";
		slash = strrchr(m->path, '/');
		return slash ? slash + 1 : m->path;
	default:
		return "";
	}
}

uint64_t top_name__hash(const char *s)
{
	uint64_t h = fnv64(s, strlen(s), FNV64_INIT);

	return h ? h : 1;
}
