/* Allocation sampling setup: configuration before load, uprobes on the chosen libc files. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "abi.h"
#include "base/array.h"
#include "base/log.h"
#include "sampler/alloc_targets.h"
#include "sampler/mem_alloc.h"
#include "sampler.skel.h"

static const char *const fn_names[ALLOC_FN_CNT] = {
	[ALLOC_MALLOC] = "malloc",
	[ALLOC_CALLOC] = "calloc",
	[ALLOC_REALLOC] = "realloc",
	[ALLOC_POSIX_MEMALIGN] = "posix_memalign",
	[ALLOC_ALIGNED_ALLOC] = "aligned_alloc",
	[ALLOC_MEMALIGN] = "memalign",
	[ALLOC_VALLOC] = "valloc",
	[ALLOC_MALLOCX] = "mallocx",
	[ALLOC_RALLOCX] = "rallocx",
	[ALLOC_NEW] = "operator new",
	[ALLOC_NEW_ARRAY] = "operator new[]",
	[ALLOC_PY_MALLOC] = "PyObject_Malloc",
	[ALLOC_PY_CALLOC] = "PyObject_Calloc",
	[ALLOC_PY_REALLOC] = "PyObject_Realloc",
	[ALLOC_PYMEM_MALLOC] = "PyMem_Malloc",
	[ALLOC_PYMEM_CALLOC] = "PyMem_Calloc",
	[ALLOC_PYMEM_REALLOC] = "PyMem_Realloc",
};

const char *alloc_fn__name(uint32_t fn)
{
	return fn < ALLOC_FN_CNT && fn_names[fn] ? fn_names[fn] : "alloc";
}

size_t mem_alloc__ringbuf_bytes(bool enable)
{
	return enable ? (size_t)4 << 20 : 0;
}

int mem_alloc__parse_rate(const char *arg, uint64_t *rate)
{
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	*rate = strtoull(arg, &end, 10);
	return errno || *end || !*rate || *rate > (1ULL << 30) ? -EINVAL : 0;
}

void mem_alloc__weights(uint64_t size, uint64_t rate, uint64_t *objects, uint64_t *bytes)
{
	double p = rate ? -expm1(-(double)size / (double)rate) : 1.0;
	double scale = p > 0 ? 1.0 / p : 1.0;

	*objects = (uint64_t)llround(scale);
	*bytes = (uint64_t)llround(scale * (double)size);
}

int mem_alloc__configure(struct sampler_bpf *skel, bool enable, uint64_t rate)
{
	struct bpf_program *progs[] = { skel->progs.on_malloc,        skel->progs.on_calloc,
					skel->progs.on_realloc,       skel->progs.on_posix_memalign,
					skel->progs.on_aligned_alloc, skel->progs.on_memalign,
					skel->progs.on_libc_free,     skel->progs.on_alloc_return };
	double sum = 0, q[1024];
	size_t i;

	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_autoload(progs[i], enable);
	if (!enable) { /* unused maps: one entry each */
		bpf_map__set_max_entries(skel->maps.alloc_threads, 1);
		return bpf_map__set_max_entries(skel->maps.alloc_live, 1);
	}
	if (skel->rodata->sampler_cfg.tail_calls) {
		pr_err("--alloc needs bpf_loop (Linux 5.17): this kernel has the tail-call "
		       "unwinder only\n");
		return -ENOTSUP;
	}
	skel->rodata->sampler_cfg.alloc_rate = rate ? rate : MEM_ALLOC_DEFAULT_RATE;
	/* -ln(u) at the middle of 1024 even steps of u, scaled so that their mean is exactly 1:
	 * the intervals' mean is the rate.
	 */
	for (i = 0; i < 1024; i++) {
		q[i] = -log(((double)i + 0.5) / 1024.0);
		sum += q[i];
	}
	for (i = 0; i < 1024; i++)
		skel->rodata->alloc_exp_q16[i] = (uint32_t)llround(q[i] * 1024.0 / sum * 65536.0);
	return 0;
}

int mem_alloc__attach_target(struct sampler_bpf *skel, const struct alloc_target *t, pid_t pid,
			     bool say, struct bpf_link ***links, size_t *cnt, size_t *cap)
{
	struct bpf_program *entry[] = {
		[ALLOC_PROG_MALLOC] = skel->progs.on_malloc,
		[ALLOC_PROG_CALLOC] = skel->progs.on_calloc,
		[ALLOC_PROG_REALLOC] = skel->progs.on_realloc,
		[ALLOC_PROG_POSIX_MEMALIGN] = skel->progs.on_posix_memalign,
		[ALLOC_PROG_ALIGNED] = skel->progs.on_aligned_alloc,
		[ALLOC_PROG_FREE] = skel->progs.on_libc_free,
	};
	size_t i, probes = 0;
	int pass, err;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < alloc_probe_cnt; i++) {
			const struct alloc_probe *p = &alloc_probes[i];
			bool ret = pass == 0;
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = p->name, .retprobe = ret,
				    .bpf_cookie = p->fn);
			struct bpf_link *l;

			if (!(t->mask & (1ULL << i)) || (ret && p->prog == ALLOC_PROG_FREE))
				continue;
			if (array__reserve((void **)links, cap, *cnt + 1, sizeof(**links)))
				return -ENOMEM;
			l = bpf_program__attach_uprobe_opts(ret ? skel->progs.on_alloc_return
								: entry[p->prog],
							    pid, t->path, 0, &opts);
			if (!l) {
				err = -errno;
				if (say)
					pr_err("cannot attach a uprobe to %s in %s: %s\n", p->name,
					       t->path, strerror(-err));
				return err;
			}
			(*links)[(*cnt)++] = l;
			probes += !ret;
		}
	}
	if (!say)
		pr_debug("allocations: %zu uprobes on %s in process %d\n", probes, t->path,
			 (int)pid);
	else if (pid > 0)
		pr_info("allocations: %zu uprobes on %s in process %d\n", probes, t->path,
			(int)pid);
	else
		pr_info("allocations: %zu uprobes on %s\n", probes, t->path);
	return 0;
}

static void say_owner(const struct alloc_targets *ts, const char *who)
{
	const struct alloc_target *o = alloc_targets__malloc_owner(ts);

	if (o && ts->any_malloc_seen)
		pr_info("allocations: %s: malloc served by %s\n", who, o->path);
	if (!ts->any_malloc_seen)
		pr_warn("--alloc: %s: no file defines malloc (a static or stripped allocator has no "
			"symbols to probe): its malloc calls are not seen\n",
			who);
}

int mem_alloc__attach(struct sampler_bpf *skel, const pid_t *pids, size_t pid_cnt, bool all,
		      char *const *command, struct bpf_link ***links, size_t *link_cnt)
{
	struct alloc_targets *ts = calloc(1, sizeof(*ts));
	size_t i, j, cap = 0, probed = 0;
	char who[64];
	int err = 0;

	*links = NULL;
	*link_cnt = 0;
	if (!ts)
		return -ENOMEM;
	if (all) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
				alloc_targets__add_pid(ts, (pid_t)strtol(e->d_name, NULL, 10),
						       false, NULL);
		if (d)
			closedir(d);
	} else if (pid_cnt) { /* -p: each process's own probes; no other process traps */
		for (i = 0; !err && i < pid_cnt; i++) {
			memset(ts, 0, sizeof(*ts));
			snprintf(who, sizeof(who), "process %d", (int)pids[i]);
			if (alloc_targets__add_pid(ts, pids[i], true, NULL) < 0 || !ts->cnt) {
				pr_warn("--alloc: process %d maps no allocator with symbols: not "
					"probed\n",
					(int)pids[i]);
				continue;
			}
			say_owner(ts, who);
			for (j = 0; !err && j < ts->cnt; j++)
				err = mem_alloc__attach_target(skel, &ts->t[j], pids[i], true,
							       links, link_cnt, &cap);
			probed++;
		}
		if (!err && !probed) {
			pr_err("--alloc: none of the processes maps an allocator with symbols\n");
			err = -ENOENT;
		}
		goto cleanup;
	} else {
		/* our libc, an allocator preloaded in us */
		alloc_targets__add_pid(ts, 0, false, NULL);
		if (command)
			alloc_targets__add_command(ts, command);
		say_owner(ts, command ? "the command" : "stackscope");
	}
	if (!ts->cnt) {
		pr_err("--alloc: no allocator with symbols in the processes to profile\n");
		err = -ENOENT;
	}
	if (ts->dropped)
		pr_warn("--alloc: %zu more allocator files not probed (at most %d)\n", ts->dropped,
			ALLOC_TARGETS_CAP);
	for (i = 0; !err && i < ts->cnt; i++)
		err = mem_alloc__attach_target(skel, &ts->t[i], -1, true, links, link_cnt, &cap);
cleanup:
	free(ts);
	return err;
}
