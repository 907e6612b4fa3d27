/* Process tracker: /proc scans -> exec mappings -> BPF LPM entries. See process.h. */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "abi.h"
#include "base/array.h"
#include "base/log.h"
#include "base/u64_map.h"
#include "proc/executable.h"
#include "proc/maps.h"
#include "proc/process.h"

/* After exec, one more scan once the dynamic loader is likely done (its mmap calls are also
 * reported one by one when the syscall tracepoints are available).
 */
#define RESCAN_AFTER_EXEC_NS (50 * 1000 * 1000ULL)

/* process_table__refresh()'s interval doubles this many times at most. */
#define REFRESH_BACKOFF_MAX 3

/* Containers by cgroup id, so an exec in a known cgroup reads no /proc/PID/cgroup. */
#define CGROUP_CACHE_MAX 4096
/* Processes with a rescan pending, listed so that a due rescan is found without a walk over
 * every process (exited ones included: thousands under churn); past this many the next due
 * tick walks them all once more.
 */
#define PENDING_MAX 4096

struct process_table {
	struct u64_map by_pid;  /* pid + 1 -> struct process */
	struct u64_map cgroups; /* cgroup id -> struct container_info (malloc'ed) */
	size_t cgroup_cnt;
	struct exe_registry *reg;
	int mappings_fd;
	bool no_batch; /* the kernel has no batch operations on the LPM map */
	int new_mappings_fd;
	int epoch_fd;            /* "maps_epoch" (-1: none) */
	uint64_t next_rescan_ns; /* no process's rescan_at_ns is earlier (0: none pending) */
	/* Every process with a rescan_at_ns, unless pending_lost (a pid may be listed twice,
	 * or be listed with no rescan left: dropped at the next tick).
	 */
	pid_t *pending;
	size_t pending_cnt, pending_cap;
	bool pending_lost;
	struct process_stats stats;
	struct process_table_ops ops;
	uint64_t scan_ctx_addr; /* what the /proc scan being installed found (scan_ctx_set) */
	bool scan_ctx_set;
	struct view_memo *memo; /* process_table__memo_views() */
};

/* One read of a process's "new_mappings" account, reused while the memo is on: a deferred
 * replay checks every frame of its sample against it (a 1.3 KiB map lookup each before).
 */
struct view_memo {
	bool on;
	pid_t pid;         /* whose account nm is (0: none read) */
	uint64_t view_seq; /* that process's view when it was read */
	int err;           /* 0: nm read; else the lookup failed (no account) */
	struct new_mappings nm;
};

struct process_table *process_table__new(struct exe_registry *reg, int mappings_fd,
					 int new_mappings_fd)
{
	struct process_table *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->reg = reg;
	pt->mappings_fd = mappings_fd;
	pt->new_mappings_fd = new_mappings_fd;
	pt->epoch_fd = -1;
	return pt;
}

void process_table__set_epoch_fd(struct process_table *pt, int epoch_fd)
{
	pt->epoch_fd = epoch_fd;
}

/* Schedule p's rescan at at_ns (process_table__tick() looks only once one is due). */
static void rescan_at(struct process_table *pt, struct process *p, uint64_t at_ns)
{
	if (!p->rescan_at_ns) {
		if (array__reserve_bounded((void **)&pt->pending, &pt->pending_cap,
					   pt->pending_cnt + 1, sizeof(*pt->pending), 64,
					   PENDING_MAX))
			pt->pending_lost = true;
		else
			pt->pending[pt->pending_cnt++] = p->pid;
	}
	p->rescan_at_ns = at_ns;
	if (!pt->next_rescan_ns || at_ns < pt->next_rescan_ns)
		pt->next_rescan_ns = at_ns;
}

void process_table__set_ops(struct process_table *pt, const struct process_table_ops *ops)
{
	pt->ops = *ops;
}

static void process__free(struct process *p)
{
	if (!p)
		return;
	free(p->maps);
	free(p->bpf_keys);
	free(p->hint);
	free(p);
}

static void cgroups__clear(struct process_table *pt)
{
	u64_map__free_values(&pt->cgroups, free);
	memset(&pt->cgroups, 0, sizeof(pt->cgroups));
	pt->cgroup_cnt = 0;
}

void process_table__free(struct process_table *pt)
{
	size_t it = 0;
	uint64_t key;
	void *v;

	if (!pt)
		return;
	while (u64_map__next(&pt->by_pid, &it, &key, &v))
		process__free(v);
	u64_map__free(&pt->by_pid);
	cgroups__clear(pt);
	free(pt->pending);
	free(pt->memo);
	free(pt);
}

void process_table__memo_views(struct process_table *pt, bool on)
{
	if (on && !pt->memo)
		pt->memo = calloc(1, sizeof(*pt->memo)); /* none: each check reads, as before */
	if (!pt->memo)
		return;
	pt->memo->on = on;
	pt->memo->pid = 0;
}

struct process *process_table__find(const struct process_table *pt, pid_t pid)
{
	return u64_map__get(&pt->by_pid, (uint64_t)pid + 1);
}

static void read_comm(pid_t pid, char comm[16])
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n <= 0)
		return;
	if (comm[n - 1] == '\n')
		n--;
	comm[n] = '\0';
}

static void read_exe(pid_t pid, char *out, size_t cap)
{
	static const char deleted[] = " (deleted)";
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, out, cap - 1);
	if (n < 0)
		n = 0;
	out[n] = '\0';
	if ((size_t)n > strlen(deleted) && !strcmp(out + n - strlen(deleted), deleted))
		out[n - strlen(deleted)] = '\0';
}

/* Aligned power-of-two blocks covering [start, end): the LPM prefixes of one mapping. */
static int add_blocks(pid_t pid, uint64_t start, uint64_t end, struct mapping_key **keys,
		      size_t *cnt, size_t *cap)
{
	while (start < end) {
		int bits = start ? __builtin_ctzll(start) : 63;
		struct mapping_key *k;

		while (bits > 0 && (bits >= 64 || start + (1ULL << bits) > end ||
				    start + (1ULL << bits) < start))
			bits--;
		if (array__reserve_bounded((void **)keys, cap, *cnt + 1, sizeof(**keys), 64,
					   SIZE_MAX / 2))
			return -ENOMEM;
		k = &(*keys)[(*cnt)++];
		k->prefixlen = 32 + 64 - (uint32_t)bits;
		k->pid = htobe32((uint32_t)pid);
		k->addr = htobe64(start);
		start += 1ULL << bits;
	}
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct mapping_key));
}

static bool same_mapping(const struct exec_mapping *a, const struct exec_mapping *b)
{
	return a->start == b->start && a->end == b->end && a->bias == b->bias && a->exe == b->exe;
}

/* Was m already in the BPF map with the same value (an identical mapping in old[])? */
static bool mapping_unchanged(const struct exec_mapping *m, const struct exec_mapping *old,
			      size_t old_cnt)
{
	size_t lo = 0, hi = old_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (old[mid].start < m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < old_cnt && same_mapping(&old[lo], m);
}

/* Write keys[0..cnt) (one value each) into the LPM map in one bpf() call where the kernel
 * has batch operations for it, else one call per key. Returns how many were written; a key
 * the map refuses (full) ends the write.
 */
/* A batch operation the map's type lacks: EINVAL, ENOTSUP, or the kernel's own ENOTSUPP (524),
 * which is what 5.10 returns for an LPM trie (only hash and array maps had batch operations).
 */
static bool batch_unsupported(int err)
{
	return err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP || err == 524;
}

static size_t update_keys(struct process_table *pt, const struct mapping_key *keys,
			  const struct mapping_info *vals, size_t cnt)
{
	__u32 n = (__u32)cnt;
	size_t i;

	if (!cnt)
		return 0;
	if (!pt->no_batch) {
		if (!bpf_map_update_batch(pt->mappings_fd, keys, vals, &n, NULL))
			return cnt;
		if (!batch_unsupported(errno))
			return n; /* n: how many went in before the failure */
		pt->no_batch = true;
	}
	for (i = 0; i < cnt; i++)
		if (bpf_map_update_elem(pt->mappings_fd, &keys[i], &vals[i], BPF_ANY))
			return i;
	return cnt;
}

static void delete_keys(struct process_table *pt, const struct mapping_key *keys, size_t cnt)
{
	__u32 n = (__u32)cnt;
	size_t i;

	if (!cnt)
		return;
	if (!pt->no_batch) {
		/* Stops at the first key that is not there (ENOENT): the rest one by one. */
		if (!bpf_map_delete_batch(pt->mappings_fd, keys, &n, NULL))
			return;
		if (batch_unsupported(errno)) {
			pt->no_batch = true;
			n = 0;
		}
	} else {
		n = 0;
	}
	for (i = n; i < cnt; i++)
		bpf_map_delete_elem(pt->mappings_fd, &keys[i]);
}

/* The frame memo's answers (bpf/sampler.bpf.c) may no longer hold: "maps_epoch" + 1. After the
 * entries changed: a sample in between remembers under the old epoch, never an old answer under
 * the new one.
 */
static void bump_maps_epoch(struct process_table *pt)
{
	uint32_t zero = 0;
	uint64_t epoch = 0;

	if (pt->epoch_fd < 0)
		return;
	if (bpf_map_lookup_elem(pt->epoch_fd, &zero, &epoch))
		epoch = 0;
	epoch++;
	if (bpf_map_update_elem(pt->epoch_fd, &zero, &epoch, BPF_ANY))
		pt->stats.bpf_insert_failures++;
}

/* Make the BPF entries of p match p->maps: insert the keys of new or changed mappings (old[]
 * is what was inserted before), then delete the keys nothing covers any more. Each of the two
 * is one batch (bpf() calls dominate what churn costs).
 */
static void sync_bpf(struct process_table *pt, struct process *p, const struct exec_mapping *old,
		     size_t old_cnt, uint64_t seq)
{
	struct mapping_key *keys = NULL, *gone = NULL, marker = { 0 };
	struct mapping_info *vals = NULL;
	size_t cnt = 0, cap = 0, vcap = 0, i, written, gone_cnt = 0;
	struct mapping_key *upd = NULL;
	size_t upd_cnt = 0, upd_cap = 0, same_cnt = old_cnt;
	bool answers_changed = false; /* an entry of this live process now answers otherwise */

	if (pt->mappings_fd < 0)
		return;
	if (seq != p->bpf_seq)
		old_cnt = 0; /* entries tagged with an older seq: rewrite them all */
	p->bpf_seq = seq;
	for (i = 0; i < p->map_cnt && p->alive; i++) {
		const struct exec_mapping *m = &p->maps[i];
		struct mapping_info info = { .file_id = m->exe->file_id,
					     .bias = m->bias,
					     .start = m->start,
					     .end = m->end,
					     .seq = seq };
		size_t first = cnt, j;
		bool same;

		if (add_blocks(p->pid, m->start, m->end, &keys, &cnt, &cap))
			goto out;
		same = mapping_unchanged(m, old, same_cnt);
		if (same && old_cnt)
			continue;
		/* a block written before for another mapping: the frame memo's answers go */
		for (j = first; !same && !answers_changed && j < cnt && p->bpf_key_cnt; j++)
			answers_changed = bsearch(&keys[j], p->bpf_keys, p->bpf_key_cnt,
						  sizeof(*keys), key_cmp) != NULL;
		if (array__reserve_bounded((void **)&upd, &upd_cap, upd_cnt + cnt - first,
					   sizeof(*upd), 64, SIZE_MAX / 2) ||
		    array__reserve_bounded((void **)&vals, &vcap, upd_cnt + cnt - first,
					   sizeof(*vals), 64, SIZE_MAX / 2))
			goto out;
		for (j = first; j < cnt; j++) {
			upd[upd_cnt] = keys[j];
			vals[upd_cnt++] = info;
		}
	}
	if (p->alive) {
		/* The (pid, 0) marker says "this process is known": written last. */
		marker.prefixlen = 32 + 64;
		marker.pid = htobe32((uint32_t)p->pid);
		if (array__reserve_bounded((void **)&upd, &upd_cap, upd_cnt + 1, sizeof(*upd), 64,
					   SIZE_MAX / 2) ||
		    array__reserve_bounded((void **)&vals, &vcap, upd_cnt + 1, sizeof(*vals), 64,
					   SIZE_MAX / 2))
			goto out;
		upd[upd_cnt] = marker;
		memset(&vals[upd_cnt], 0, sizeof(*vals));
		vals[upd_cnt++].seq = seq;
	}
	written = update_keys(pt, upd, vals, upd_cnt);
	if (p->alive && written == upd_cnt)
		p->bpf_marker = true; /* written last */
	if (written < upd_cnt) {
		pt->stats.bpf_insert_failures++;
		/* Keys not written are not ours to delete later: drop them from keys[]. */
		for (i = written; i < upd_cnt; i++) {
			size_t j;

			for (j = 0; j < cnt; j++) {
				if (!memcmp(&keys[j], &upd[i], sizeof(*keys))) {
					keys[j] = keys[--cnt];
					break;
				}
			}
		}
	}
	if (cnt)
		qsort(keys, cnt, sizeof(*keys), key_cmp);
	gone = malloc((p->bpf_key_cnt + 1) * sizeof(*gone));
	if (!gone)
		goto out;
	for (i = 0; i < p->bpf_key_cnt; i++)
		if (!cnt || !bsearch(&p->bpf_keys[i], keys, cnt, sizeof(*keys), key_cmp))
			gone[gone_cnt++] = p->bpf_keys[i];
	if (!p->alive && p->bpf_marker) {
		/* The marker goes first: eBPF stops trusting the entries before they go. A
		 * process eBPF alone described (most short ones) never had one: no syscall.
		 */
		marker.prefixlen = 32 + 64;
		marker.pid = htobe32((uint32_t)p->pid);
		bpf_map_delete_elem(pt->mappings_fd, &marker);
		p->bpf_marker = false;
	}
	delete_keys(pt, gone, gone_cnt);
	/* Answers that changed for a live process (a dead one's pid took a new generation in eBPF
	 * at its exit, before it could be another's): the frame memo forgets them.
	 */
	if (p->alive && (answers_changed || gone_cnt))
		bump_maps_epoch(pt);
	free(p->bpf_keys);
	p->bpf_keys = keys;
	p->bpf_key_cnt = cnt;
	keys = NULL;
out:
	free(gone);
	free(upd);
	free(vals);
	free(keys);
}

static int map_cmp(const void *a, const void *b)
{
	const struct exec_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static struct process *get_or_add(struct process_table *pt, pid_t pid)
{
	struct process *p = process_table__find(pt, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (u64_map__set(&pt->by_pid, (uint64_t)pid + 1, p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* The container of a cgroup, from the cache or from pid's /proc/PID/cgroup (then cached). */
static void container_of_cgroup(struct process_table *pt, pid_t pid, uint64_t cgroup_id,
				struct container_info *out)
{
	struct container_info *c = cgroup_id ? u64_map__get(&pt->cgroups, cgroup_id) : NULL;

	if (c) {
		*out = *c;
		return;
	}
	memset(out, 0, sizeof(*out));
	if (container__read(pid, out) || !cgroup_id)
		return;
	if (pt->cgroup_cnt >= CGROUP_CACHE_MAX)
		cgroups__clear(pt); /* bounded: a machine churning cgroups starts over */
	c = malloc(sizeof(*c));
	if (c && !u64_map__set(&pt->cgroups, cgroup_id, c)) {
		*c = *out;
		pt->cgroup_cnt++;
	} else {
		free(c);
	}
}

/* Name, executable and container: they change only at exec (process_table__exec()), whose
 * record says most of it.
 */
static void name_process(struct process_table *pt, struct process *p)
{
	const struct exec_info *h = p->hint;
	const struct executable *exe =
		h && h->exe_file_id ? exe_registry__find(pt->reg, h->exe_file_id) : NULL;

	if (h && h->comm[0])
		memcpy(p->comm, h->comm, sizeof(p->comm));
	else
		read_comm(p->pid, p->comm);
	if (exe && exe->path)
		snprintf(p->exe_path, sizeof(p->exe_path), "%s", exe->path);
	else
		read_exe(p->pid, p->exe_path, sizeof(p->exe_path));
	container_of_cgroup(pt, p->pid, h ? h->cgroup_id : 0, &p->container);
	free(p->hint);
	p->hint = NULL;
	p->named = true;
}

/* Make xm[0..n) (owned from here) pid's mappings, as of eBPF's "new_mappings" seq; write
 * them to the LPM map unless lpm is false (then eBPF's own entries answer, and the LPM entries
 * are rewritten whole at the next write). NULL with errno on failure.
 */
static struct process *install_maps(struct process_table *pt, pid_t pid, struct exec_mapping *xm,
				    size_t n, uint64_t seq, bool lpm, uint64_t now_ns)
{
	struct exec_mapping *old_maps;
	size_t old_cnt, i;
	struct process *p = get_or_add(pt, pid);

	if (!p) {
		free(xm);
		errno = ENOMEM;
		return NULL;
	}
	if (!p->alive) {
		p->named = false; /* new, or a pid reused since the exit */
		p->refresh_idle = 0;
		p->otel_ctx_addr = 0;
	}
	if (pt->scan_ctx_set)
		p->otel_ctx_addr = pt->scan_ctx_addr;
	pt->scan_ctx_set = false;
	qsort(xm, n, sizeof(*xm), map_cmp);
	p->view_changed = !p->alive || n != p->map_cnt;
	for (i = 0; !p->view_changed && i < n; i++)
		p->view_changed = !same_mapping(&xm[i], &p->maps[i]);
	/* Reference the new mappings before dropping the old ones: no table unload in between. */
	for (i = 0; i < n; i++)
		exe_registry__ref(pt->reg, xm[i].exe);
	for (i = 0; p->alive && i < p->map_cnt; i++)
		exe_registry__unref(pt->reg, p->maps[i].exe, now_ns);
	old_maps = p->alive && !p->lpm_stale ? p->maps : NULL;
	old_cnt = old_maps ? p->map_cnt : 0;
	if (!old_maps)
		free(p->maps);
	p->maps = xm;
	p->map_cnt = n;
	p->alive = true;
	p->scanned_ns = now_ns;
	p->view_seq = seq;
	if (!p->named)
		name_process(pt, p);
	if (lpm) {
		sync_bpf(pt, p, old_maps, old_cnt, seq);
		p->lpm_stale = false;
	} else {
		p->lpm_stale = true;
	}
	free(old_maps);
	if (pt->ops.scanned)
		pt->ops.scanned(p, now_ns, pt->ops.ctx);
	return p;
}

/* The seq of pid's "new_mappings" before a scan: what eBPF entered up to now is older than (or
 * as old as) what the scan will see. 0 when eBPF entered nothing.
 */
static uint64_t new_mappings_seq(const struct process_table *pt, pid_t pid)
{
	struct new_mappings nm;
	uint32_t key = (uint32_t)pid;

	if (pt->new_mappings_fd < 0 || bpf_map_lookup_elem(pt->new_mappings_fd, &key, &nm))
		return 0;
	return nm.seq;
}

struct process *process_table__scan(struct process_table *pt, pid_t pid, uint64_t now_ns)
{
	struct proc_maps maps;
	struct exec_mapping *xm = NULL;
	struct process *p;
	size_t i, n = 0;
	uint64_t seq;
	int err;

	pt->stats.scans++;
	seq = new_mappings_seq(pt, pid);
	err = proc_maps__read_exec(pid, NULL, &maps);
	if (err) {
		pt->stats.scan_failures++;
		p = process_table__find(pt, pid);
		if (p && p->alive && err == -ESRCH)
			process_table__exit(pt, pid, now_ns);
		errno = -err;
		return NULL;
	}
	xm = calloc(maps.cnt ? maps.cnt : 1, sizeof(*xm));
	if (!xm) {
		proc_maps__free(&maps);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < maps.cnt; i++) {
		const struct proc_map *m = &maps.maps[i];
		struct executable *exe;
		uint64_t vaddr;

		if (!(m->perms & PROC_MAP_EXEC))
			continue;
		if (m->path[0] != '/' && strcmp(m->path, "[vdso]"))
			continue;
		exe = exe_registry__get(pt->reg, pid, m);
		if (!exe) {
			if (errno != ESRCH)
				pt->stats.exe_failures++;
			pr_debug("pid %d: %s: %s\n", (int)pid, m->path, strerror(errno));
			continue;
		}
		if (exe->kind == EXECUTABLE_VDSO) {
			if (executable__offset_to_vaddr(exe, 0, &vaddr))
				vaddr = 0;
		} else if (executable__offset_to_vaddr(exe, m->offset, &vaddr)) {
			pt->stats.exe_failures++;
			continue;
		}
		xm[n].start = m->start;
		xm[n].end = m->end;
		xm[n].bias = m->start - vaddr;
		xm[n].exe = exe;
		n++;
	}
	pt->scan_ctx_addr = maps.otel_ctx_start;
	proc_maps__free(&maps);
	p = process_table__find(pt, pid);
	if (!n && p && p->alive && p->map_cnt) {
		/* An exiting process has already released its address space: keep what we
		 * knew, its samples still in the ring buffer need it.
		 */
		free(xm);
		return p;
	}
	pt->scan_ctx_set = true;
	return install_maps(pt, pid, xm, n, seq, true, now_ns);
}

/* The ring slot of the entry with seq s (nm->seq - cnt < s <= nm->seq): entries are numbered
 * consecutively, the newest just before nm->next. Its own seq differs from s while it is
 * being rewritten.
 */
static const struct mapping_info *ring_entry(const struct new_mappings *nm, uint64_t s)
{
	return &nm->m[(nm->next - 1 - (nm->seq - s)) & (NEW_MAPPINGS_CAP - 1)];
}

/* Carve [start, end) out of xm[0..*n) (cap entries: room for one split) and add the mapping. */
static void overlay_mapping(struct exec_mapping *xm, size_t *n, const struct exec_mapping *m)
{
	size_t i, cnt = *n;

	for (i = 0; i < cnt; i++) {
		struct exec_mapping *o = &xm[i];

		if (o->end <= m->start || o->start >= m->end)
			continue;
		if (o->start < m->start && o->end > m->end) { /* m inside o: split it */
			xm[(*n)++] = (struct exec_mapping){ m->end, o->end, o->bias, o->exe };
			o->end = m->start;
		} else if (o->start < m->start) {
			o->end = m->start;
		} else if (o->end > m->end) {
			o->start = m->end;
		} else {
			o->start = o->end = 0; /* covered whole: dropped below */
		}
	}
	xm[(*n)++] = *m;
	for (i = cnt = 0; i < *n; i++)
		if (xm[i].end > xm[i].start)
			xm[cnt++] = xm[i];
	*n = cnt;
}

/* pid's mappings brought up to date from what eBPF entered ("new_mappings") since our last
 * view of them — the whole image when it exec'd under eBPF's watch — without reading /proc.
 * NULL (the caller scans /proc instead) unless that account is complete: every entry since
 * then still in the ring, none a hole (a file eBPF did not know, or anonymous memory over a
 * file), every file still registered. What eBPF does not see (munmap, mprotect) waits for
 * the next /proc scan; samples at an address nobody knows trigger one (trace_handler.c).
 */
static struct process *sync_from_bpf(struct process_table *pt, pid_t pid, uint64_t now_ns,
				     bool *no_entry)
{
	struct process *p = process_table__find(pt, pid);
	struct exec_mapping *xm;
	struct new_mappings nm;
	uint32_t key = (uint32_t)pid;
	uint64_t from, need, s;
	size_t n = 0;

	if (pt->new_mappings_fd < 0)
		return NULL;
	if (bpf_map_lookup_elem(pt->new_mappings_fd, &key, &nm)) {
		if (no_entry)
			*no_entry = errno == ENOENT;
		return NULL;
	}
	if (p && p->alive && nm.exec_seq <= p->view_seq) {
		/* More mappings of the address space we know (view_seq 0: scanned before eBPF
		 * started the ring, whose first seq is 1).
		 */
		from = p->view_seq ? p->view_seq : 1;
	} else if (nm.exec_seq) {
		from = nm.exec_seq; /* a new image, all of it seen by eBPF: no base */
		p = NULL;
	} else {
		return NULL;
	}
	if (nm.seq < from || nm.seq - from > nm.cnt || nm.cnt > NEW_MAPPINGS_CAP)
		return NULL; /* entries we did not apply were overwritten (or a reused pid) */
	need = nm.seq - from;
	if (!need && p)
		return p; /* nothing new */
	xm = calloc((p ? p->map_cnt : 0) + 2 * need + 1, sizeof(*xm));
	if (!xm)
		return NULL;
	if (p) {
		memcpy(xm, p->maps, p->map_cnt * sizeof(*xm));
		n = p->map_cnt;
	}
	for (s = from + 1; s <= nm.seq; s++) {
		const struct mapping_info *e = ring_entry(&nm, s);
		struct exec_mapping m = { .start = e->start, .end = e->end, .bias = e->bias };

		if (e->seq != s || !e->file_id || e->end <= e->start ||
		    !(m.exe = exe_registry__find(pt->reg, e->file_id)))
			goto scan;
		overlay_mapping(xm, &n, &m);
	}
	pt->stats.bpf_syncs++;
	/* LPM entries only once the ring could soon overwrite entries eBPF answers from. */
	return install_maps(pt, pid, xm, n, nm.seq, nm.cnt >= NEW_MAPPINGS_CAP / 2, now_ns);
scan:
	free(xm);
	return NULL;
}

/* Whether a "new_mappings" entry after seq covers addr: 1 yes (or entries since were
 * overwritten, or another image came since), 0 no, -1 eBPF keeps no account for pid.
 */
static int entered_since(const struct process_table *pt, const struct process *p, uint64_t addr,
			 uint64_t seq)
{
	struct view_memo *memo = pt->memo && pt->memo->on ? pt->memo : NULL;
	struct new_mappings own, *nm = memo ? &memo->nm : &own;
	uint32_t key = (uint32_t)p->pid;
	uint64_t s;

	if (pt->new_mappings_fd < 0)
		return -1;
	/* Entries eBPF adds after the memo's read came after both the view and the sample
	 * checked: what the sample ran is decided without them. A new view reads again.
	 */
	if (!memo || memo->pid != p->pid || memo->view_seq != p->view_seq) {
		int err = bpf_map_lookup_elem(pt->new_mappings_fd, &key, nm) ? -1 : 0;

		if (memo) {
			memo->pid = p->pid;
			memo->view_seq = p->view_seq;
			memo->err = err;
		}
		if (err)
			return -1;
	} else if (memo->err) {
		return -1;
	}
	if (nm->seq <= seq)
		return 0;
	if (nm->exec_seq > seq || nm->seq - seq > nm->cnt || nm->cnt > NEW_MAPPINGS_CAP)
		return 1;
	for (s = seq + 1; s <= nm->seq; s++) {
		const struct mapping_info *e = ring_entry(nm, s);

		if (e->seq != s || (addr >= e->start && addr < e->end))
			return 1;
	}
	return 0;
}

bool process__view_fits(const struct process_table *pt, const struct process *p, uint64_t addr,
			uint64_t sample_seq)
{
	uint64_t from = sample_seq;
	int since;

	if (!sample_seq)
		return true;
	if (p->view_seq < from)
		from = p->view_seq;
	since = entered_since(pt, p, addr, from);
	if (since < 0)
		/* No account left: the view stands unless it predates the sample, which ran
		 * after mappings the view may not show.
		 */
		return p->view_seq >= sample_seq;
	return since == 0;
}

int process_table__scan_all(struct process_table *pt, uint64_t now_ns)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int loaded = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (process_table__scan(pt, (pid_t)pid, now_ns))
			loaded++;
	}
	closedir(d);
	return loaded;
}

struct process *process_table__refresh(struct process_table *pt, pid_t pid, uint64_t now_ns,
				       uint64_t min_interval_ns)
{
	struct process *p = process_table__find(pt, pid), *q;

	if (p && (!p->alive || now_ns - p->scanned_ns < min_interval_ns << p->refresh_idle))
		return p;
	q = process_table__scan(pt, pid, now_ns);
	if (!q)
		return p;
	if (q->view_changed)
		q->refresh_idle = 0;
	else if (q->refresh_idle < REFRESH_BACKOFF_MAX)
		q->refresh_idle++;
	return q;
}

/* Gone before the reader got to it (the record did not wake it: eBPF knew every file): the
 * exec record still names it, for its samples' process attributes.
 */
static void gone_before_read(struct process_table *pt, struct process *p, uint64_t now_ns)
{
	if (p->hint)
		name_process(pt, p);
	p->rescan_at_ns = 0;
	p->rescans_left = 0;
	p->exited_ns = now_ns;
	pt->stats.gone_before_read++;
}

void process_table__exec(struct process_table *pt, pid_t pid, const struct exec_info *info,
			 uint64_t now_ns)
{
	struct process *p = process_table__find(pt, pid);
	bool no_entry = false;
	uint64_t view_seq;

	if (!p && info)
		p = get_or_add(pt, pid); /* not alive: the scan or sync below makes it so */
	if (p) {
		p->named = false;
		p->refresh_idle = 0;
		p->otel_ctx_addr = 0; /* the new image publishes its own, if any */
		free(p->hint);
		p->hint = NULL;
		if (info && (p->hint = malloc(sizeof(*p->hint))))
			*p->hint = *info;
	}
	view_seq = p && p->alive ? p->view_seq : 0;
	if ((p = sync_from_bpf(pt, pid, now_ns, &no_entry))) {
		/* The loader's mmaps are reported one by one. The view may already be of this
		 * image, taken when an earlier record of the pid was read (two execs in a row,
		 * e.g. setpriv then python, both in the ring at once): whoever dropped what they
		 * knew of the old image at this record hears of the new one again.
		 */
		if (p->view_seq == view_seq) {
			if (!p->named)
				name_process(pt, p);
			if (pt->ops.scanned)
				pt->ops.scanned(p, now_ns, pt->ops.ctx);
		}
		return;
	}
	p = process_table__find(pt, pid);
	if (no_entry && p && !p->alive && p->hint && p->hint->exe_file_id) {
		/* eBPF followed this exec (the record names its file) and keeps no account of the
		 * process any more: almost always gone, its exit record right behind this one.
		 * Decided after the drain (process_table__tick()): the exit record, if it comes,
		 * says so without a syscall; else it is scanned then.
		 */
		p->rescans_left = 2;
		rescan_at(pt, p, now_ns);
		return;
	}
	/* Most short processes are gone by the time the reader gets to their exec: a failed
	 * kill(0) is far cheaper than failing to open /proc/PID/maps (a negative dentry).
	 */
	p = kill(pid, 0) && errno == ESRCH ? NULL : process_table__scan(pt, pid, now_ns);
	if (p) {
		p->rescans_left = 1;
		rescan_at(pt, p, now_ns + RESCAN_AFTER_EXEC_NS);
		return;
	}
	p = process_table__find(pt, pid);
	if (p && !p->alive && p->hint)
		gone_before_read(pt, p, now_ns);
}

void process_table__mapped(struct process_table *pt, pid_t pid, uint64_t mapped_ns, uint64_t now_ns)
{
	struct process *p = process_table__find(pt, pid);

	/* Known process: take what eBPF entered, else rescan once after the records at hand
	 * (the dynamic loader maps several libraries in a burst; process_table__tick() runs
	 * right after the drain).
	 */
	if (p && p->alive) {
		/* Our view was read after the mapping was made (eBPF enters it before the
		 * record's time; /proc shows it by then): nothing to look up. An exec'd
		 * process's view comes from its exec record, after the loader's mmaps.
		 */
		if (mapped_ns < p->scanned_ns)
			return;
		if (p->rescan_at_ns && p->rescan_at_ns <= now_ns)
			return; /* a scan is due anyway */
		if (!sync_from_bpf(pt, pid, now_ns, NULL))
			rescan_at(pt, p, now_ns);
		return;
	}
	if (p && p->exited_ns && mapped_ns <= p->exited_ns)
		return; /* found gone after it mapped this (at its exec record): a scan fails too */
	if (p && p->rescan_at_ns)
		return; /* its exec record left it to the scan after the drain */
	process_table__scan(pt, pid, now_ns);
}

void process_table__exit(struct process_table *pt, pid_t pid, uint64_t now_ns)
{
	struct process *p = process_table__find(pt, pid);
	size_t i;

	if (p && !p->alive && p->rescan_at_ns)
		gone_before_read(pt, p, now_ns); /* its exec record waited for this */
	if (!p || !p->alive)
		return;
	for (i = 0; i < p->map_cnt; i++)
		exe_registry__unref(pt->reg, p->maps[i].exe, now_ns);
	p->alive = false;
	p->exited_ns = now_ns;
	p->rescans_left = 0;
	p->rescan_at_ns = 0;
	sync_bpf(pt, p, NULL, 0, p->bpf_seq);
	if (pt->ops.exited)
		pt->ops.exited(p, pt->ops.ctx);
}

/* The pending list made whole again from a walk over every process (it overflowed). */
static void relist_pending(struct process_table *pt)
{
	size_t it = 0;
	uint64_t key;
	void *v;

	pt->pending_cnt = 0;
	pt->pending_lost = false;
	while (u64_map__next(&pt->by_pid, &it, &key, &v)) {
		struct process *p = v;

		if (!p->rescan_at_ns)
			continue;
		if (array__reserve_bounded((void **)&pt->pending, &pt->pending_cap,
					   pt->pending_cnt + 1, sizeof(*pt->pending), 64,
					   PENDING_MAX)) {
			pt->pending_lost = true;
			return;
		}
		pt->pending[pt->pending_cnt++] = p->pid;
	}
}

void process_table__tick(struct process_table *pt, uint64_t now_ns)
{
	uint64_t next = 0;
	pid_t due[64];
	size_t n = 0, i, kept = 0;

	if (!pt->next_rescan_ns || pt->next_rescan_ns > now_ns)
		return; /* nothing due: the pending list is not even looked at */
	if (pt->pending_lost)
		relist_pending(pt);
	for (i = 0; i < pt->pending_cnt; i++) {
		pid_t pid = pt->pending[i];
		const struct process *p = process_table__find(pt, pid);

		if (!p || !p->rescan_at_ns)
			continue; /* exited, reaped, or rescanned already */
		if (p->rescan_at_ns <= now_ns && n < 64) {
			due[n++] = pid;
			continue;
		}
		if (!next || p->rescan_at_ns < next)
			next = p->rescan_at_ns;
		pt->pending[kept++] = pid;
	}
	pt->pending_cnt = kept;
	if (pt->pending_lost)
		next = now_ns; /* the walk stopped short: walk again at the next tick */
	pt->next_rescan_ns = next;
	for (i = 0; i < n; i++) {
		struct process *p = process_table__find(pt, due[i]);
		unsigned int left;
		bool exec_pending;

		if (!p || !p->rescan_at_ns || p->rescan_at_ns > now_ns)
			continue; /* listed twice (a reused pid): rescanned already */
		left = p->rescans_left;
		p->rescan_at_ns = 0;
		exec_pending = !p->alive && p->hint; /* left by its exec record */
		p = process_table__scan(pt, due[i], now_ns);
		if (!p && exec_pending) {
			/* gone, and its exit record not read (lost) */
			p = process_table__find(pt, due[i]);
			if (p && !p->alive)
				gone_before_read(pt, p, now_ns);
			continue;
		}
		if (p && left > 1) {
			p->rescans_left = left - 1;
			rescan_at(pt, p, now_ns + RESCAN_AFTER_EXEC_NS * 4);
		}
	}
}

size_t process_table__reap(struct process_table *pt, uint64_t now_ns, uint64_t grace_ns)
{
	size_t it, n, i, total = 0;
	uint64_t key, gone[256];
	void *v;

	do { /* a walk per 256 (deleting while walking would skip entries) */
		it = n = 0;
		while (n < 256 && u64_map__next(&pt->by_pid, &it, &key, &v)) {
			struct process *p = v;

			if (!p->alive && !p->rescan_at_ns && now_ns - p->exited_ns >= grace_ns)
				gone[n++] = key;
		}
		for (i = 0; i < n; i++)
			process__free(u64_map__del(&pt->by_pid, gone[i]));
		total += n;
	} while (n == 256);
	pt->stats.reaped += total;
	return total;
}

void process_table__stats(const struct process_table *pt, struct process_stats *out)
{
	size_t it = 0;
	uint64_t key;
	void *v;

	*out = pt->stats;
	out->alive = out->exited = 0;
	while (u64_map__next(&pt->by_pid, &it, &key, &v)) {
		if (((struct process *)v)->alive)
			out->alive++;
		else
			out->exited++;
	}
}

const struct exec_mapping *process__mapping_at(const struct process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->map_cnt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}
