/* The part of the runtime interface (interp.h) every runtime would otherwise write itself: its
 * state, per-file and per-process state made and freed, its counters, its marker frames.
 * Invariants: attach generations are unique over the program's life (one counter for every
 * runtime), so a cache entry of an earlier attach is never taken for one of a later; a
 * marker's text lives in one buffer here until the next marker. Not thread-safe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"
#include "proc/executable.h"

static uint32_t attach_gen;
static char marker_text[128]; /* the last marker frame's text */
/* ... made of this runtime's name and this reason (a copy; marker_rt NULL: none) */
static const struct interp_runtime *marker_rt;
static char marker_reason[96];

void *interp_runtime__new(const struct interp_runtime *rt)
{
	void *state = calloc(1, rt->state_sz ? rt->state_sz : 1);
	int err;

	if (!state)
		return NULL;
	if (rt->init && (err = rt->init(state))) {
		interp_runtime__free(rt, state);
		errno = -err;
		return NULL;
	}
	return state;
}

void interp_runtime__free(const struct interp_runtime *rt, void *state)
{
	if (!state)
		return;
	if (rt->fini)
		rt->fini(state);
	free(state);
}

int interp_runtime__file_detect(const struct interp_runtime *rt, void *state,
				const struct executable *exe, void **file_state,
				struct interp_file *bpf)
{
	struct interp_file_base *f;
	int err;

	*file_state = NULL;
	if (rt->file_state_sz < sizeof(*f))
		return -EINVAL;
	f = calloc(1, rt->file_state_sz);
	if (!f || !(f->path = strdup(exe->path))) {
		free(f);
		return -ENOMEM;
	}
	err = rt->file_detect(state, exe, f, bpf);
	if (err) {
		interp_runtime__file_free(rt, state, f);
		return err;
	}
	*file_state = f;
	return 0;
}

void interp_runtime__file_free(const struct interp_runtime *rt, void *state, void *file_state)
{
	struct interp_file_base *f = file_state;

	if (!f)
		return;
	if (rt->file_free)
		rt->file_free(state, f);
	free(f->path);
	free(f);
}

int interp_runtime__proc_attach(const struct interp_runtime *rt, void *state, pid_t pid,
				void *file_state, uint64_t bias, uint64_t now_ns, void **proc_state,
				struct interp_proc *bpf)
{
	struct interp_proc_base *p = NULL;
	int err;

	*proc_state = NULL;
	if (rt->proc_state_sz) {
		if (rt->proc_state_sz < sizeof(*p))
			return -EINVAL;
		p = calloc(1, rt->proc_state_sz);
		if (!p)
			return -ENOMEM;
		p->pid = pid;
		p->gen = ++attach_gen;
	}
	err = rt->proc_attach(state, file_state, bias, now_ns, p, bpf);
	if (err) {
		interp_runtime__proc_free(rt, state, p);
		return err;
	}
	*proc_state = p;
	return 0;
}

int interp_runtime__proc_tick(const struct interp_runtime *rt, void *state, void *proc_state,
			      uint64_t now_ns)
{
	return rt->proc_tick ? rt->proc_tick(state, proc_state, now_ns) : 0;
}

void interp_runtime__proc_free(const struct interp_runtime *rt, void *state, void *proc_state)
{
	if (!proc_state)
		return;
	if (rt->proc_free)
		rt->proc_free(state, proc_state);
	free(proc_state);
}

void interp_runtime__stats(const struct interp_runtime *rt, const void *state, uint64_t *out)
{
	memcpy(out, (const uint8_t *)state + rt->stats_off, rt->stat_cnt * sizeof(*out));
}

void interp_runtime__symbolize(const struct interp_runtime *rt, void *state, void *proc_state,
			       pid_t pid, const struct user_frame *uf, struct interp_symbol *out)
{
	if (uf->addr && !proc_state && rt->proc_state_sz)
		interp__marker(out, "unknown process"); /* no state to read its memory with */
	else if (rt->symbolize)
		rt->symbolize(state, proc_state, pid, uf, out);
	else
		interp__marker(out, "?");
	if (out->marker && out->function != marker_text) {
		/* a run of one marker (every frame of a process over its read budget) is
		 * formatted once
		 */
		if (rt != marker_rt || strcmp(out->function, marker_reason)) {
			snprintf(marker_text, sizeof(marker_text), "[%s: %s]", rt->name,
				 out->function);
			marker_rt = (size_t)snprintf(marker_reason, sizeof(marker_reason), "%s",
						     out->function) < sizeof(marker_reason)
					    ? rt
					    : NULL;
		}
		out->function = marker_text;
	}
}

void interp__code_marker(struct interp_symbol *out, const struct interp_marker_text *table,
			 size_t n, uint64_t code)
{
	size_t i;

	for (i = 0; i < n && table[i].code != code; i++)
		;
	interp__marker(out, i < n ? table[i].text : "?");
}
