/* Allocator probes bound to each process of a command's tree: see alloc_procs.h. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "base/log.h"
#include "sampler/alloc_procs.h"
#include "sampler/alloc_targets.h"
#include "sampler/link_reaper.h"
#include "sampler/mem_alloc.h"

struct alloc_proc {
	pid_t pid;       /* 0: a free slot */
	uint64_t probed; /* the targets (bits of alloc_procs.known) its probes are on */
	struct bpf_link **links;
	size_t link_cnt, link_cap;
};

struct alloc_procs {
	struct sampler_bpf *skel;
	struct alloc_targets known; /* every allocator file found in the tree, for every process */
	struct alloc_proc procs[ALLOC_PROCS_CAP];
	struct alloc_procs_stats stats;
	struct link_reaper *reaper; /* an exited process's probes go there: no wait here */
};

struct alloc_procs *alloc_procs__new(struct sampler_bpf *skel)
{
	struct alloc_procs *ap = calloc(1, sizeof(*ap));

	if (!ap)
		return NULL;
	ap->skel = skel;
	ap->reaper = link_reaper__new(); /* NULL: links destroyed in place */
	return ap;
}

static void proc_release(struct alloc_procs *ap, struct alloc_proc *p)
{
	link_reaper__give(ap->reaper, p->links, p->link_cnt);
	free(p->links);
	memset(p, 0, sizeof(*p));
}

void alloc_procs__free(struct alloc_procs *ap)
{
	size_t i;

	if (!ap)
		return;
	for (i = 0; i < ALLOC_PROCS_CAP; i++)
		proc_release(ap, &ap->procs[i]);
	link_reaper__free(ap->reaper);
	free(ap);
}

static struct alloc_proc *find(struct alloc_procs *ap, pid_t pid)
{
	size_t i;

	for (i = 0; i < ALLOC_PROCS_CAP; i++)
		if (ap->procs[i].pid == pid)
			return &ap->procs[i];
	return NULL;
}

/* A slot for pid (found or new), or NULL: the table full (counted). */
static struct alloc_proc *slot_for(struct alloc_procs *ap, pid_t pid)
{
	struct alloc_proc *p = find(ap, pid);

	if (!p && (p = find(ap, 0)))
		p->pid = pid;
	if (!p && !ap->stats.full++)
		pr_warn("--alloc: more than %d processes of the command at once: the others' "
			"allocations are not seen (counted)\n",
			ALLOC_PROCS_CAP);
	return p;
}

/* Probes on the targets in want that p has none on yet. 0, or -ESRCH (the process is gone:
 * counted, its slot released), or another -errno (counted, logged once).
 */
static int probe(struct alloc_procs *ap, struct alloc_proc *p, uint64_t want, bool say)
{
	bool first = !p->probed;
	size_t i;
	int err = 0;

	want &= ~p->probed;
	for (i = 0; !err && i < ap->known.cnt && i < 64; i++) {
		if (!(want & (1ULL << i)))
			continue;
		err = mem_alloc__attach_target(ap->skel, &ap->known.t[i], p->pid, say, &p->links,
					       &p->link_cnt, &p->link_cap);
		if (!err)
			p->probed |= 1ULL << i;
	}
	if (err && kill(p->pid, 0) && errno == ESRCH) {
		ap->stats.gone++;
		proc_release(ap, p);
		return -ESRCH;
	}
	if (err && !ap->stats.failed++)
		pr_warn("--alloc: cannot attach the allocator probes of process %d: %s (counted)\n",
			(int)p->pid, strerror(-err));
	if (!err && first)
		ap->stats.probed++;
	return err;
}

int alloc_procs__command(struct alloc_procs *ap, pid_t pid, char *const *argv)
{
	const struct alloc_target *owner;
	struct alloc_proc *p;
	uint64_t all;

	/* it runs our image until its exec: our libc, an allocator preloaded in us */
	alloc_targets__add_pid(&ap->known, 0, false, NULL);
	alloc_targets__add_command(&ap->known, argv);
	owner = alloc_targets__malloc_owner(&ap->known);
	if (owner && ap->known.any_malloc_seen)
		pr_info("allocations: the command: malloc served by %s\n", owner->path);
	else
		pr_warn("--alloc: the command: no file defines malloc (a static or stripped "
			"allocator has no symbols to probe): its malloc calls are not seen\n");
	if (!ap->known.cnt) {
		pr_err("--alloc: no allocator with symbols in the processes to profile\n");
		return -ENOENT;
	}
	all = ap->known.cnt >= 64 ? ~0ULL : (1ULL << ap->known.cnt) - 1;
	p = slot_for(ap, pid);
	if (!p)
		return -ENOSPC;
	return probe(ap, p, all, true);
}

void alloc_procs__forked(struct alloc_procs *ap, pid_t pid, pid_t parent, uint64_t time_ns)
{
	struct alloc_proc *from = find(ap, parent), *p;
	uint64_t want = from ? from->probed : 0;
	struct timespec now;
	uint64_t delay;

	if (!pid || !(p = slot_for(ap, pid)))
		return;
	/* a parent we hold no probes for (the table was full): its files from its maps */
	if (!want && alloc_targets__add_pid(&ap->known, pid, false, &want) < 0) {
		ap->stats.gone++;
		p->pid = 0;
		return;
	}
	if (probe(ap, p, want, false) == -ESRCH)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	delay = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec - time_ns;
	if (delay > 1ULL << 62)
		delay = 0; /* a clock from before the record: no delay to tell */
	ap->stats.forked_late++;
	ap->stats.delay_ns_sum += delay;
	if (delay > ap->stats.delay_ns_max)
		ap->stats.delay_ns_max = delay;
}

void alloc_procs__mapped(struct alloc_procs *ap, pid_t pid)
{
	struct alloc_proc *p = find(ap, pid);
	uint64_t maps = 0, fresh;

	if (!pid || !p)
		return;
	if (alloc_targets__add_pid(&ap->known, pid, false, &maps) < 0)
		return; /* gone: its exit comes */
	fresh = maps & ~p->probed;
	if (!fresh)
		return;
	ap->stats.files_late += (uint64_t)__builtin_popcountll(fresh);
	probe(ap, p, fresh, false);
}

void alloc_procs__exited(struct alloc_procs *ap, pid_t pid)
{
	struct alloc_proc *p = pid ? find(ap, pid) : NULL;

	if (p)
		proc_release(ap, p);
}

const struct alloc_procs_stats *alloc_procs__stats(const struct alloc_procs *ap)
{
	return &ap->stats;
}
