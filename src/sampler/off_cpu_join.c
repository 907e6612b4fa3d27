/* Off-CPU stacks kept per thread until their stay ends (see off_cpu_join.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "base/u64_map.h"
#include "sampler/off_cpu_join.h"

struct pending_stack {
	size_t size;
	struct sample_record rec; /* size bytes of it are valid */
};

struct off_cpu_join {
	struct u64_map by_tid; /* tid -> struct pending_stack * */
	struct off_cpu_join_stats stats;
};

struct off_cpu_join *off_cpu_join__new(void)
{
	return calloc(1, sizeof(struct off_cpu_join));
}

void off_cpu_join__free(struct off_cpu_join *j)
{
	if (!j)
		return;
	u64_map__free_values(&j->by_tid, free);
	free(j);
}

int off_cpu_join__stack(struct off_cpu_join *j, const struct sample_record *rec, size_t size)
{
	size_t head = offsetof(struct sample_record, user);
	struct pending_stack *p, *old;

	if (size < head || size > sizeof(*rec) || !rec->hdr.tid) {
		j->stats.bad_records++;
		return -EINVAL;
	}
	p = malloc(offsetof(struct pending_stack, rec) + size);
	if (!p)
		return -ENOMEM;
	p->size = size;
	memcpy(&p->rec, rec, size);
	old = u64_map__get(&j->by_tid, rec->hdr.tid);
	if (u64_map__set(&j->by_tid, rec->hdr.tid, p)) {
		free(p);
		return -ENOMEM;
	}
	if (old) {
		free(old);
		j->stats.short_stays++;
	} else {
		j->stats.pending++;
	}
	j->stats.stacks++;
	return 0;
}

struct sample_record *off_cpu_join__end(struct off_cpu_join *j, const struct off_cpu_record *r,
					size_t size, size_t *out_size)
{
	struct pending_stack *p;
	struct sample_record *rec;

	errno = 0;
	if (size < sizeof(*r) || !r->hdr.tid || !r->off_ns) {
		j->stats.bad_records++;
		return NULL;
	}
	p = u64_map__get(&j->by_tid, r->hdr.tid);
	if (!p || p->rec.hdr.time_ns != r->out_time_ns) {
		j->stats.unmatched++;
		j->stats.unmatched_ns += r->off_ns;
		return NULL;
	}
	u64_map__del(&j->by_tid, r->hdr.tid);
	j->stats.pending--;
	*out_size = p->size;
	/* the record moves to the front of its block: the caller frees it */
	rec = memmove(p, &p->rec, p->size);
	rec->off_cpu_ns = r->off_ns;
	rec->off_cpu_state = r->state;
	j->stats.joined++;
	return rec;
}

void off_cpu_join__expire(struct off_cpu_join *j, uint64_t before_ns)
{
	uint64_t tids[64], key;
	size_t it = 0, n, i;
	void *v;

	do { /* no deletions while iterating: in batches */
		for (n = 0; n < 64 && u64_map__next(&j->by_tid, &it, &key, &v);)
			if (((struct pending_stack *)v)->rec.hdr.time_ns < before_ns)
				tids[n++] = key;
		for (i = 0; i < n; i++) {
			free(u64_map__del(&j->by_tid, tids[i]));
			j->stats.pending--;
			j->stats.expired++;
		}
		it = 0;
	} while (n == 64);
}

const struct off_cpu_join_stats *off_cpu_join__stats(const struct off_cpu_join *j)
{
	return &j->stats;
}
