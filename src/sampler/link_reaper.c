/* BPF links destroyed on a thread of their own: see link_reaper.h. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "sampler/link_reaper.h"

struct link_reaper {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a link queued, or stopping */
	struct bpf_link **queue;
	size_t cnt, cap;
	bool stopping;
	pthread_t thread;
	bool started;
};

struct link_reaper *link_reaper__new(void)
{
	struct link_reaper *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->work, NULL);
	return r;
}

static void *reap(void *arg)
{
	struct link_reaper *r = arg;
	struct bpf_link *link;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->cnt && !r->stopping)
			pthread_cond_wait(&r->work, &r->lock);
		if (!r->cnt)
			break; /* stopping, nothing left */
		link = r->queue[--r->cnt];
		pthread_mutex_unlock(&r->lock);
		bpf_link__destroy(link);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* Under the lock: room for more links, and the thread to destroy them. */
static bool ready(struct link_reaper *r, size_t more)
{
	size_t cap;
	void *q;

	if (r->cnt + more > r->cap) {
		cap = r->cap ? r->cap : 16;
		while (cap < r->cnt + more)
			cap *= 2;
		q = realloc(r->queue, cap * sizeof(*r->queue));
		if (!q)
			return false;
		r->queue = q;
		r->cap = cap;
	}
	if (!r->started) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 << 10); /* a close() and libbpf's log */
		r->started = !pthread_create(&r->thread, &attr, reap, r);
		pthread_attr_destroy(&attr);
	}
	return r->started;
}

void link_reaper__give(struct link_reaper *r, struct bpf_link *const *links, size_t cnt)
{
	size_t i;

	if (!cnt)
		return;
	if (r) {
		pthread_mutex_lock(&r->lock);
		if (!r->stopping && ready(r, cnt)) {
			for (i = 0; i < cnt; i++)
				r->queue[r->cnt++] = links[i];
			pthread_cond_broadcast(&r->work);
			pthread_mutex_unlock(&r->lock);
			return;
		}
		pthread_mutex_unlock(&r->lock);
	}
	for (i = 0; i < cnt; i++)
		bpf_link__destroy(links[i]);
}

void link_reaper__free(struct link_reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->work);
	pthread_mutex_unlock(&r->lock);
	if (r->started)
		pthread_join(r->thread, NULL);
	/* the thread never started: nothing was queued; else it left nothing */
	while (r->cnt)
		bpf_link__destroy(r->queue[--r->cnt]);
	free(r->queue);
	pthread_cond_destroy(&r->work);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
