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
#include "sampler/mem_alloc.h"
#include "sampler.skel.h"

#define MEM_ALLOC_MAX_LIBCS 64 /* distinct libc files probed (system-wide: containers) */

static const char *const fn_names[ALLOC_FN_CNT] = {
	[ALLOC_MALLOC] = "malloc",
	[ALLOC_CALLOC] = "calloc",
	[ALLOC_REALLOC] = "realloc",
	[ALLOC_POSIX_MEMALIGN] = "posix_memalign",
	[ALLOC_ALIGNED_ALLOC] = "aligned_alloc",
	[ALLOC_MEMALIGN] = "memalign",
};

const char *alloc_fn__name(uint32_t fn)
{
	return fn < ALLOC_FN_CNT && fn_names[fn] ? fn_names[fn] : "alloc";
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
	struct bpf_program *progs[] = { skel->progs.on_malloc,	      skel->progs.on_calloc,
					skel->progs.on_realloc,	      skel->progs.on_posix_memalign,
					skel->progs.on_aligned_alloc, skel->progs.on_memalign,
					skel->progs.on_libc_free,	      skel->progs.on_alloc_return };
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

/* The path (through /proc/PID/root) of the libc pid maps, into out; 0 or -ENOENT. */
static int libc_of(pid_t pid, char *out, size_t out_sz)
{
	char path[64], line[4096];
	int err = -ENOENT;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;
		size_t n;

		if (!file)
			continue;
		n = strcspn(file, "\n");
		file[n] = 0;
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "libc.so.", 8) && strncmp(base, "libc-", 5))
			continue;
		if (pid)
			n = (size_t)snprintf(out, out_sz, "/proc/%d/root%s", (int)pid, file);
		else
			n = (size_t)snprintf(out, out_sz, "%s", file);
		err = n < out_sz ? 0 : -ENAMETOOLONG;
		break;
	}
	fclose(f);
	return err;
}

struct libc_set {
	char paths[MEM_ALLOC_MAX_LIBCS][4096 + 64];
	dev_t dev[MEM_ALLOC_MAX_LIBCS];
	ino_t ino[MEM_ALLOC_MAX_LIBCS];
	size_t cnt;
	size_t dropped; /* past MEM_ALLOC_MAX_LIBCS */
};

static void libc_set__add(struct libc_set *ls, pid_t pid)
{
	char path[sizeof(ls->paths[0])];
	struct stat st;
	size_t i;

	if (libc_of(pid, path, sizeof(path)) || stat(path, &st))
		return;
	for (i = 0; i < ls->cnt; i++)
		if (ls->dev[i] == st.st_dev && ls->ino[i] == st.st_ino)
			return;
	if (ls->cnt >= MEM_ALLOC_MAX_LIBCS) {
		ls->dropped++;
		return;
	}
	memcpy(ls->paths[ls->cnt], path, sizeof(path));
	ls->dev[ls->cnt] = st.st_dev;
	ls->ino[ls->cnt++] = st.st_ino;
}

/* The probes on path, in pid's address space only (-1: every process mapping it). */
static int attach_libc(struct sampler_bpf *skel, const char *path, pid_t pid,
		       struct bpf_link ***links, size_t *cnt, size_t *cap)
{
	static const struct {
		const char *fn;
		bool ret;
	} probes[] = { { "malloc", false },	    { "malloc", true },	       { "calloc", false },
		       { "calloc", true },	    { "realloc", false },      { "realloc", true },
		       { "posix_memalign", false }, { "posix_memalign", true }, { "aligned_alloc", false },
		       { "aligned_alloc", true },   { "memalign", false },     { "memalign", true },
		       { "free", false } };
	struct bpf_program *entry[] = { skel->progs.on_malloc,	       skel->progs.on_calloc,
					skel->progs.on_realloc,	       skel->progs.on_posix_memalign,
					skel->progs.on_aligned_alloc, skel->progs.on_memalign,
					skel->progs.on_libc_free };
	size_t i;
	int err;

	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = probes[i].fn,
			    .retprobe = probes[i].ret);
		struct bpf_program *prog = probes[i].ret ? skel->progs.on_alloc_return
							 : entry[(i + 1) / 2];
		struct bpf_link *l;

		if (array__reserve((void **)links, cap, *cnt + 1, sizeof(**links)))
			return -ENOMEM;
		l = bpf_program__attach_uprobe_opts(prog, pid, path, 0, &opts);
		if (!l) {
			err = -errno;
			pr_err("cannot attach a uprobe to %s in %s: %s\n", probes[i].fn, path,
			       strerror(-err));
			return err;
		}
		(*links)[(*cnt)++] = l;
	}
	if (pid > 0)
		pr_info("allocations: uprobes on %s in process %d\n", path, (int)pid);
	else
		pr_info("allocations: uprobes on %s\n", path);
	return 0;
}

int mem_alloc__attach(struct sampler_bpf *skel, const pid_t *pids, size_t pid_cnt, bool all,
		      struct bpf_link ***links, size_t *link_cnt)
{
	struct libc_set *ls = calloc(1, sizeof(*ls));
	size_t i, cap = 0;
	int err = 0;

	*links = NULL;
	*link_cnt = 0;
	if (!ls)
		return -ENOMEM;
	if (all) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
				libc_set__add(ls, (pid_t)strtol(e->d_name, NULL, 10));
		if (d)
			closedir(d);
	} else if (pid_cnt) { /* -p: each process's own probes; no other process traps */
		char path[sizeof(ls->paths[0])];

		for (i = 0; !err && i < pid_cnt; i++) {
			if (libc_of(pids[i], path, sizeof(path))) {
				pr_warn("--alloc: process %d maps no libc: not probed\n",
					(int)pids[i]);
				continue;
			}
			err = attach_libc(skel, path, pids[i], links, link_cnt, &cap);
			ls->cnt++;
		}
		if (!err && !ls->cnt)
			err = -ENOENT;
		free(ls);
		if (err == -ENOENT)
			pr_err("--alloc: none of the processes maps a libc (a static or non-glibc "
			       "allocator is not supported yet)\n");
		return err;
	} else {
		libc_set__add(ls, 0);
	}
	if (!ls->cnt) {
		pr_err("--alloc: no libc mapped by the processes to profile (a static or "
		       "non-glibc allocator is not supported yet)\n");
		err = -ENOENT;
	}
	if (ls->dropped)
		pr_warn("--alloc: %zu more libc files not probed (at most %d)\n", ls->dropped,
			MEM_ALLOC_MAX_LIBCS);
	for (i = 0; !err && i < ls->cnt; i++)
		err = attach_libc(skel, ls->paths[i], -1, links, link_cnt, &cap);
	free(ls);
	return err;
}
