/* The runtime fold of a profile's stacks. See runtime_fold.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/runtime_fold.h"

int runtime_fold__parse(const char *arg, bool *fold)
{
	if (!strcmp(arg, "runtime"))
		*fold = true;
	else if (!strcmp(arg, "none"))
		*fold = false;
	else
		return -EINVAL;
	return 0;
}

static bool same_runtime(const struct profile_frame *a, const struct profile_frame *b)
{
	return a->runtime == b->runtime ||
	       (a->runtime && b->runtime && !strcmp(a->runtime, b->runtime));
}

/* Writes src's stack (leaf first), folded and renamed by frame_ids, to out; its length. */
static uint32_t fold_stack(const struct profile *src, const uint32_t *stack, uint32_t cnt,
			   const uint32_t *frame_ids, uint32_t *out)
{
	const struct profile_frame *below = NULL; /* the last runtime frame seen, leafwards */
	uint32_t i, j, n = 0;

	for (i = 0; i < cnt; i++) {
		const struct profile_frame *f = profile__frame(src, stack[i]);

		if (f && f->kind == FRAME_RUNTIME) {
			below = f;
		} else if (f && f->kind == FRAME_NATIVE && below) {
			/* a runtime frame of the same runtime further towards the root? */
			for (j = i + 1; j < cnt; j++) {
				const struct profile_frame *g = profile__frame(src, stack[j]);

				if (g && g->kind == FRAME_RUNTIME) {
					if (!same_runtime(g, below))
						j = cnt;
					break;
				}
			}
			if (j < cnt)
				continue;
		}
		out[n++] = frame_ids[stack[i]];
	}
	return n;
}

/* Adds src's aggregated sample a to dst with its stack folded, as one sample of its count,
 * off-CPU time and memory values. 0 or -errno.
 */
static int add_folded(struct profile *dst, const struct profile *src,
		      const struct profile_agg_sample *a, const uint32_t *frame_ids,
		      uint32_t *frames)
{
	struct profile_label labels[PROFILE_MAX_LABELS];
	struct profile_sample ps = { .frames = frames,
				     .pid = a->pid,
				     .tid = a->tid,
				     .comm = a->comm,
				     .thread_comm = a->thread_comm,
				     .count = a->count,
				     .off_cpu_ns = a->off_cpu_ns,
				     .labels = labels,
				     .mem_kind = a->mem_kind,
				     .mem_value = a->mem_value,
				     .mem_objects = a->mem_objects,
				     .mem_freed = a->mem_freed,
				     .mem_freed_objects = a->mem_freed_objects,
				     .mem_carried = a->mem_carried,
				     .mem_carried_objects = a->mem_carried_objects };
	const uint32_t *stack;
	uint32_t cnt;

	stack = profile__stack(src, a->stack, &cnt);
	ps.frame_cnt = fold_stack(src, stack, cnt, frame_ids, frames);
	while (ps.label_cnt < PROFILE_MAX_LABELS &&
	       profile__label(src, a->labels, ps.label_cnt, &labels[ps.label_cnt]))
		ps.label_cnt++;
	return profile__add_sample(dst, &ps);
}

struct profile *runtime_fold__copy(const struct profile *src)
{
	struct profile_opts opts = {
		.period_ns = profile__period_ns(src),
		.start_time_ns = profile__start_time_ns(src),
		.timestamps_cap = 0,
		.off_cpu = profile__has_off_cpu(src),
		.no_cpu = !profile__has_cpu(src),
		.mem_growth = profile__has_mem_growth(src),
		.mem_alloc = profile__has_mem_alloc(src),
	};
	size_t mapping_cnt = profile__mapping_cnt(src), frame_cnt = profile__frame_cnt(src), i;
	uint32_t *mapping_ids = NULL, *frame_ids = NULL, *frames = NULL, longest = 0, cnt;
	struct profile *dst;
	int err = 0;

	dst = profile__new(&opts);
	if (!dst)
		return NULL;
	profile__set_end_time(dst, profile__end_time_ns(src));
	for (i = 1; i <= profile__stack_cnt(src); i++)
		if (profile__stack(src, (uint32_t)i, &cnt) && cnt > longest)
			longest = cnt;
	mapping_ids = calloc(mapping_cnt + 1, sizeof(*mapping_ids));
	frame_ids = calloc(frame_cnt + 1, sizeof(*frame_ids));
	frames = calloc((size_t)longest + 1, sizeof(*frames));
	if (!mapping_ids || !frame_ids || !frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 1; i <= mapping_cnt && !err; i++)
		if (!(mapping_ids[i] =
			      profile__add_mapping(dst, profile__mapping(src, (uint32_t)i))))
			err = -ENOMEM;
	for (i = 1; i <= frame_cnt && !err; i++) {
		struct profile_frame f = *profile__frame(src, (uint32_t)i);

		f.mapping = f.mapping ? mapping_ids[f.mapping] : 0;
		if (!(frame_ids[i] = profile__add_frame(dst, &f)))
			err = -ENOMEM;
	}
	for (i = 0; i < profile__sample_cnt(src) && !err; i++)
		err = add_folded(dst, src, profile__sample(src, i), frame_ids, frames);
cleanup:
	free(mapping_ids);
	free(frame_ids);
	free(frames);
	if (err) {
		profile__free(dst);
		errno = -err;
		return NULL;
	}
	return dst;
}
