/* pprof -> profile. See pprof_import.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/pprof_read.h"
#include "profile/profile.h"
#include "store/pprof_import.h"

#define IMPORT_MAX_LINES 256

static int value_index(const struct pprof_profile *pp, const char *type, const char *unit)
{
	size_t i;

	for (i = 0; i < pp->sample_type_cnt; i++)
		if (!strcmp(pprof_profile__string(pp, pp->sample_types[i].type), type) &&
		    !strcmp(pprof_profile__string(pp, pp->sample_types[i].unit), unit))
			return (int)i;
	return -1;
}

static const char *str_or_null(const struct pprof_profile *pp, int64_t idx)
{
	const char *s = pprof_profile__string(pp, idx);

	return s[0] ? s : NULL;
}

/* Profile frame id of pprof location id; 0 with *err set on failure. */
static uint32_t import_location(const struct pprof_profile *pp, struct profile *p, uint64_t id,
				uint32_t *fids, int *err)
{
	const struct pprof_location *loc = pprof_profile__location(pp, id);
	const struct pprof_mapping *m;
	struct profile_line lines[IMPORT_MAX_LINES];
	struct profile_frame f = { 0 };
	size_t i;
	uint32_t fid;

	if (!loc || loc->line_cnt > IMPORT_MAX_LINES) {
		*err = -EBADMSG;
		return 0;
	}
	if (fids[loc - pp->locations]) /* imported already: its names hashed once */
		return fids[loc - pp->locations];
	for (i = 0; i < loc->line_cnt; i++) {
		const struct pprof_function *fn =
			pprof_profile__function(pp, loc->lines[i].function_id);

		lines[i] = (struct profile_line){
			fn ? pprof_profile__string(pp, fn->name) : NULL,
			fn ? str_or_null(pp, fn->filename) : NULL,
			loc->lines[i].line > 0 && loc->lines[i].line <= UINT32_MAX
				? (uint32_t)loc->lines[i].line
				: 0,
			loc->lines[i].column > 0 && loc->lines[i].column <= UINT32_MAX
				? (uint32_t)loc->lines[i].column
				: 0,
		};
	}
	f.lines = lines;
	f.line_cnt = (uint32_t)loc->line_cnt;
	f.address = loc->address;
	m = pprof_profile__mapping(pp, loc->mapping_id);
	if (m && !strcmp(pprof_profile__string(pp, m->filename), "[kernel.kallsyms]")) {
		f.kind = FRAME_KERNEL;
	} else if (m) {
		struct profile_mapping pm = {
			.path = pprof_profile__string(pp, m->filename),
			.build_id = str_or_null(pp, m->build_id),
			.start = m->memory_start,
			.limit = m->memory_limit,
			.file_offset = m->file_offset,
		};

		f.kind = FRAME_NATIVE;
		f.mapping = profile__add_mapping(p, &pm);
		if (!f.mapping) {
			*err = -ENOMEM;
			return 0;
		}
	} else if (f.line_cnt == 1 && lines[0].function && lines[0].function[0] == '[' &&
		   !lines[0].file) {
		f.kind = FRAME_ERROR;
	} else {
		f.kind = FRAME_RUNTIME;
	}
	fid = profile__add_frame(p, &f);
	if (!fid)
		*err = errno == EINVAL ? -EBADMSG : -ENOMEM;
	fids[loc - pp->locations] = fid;
	return fid;
}

static int import_sample(const struct pprof_profile *pp, struct profile *p,
			 const struct pprof_sample *s, int count_idx, uint64_t divisor,
			 uint32_t *frames, uint32_t *fids)
{
	struct profile_label labels[PROFILE_MAX_LABELS];
	struct profile_sample ps = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < s->location_cnt && !err; i++)
		frames[i] = import_location(pp, p, s->location_ids[i], fids, &err);
	if (err)
		return err;
	ps.frames = frames;
	ps.frame_cnt = (uint32_t)s->location_cnt;
	if (s->values[count_idx] <= 0)
		return 0;
	ps.count = (uint64_t)s->values[count_idx] / divisor;
	if (!ps.count)
		ps.count = 1;
	for (i = 0; i < s->label_cnt; i++) {
		const struct pprof_label *l = &s->labels[i];
		const char *key = pprof_profile__string(pp, l->key);

		if (!strcmp(key, "pid"))
			ps.pid = (uint32_t)l->num;
		else if (!strcmp(key, "tid"))
			ps.tid = (uint32_t)l->num;
		else if (!strcmp(key, "comm"))
			ps.comm = pprof_profile__string(pp, l->str);
		else if (!strcmp(key, "thread_comm"))
			ps.thread_comm = pprof_profile__string(pp, l->str);
		else if (l->str && ps.label_cnt < PROFILE_MAX_LABELS)
			labels[ps.label_cnt++] =
				(struct profile_label){ key, pprof_profile__string(pp, l->str) };
		else if (l->str)
			return -EBADMSG;
	}
	ps.labels = labels;
	return profile__add_sample(p, &ps);
}

int pprof_import(const struct pprof_profile *pp, struct profile **out)
{
	struct profile_opts po = { .period_ns = pp->period > 0 ? (uint64_t)pp->period : 0 };
	int count_idx = value_index(pp, "samples", "count");
	uint64_t divisor = 1;
	uint32_t *frames = NULL, *fids = NULL;
	struct profile *p;
	size_t i, max_frames = 1;
	int err = 0;

	*out = NULL;
	if (count_idx < 0) {
		count_idx = value_index(pp, "cpu", "nanoseconds");
		if (count_idx < 0 || pp->period <= 0)
			return -EBADMSG;
		divisor = (uint64_t)pp->period;
	}
	if (!po.period_ns)
		po.period_ns = 1000000000ULL / 19;
	po.start_time_ns = pp->time_nanos > 0 ? (uint64_t)pp->time_nanos : 0;
	for (i = 0; i < pp->sample_cnt; i++)
		if (pp->samples[i].location_cnt > max_frames)
			max_frames = pp->samples[i].location_cnt;
	p = profile__new(&po);
	frames = calloc(max_frames, sizeof(*frames));
	fids = calloc(pp->location_cnt ? pp->location_cnt : 1, sizeof(*fids));
	if (!p || !frames || !fids) {
		err = -ENOMEM;
		goto out;
	}
	if (pp->duration_nanos > 0)
		profile__set_end_time(p, po.start_time_ns + (uint64_t)pp->duration_nanos);
	else
		profile__set_end_time(p, po.start_time_ns);
	for (i = 0; i < pp->sample_cnt && !err; i++)
		err = import_sample(pp, p, &pp->samples[i], count_idx, divisor, frames, fids);
out:
	free(frames);
	free(fids);
	if (err)
		profile__free(p);
	else
		*out = p;
	return err;
}
