/* The runtime registry: runs every runtime of INTERP_RUNTIMES (bpf/abi.h) over the mapped files
 * and the processes, owns their per-file and per-process state and the BPF map writes. See
 * interp.h.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "base/log.h"
#include "base/u64_map.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"

/* The runtimes: the lines of INTERP_RUNTIMES (bpf/abi.h), in its order. */
#define RUNTIME_EXTERN(kind, p, name, file) extern const struct interp_runtime name##_runtime;
#define RUNTIME_ENTRY(kind, p, name, file) &name##_runtime,
#define RUNTIME_KIND(kind, p, name, file) FRAME_KIND_##kind,
INTERP_RUNTIMES(RUNTIME_EXTERN)
static const struct interp_runtime *const runtimes[] = { INTERP_RUNTIMES(RUNTIME_ENTRY) };
static const uint8_t runtime_kinds[] = { INTERP_RUNTIMES(RUNTIME_KIND) };
#define RUNTIME_CNT (sizeof(runtimes) / sizeof(runtimes[0]))

struct interp_file_entry {
	size_t rt; /* index in runtimes[] */
	void *state;
	struct interp_file bpf;
};

enum proc_status {
	PROC_ATTACHED = 0,
	PROC_REJECTED, /* the runtime's check failed: no eBPF entry, not attached again */
	PROC_EXITED,   /* state kept until exited_ns + INTERP_EXITED_GRACE_NS */
};

struct interp_proc_entry {
	pid_t pid;
	size_t rt;
	uint64_t file_id;
	uint64_t bias;
	void *state;
	enum proc_status status;
	uint64_t exited_ns;
	uint64_t attached_ns;
	bool in_bits;                                      /* counted in proc_bit_users */
	struct interp_proc bpf;                            /* as written to "interp_procs" */
	struct interp_code_range code[INTERP_CODE_RANGES]; /* its code ranges (proc_refresh) */
};

struct interp_registry {
	int files_fd, procs_fd, code_fd, file_bits_fd, proc_bits_fd;
	struct interp_bits file_bits, proc_bits; /* as written to "interp_*_bits" */
	uint16_t proc_bit_users[INTERP_BITS];    /* attached processes per bit of proc_bits */
	void *rt_state[RUNTIME_CNT];
	struct interp_runtime_stats stats[RUNTIME_CNT];
	struct u64_map files;       /* file_id -> struct interp_file_entry */
	struct u64_map procs;       /* proc_key(pid, rt) -> struct interp_proc_entry */
	uint64_t settling_until_ns; /* a process attached INTERP_SETTLE_NS before this */
};

static uint64_t proc_key(pid_t pid, size_t rt)
{
	return (uint64_t)(uint32_t)pid << 8 | (rt + 1);
}

struct interp_registry *interp_registry__new(int files_fd, int procs_fd)
{
	struct interp_registry *reg = calloc(1, sizeof(*reg));
	size_t i;

	if (!reg)
		return NULL;
	reg->files_fd = files_fd;
	reg->procs_fd = procs_fd;
	reg->code_fd = -1;
	reg->file_bits_fd = -1;
	reg->proc_bits_fd = -1;
	for (i = 0; i < RUNTIME_CNT; i++) {
		/* its descriptor names the frame kind of its line */
		assert(runtimes[i]->frame_kind == runtime_kinds[i]);
		reg->stats[i].rt = runtimes[i];
		reg->rt_state[i] = interp_runtime__new(runtimes[i]);
		if (!reg->rt_state[i]) {
			interp_registry__free(reg);
			errno = ENOMEM;
			return NULL;
		}
	}
	return reg;
}

static void proc_entry__free(struct interp_registry *reg, struct interp_proc_entry *pe)
{
	interp_runtime__proc_free(runtimes[pe->rt], reg->rt_state[pe->rt], pe->state);
	free(pe);
}

void interp_registry__free(struct interp_registry *reg)
{
	size_t it = 0, i;
	uint64_t key;
	void *v;

	if (!reg)
		return;
	while (u64_map__next(&reg->procs, &it, &key, &v))
		proc_entry__free(reg, v);
	it = 0;
	while (u64_map__next(&reg->files, &it, &key, &v)) {
		struct interp_file_entry *fe = v;

		interp_runtime__file_free(runtimes[fe->rt], reg->rt_state[fe->rt], fe->state);
		free(fe);
	}
	for (i = 0; i < RUNTIME_CNT; i++)
		interp_runtime__free(runtimes[i], reg->rt_state[i]);
	u64_map__free(&reg->procs);
	u64_map__free(&reg->files);
	free(reg);
}

/* ---- BPF maps ---- */

static void bpf_set_bits(int fd, const struct interp_bits *bits, const char *name)
{
	uint32_t zero = 0;

	if (fd >= 0 && bpf_map_update_elem(fd, &zero, bits, BPF_ANY))
		pr_warn("%s update failed: %s\n", name, strerror(errno));
}

static void bpf_set_file(struct interp_registry *reg, uint64_t file_id, const struct interp_file *v)
{
	__u64 *w = &reg->file_bits.w[INTERP_BIT_WORD(file_id)];

	/* The bit first: eBPF looks the file up only once it is set. */
	if (!(*w & INTERP_BIT_MASK(file_id))) {
		*w |= INTERP_BIT_MASK(file_id);
		bpf_set_bits(reg->file_bits_fd, &reg->file_bits, "interp_file_bits");
	}
	if (reg->files_fd >= 0 && bpf_map_update_elem(reg->files_fd, &file_id, v, BPF_ANY))
		pr_warn("interp_files update failed: %s\n", strerror(errno));
}

static void bpf_set_proc(struct interp_registry *reg, struct interp_proc_entry *pe,
			 const struct interp_proc *v)
{
	struct interp_proc_key key = { .pid = (uint32_t)pe->pid,
				       .kind = runtimes[pe->rt]->frame_kind };
	uint32_t bit = (uint32_t)pe->pid % INTERP_BITS;

	if (!pe->in_bits) {
		pe->in_bits = true;
		if (!reg->proc_bit_users[bit]++) {
			reg->proc_bits.w[INTERP_BIT_WORD(bit)] |= INTERP_BIT_MASK(bit);
			bpf_set_bits(reg->proc_bits_fd, &reg->proc_bits, "interp_proc_bits");
		}
	}
	if (reg->procs_fd >= 0 && bpf_map_update_elem(reg->procs_fd, &key, v, BPF_ANY))
		pr_debug("%s: pid %d: interp_procs update failed: %s\n", runtimes[pe->rt]->name,
			 (int)pe->pid, strerror(errno));
}

static void bpf_drop_proc(struct interp_registry *reg, struct interp_proc_entry *pe)
{
	struct interp_proc_key key = { .pid = (uint32_t)pe->pid,
				       .kind = runtimes[pe->rt]->frame_kind };
	uint32_t bit = (uint32_t)pe->pid % INTERP_BITS;

	if (reg->procs_fd >= 0)
		bpf_map_delete_elem(reg->procs_fd, &key);
	if (pe->in_bits) {
		pe->in_bits = false;
		if (!--reg->proc_bit_users[bit]) {
			reg->proc_bits.w[INTERP_BIT_WORD(bit)] &= ~INTERP_BIT_MASK(bit);
			bpf_set_bits(reg->proc_bits_fd, &reg->proc_bits, "interp_proc_bits");
		}
	}
}

void interp_registry__set_code_map(struct interp_registry *reg, int code_fd)
{
	reg->code_fd = code_fd;
}

void interp_registry__set_bits_maps(struct interp_registry *reg, int file_bits_fd, int proc_bits_fd)
{
	reg->file_bits_fd = file_bits_fd;
	reg->proc_bits_fd = proc_bits_fd;
}

/* Rewrite pid's "interp_code" entry from the code ranges of its attached runtimes but `skip`
 * (being detached; NULL: none): the first INTERP_CODE_RANGES of them, the rest counted.
 */
static void bpf_set_code(struct interp_registry *reg, pid_t pid,
			 const struct interp_proc_entry *skip)
{
	struct interp_code code = { 0 };
	uint32_t key = (uint32_t)pid;
	size_t r, i, n = 0;

	if (reg->code_fd < 0)
		return;
	for (r = 0; r < RUNTIME_CNT; r++) {
		struct interp_proc_entry *pe = u64_map__get(&reg->procs, proc_key(pid, r));

		if (!pe || pe == skip || pe->status != PROC_ATTACHED)
			continue;
		for (i = 0; i < INTERP_CODE_RANGES; i++) {
			if (pe->code[i].start >= pe->code[i].end)
				continue;
			if (n == INTERP_CODE_RANGES) {
				reg->stats[r].code_ranges_dropped++;
				continue;
			}
			code.r[n] = pe->code[i];
			code.r[n++].runtime = runtimes[r]->frame_kind;
		}
	}
	if (!n)
		bpf_map_delete_elem(reg->code_fd, &key);
	else if (bpf_map_update_elem(reg->code_fd, &key, &code, BPF_ANY))
		pr_debug("pid %d: interp_code update failed: %s\n", (int)pid, strerror(errno));
}

/* ---- files ---- */

bool interp_registry__file_loaded(struct interp_registry *reg, const struct executable *exe)
{
	struct interp_file_entry *fe = u64_map__get(&reg->files, exe->file_id);
	size_t i;

	if (fe) {
		bpf_set_file(reg, exe->file_id, &fe->bpf);
		return true;
	}
	if (exe->kind != EXECUTABLE_FILE || reg->files.cnt >= INTERP_FILE_CAP)
		return false;
	fe = calloc(1, sizeof(*fe));
	if (!fe)
		return false;
	for (i = 0; i < RUNTIME_CNT; i++) {
		memset(&fe->bpf, 0, sizeof(fe->bpf));
		if (!interp_runtime__file_detect(runtimes[i], reg->rt_state[i], exe, &fe->state,
						 &fe->bpf))
			break;
	}
	if (i == RUNTIME_CNT) {
		free(fe);
		return false;
	}
	fe->rt = i;
	fe->bpf.runtime = runtimes[i]->frame_kind;
	if (u64_map__set(&reg->files, exe->file_id, fe)) {
		interp_runtime__file_free(runtimes[i], reg->rt_state[i], fe->state);
		free(fe);
		return false;
	}
	reg->stats[i].files++;
	if (!fe->bpf.supported) {
		reg->stats[i].files_unsupported++;
		pr_info("%s: %s: version %u.%u not supported: native frames only\n",
			runtimes[i]->name, exe->path, fe->bpf.major, fe->bpf.minor);
	}
	bpf_set_file(reg, exe->file_id, &fe->bpf);
	return true;
}

void interp_registry__file_unloaded(struct interp_registry *reg, const struct executable *exe)
{
	if (reg->files_fd >= 0 && u64_map__get(&reg->files, exe->file_id))
		bpf_map_delete_elem(reg->files_fd, &exe->file_id);
}

/* ---- processes ---- */

static void proc_detach(struct interp_registry *reg, struct interp_proc_entry *pe)
{
	if (pe->status == PROC_ATTACHED) {
		bpf_drop_proc(reg, pe);
		bpf_set_code(reg, pe->pid, pe);
	}
}

/* The runtime's late state (proc_refresh): 0 keep, < 0 reject. */
static int proc_refresh(struct interp_registry *reg, struct interp_proc_entry *pe, uint64_t now_ns)
{
	const struct interp_runtime *rt = runtimes[pe->rt];
	int ret;

	if (!rt->proc_refresh)
		return 0;
	ret = rt->proc_refresh(reg->rt_state[pe->rt], pe->state, now_ns, &pe->bpf, pe->code);
	if (ret > 0) {
		bpf_set_proc(reg, pe, &pe->bpf);
		bpf_set_code(reg, pe->pid, NULL);
	}
	return ret < 0 ? ret : 0;
}

static void proc_reject(struct interp_registry *reg, struct interp_proc_entry *pe)
{
	proc_detach(reg, pe);
	pe->status = PROC_REJECTED;
	reg->stats[pe->rt].procs_rejected++;
}

static void proc_remove(struct interp_registry *reg, struct interp_proc_entry *pe)
{
	proc_detach(reg, pe);
	u64_map__del(&reg->procs, proc_key(pe->pid, pe->rt));
	proc_entry__free(reg, pe);
}

/* Process p maps interpreter file fe at bias: attach (again) unless it already is. */
static void proc_attach(struct interp_registry *reg, const struct process *p, uint64_t file_id,
			struct interp_file_entry *fe, uint64_t bias, uint64_t now_ns)
{
	const struct interp_runtime *rt = runtimes[fe->rt];
	uint64_t key = proc_key(p->pid, fe->rt);
	struct interp_proc_entry *pe = u64_map__get(&reg->procs, key);
	struct interp_proc bpf = { .file_id = file_id };
	void *state = NULL;

	if (pe && pe->file_id == file_id && pe->bias == bias && pe->status != PROC_EXITED) {
		/* The same image: attached (a rescan, e.g. after a pc eBPF could not place, is the
		 * moment to look for state that appeared since: proc_refresh), or rejected for good.
		 */
		if (pe->status == PROC_ATTACHED && proc_refresh(reg, pe, now_ns) < 0)
			proc_reject(reg, pe);
		return;
	}
	if (pe)
		proc_remove(reg, pe);
	if (!fe->bpf.supported || reg->procs.cnt >= INTERP_PROC_CAP)
		return;
	if (interp_runtime__proc_attach(rt, reg->rt_state[fe->rt], p->pid, fe->state, bias, now_ns,
					&state, &bpf))
		return;
	pe = calloc(1, sizeof(*pe));
	if (!pe || u64_map__set(&reg->procs, key, pe)) {
		free(pe);
		interp_runtime__proc_free(rt, reg->rt_state[fe->rt], state);
		return;
	}
	*pe = (struct interp_proc_entry){ .pid = p->pid,
					  .rt = fe->rt,
					  .file_id = file_id,
					  .bias = bias,
					  .state = state,
					  .bpf = bpf,
					  .attached_ns = now_ns };
	reg->stats[fe->rt].procs_attached++;
	/* Only a runtime with state to look for after the attach settles: Go's processes (a
	 * build, a test run: one every second or so) kept the session polling at 10 ms for
	 * nothing.
	 */
	if ((rt->proc_tick || rt->proc_refresh) &&
	    now_ns + INTERP_SETTLE_NS > reg->settling_until_ns)
		reg->settling_until_ns = now_ns + INTERP_SETTLE_NS;
	bpf_set_proc(reg, pe, &bpf);
	if (interp_runtime__proc_tick(rt, reg->rt_state[fe->rt], state, now_ns) < 0 ||
	    proc_refresh(reg, pe, now_ns) < 0)
		proc_reject(reg, pe);
}

void interp_registry__process_scanned(struct interp_registry *reg, const struct process *p,
				      uint64_t now_ns)
{
	bool mapped[RUNTIME_CNT] = { false };
	size_t i, r;

	for (i = 0; i < p->map_cnt; i++) {
		struct interp_file_entry *fe;

		if (!p->maps[i].exe)
			continue;
		fe = u64_map__get(&reg->files, p->maps[i].exe->file_id);
		if (!fe || mapped[fe->rt])
			continue;
		mapped[fe->rt] = true;
		proc_attach(reg, p, p->maps[i].exe->file_id, fe, p->maps[i].bias, now_ns);
	}
	/* A runtime no longer mapped (dlclose): detached. */
	for (r = 0; r < RUNTIME_CNT; r++) {
		struct interp_proc_entry *pe = u64_map__get(&reg->procs, proc_key(p->pid, r));

		if (pe && !mapped[r])
			proc_remove(reg, pe);
	}
}

void interp_registry__process_exec(struct interp_registry *reg, pid_t pid)
{
	size_t r;

	/* A new image: what was attached described the old one (its samples, all before the
	 * exec record, are symbolized already).
	 */
	for (r = 0; r < RUNTIME_CNT; r++) {
		struct interp_proc_entry *pe = u64_map__get(&reg->procs, proc_key(pid, r));

		if (pe)
			proc_remove(reg, pe);
	}
}

void interp_registry__process_exited(struct interp_registry *reg, pid_t pid, uint64_t now_ns)
{
	size_t r;

	for (r = 0; r < RUNTIME_CNT; r++) {
		struct interp_proc_entry *pe = u64_map__get(&reg->procs, proc_key(pid, r));

		if (pe && pe->status != PROC_EXITED) {
			proc_detach(reg, pe);
			pe->status = PROC_EXITED;
			pe->exited_ns = now_ns;
		}
	}
}

bool interp_registry__settling(const struct interp_registry *reg, uint64_t now_ns)
{
	size_t it = 0;
	uint64_t key;
	void *v;

	if (now_ns >= reg->settling_until_ns)
		return false;
	/* within a second of an attach: settling while one of the processes attached since has
	 * state left to look for (a walk of the attached processes, only in that second)
	 */
	while (u64_map__next(&reg->procs, &it, &key, &v)) {
		const struct interp_proc_entry *pe = v;
		const struct interp_runtime *rt = runtimes[pe->rt];

		if (pe->status != PROC_ATTACHED || pe->attached_ns + INTERP_SETTLE_NS <= now_ns ||
		    !(rt->proc_tick || rt->proc_refresh))
			continue;
		if (!rt->proc_settled || !rt->proc_settled(pe->state))
			return true;
	}
	return false;
}

void interp_registry__tick(struct interp_registry *reg, uint64_t now_ns)
{
	struct interp_proc_entry *reap[64];
	size_t it = 0, n = 0, i;
	uint64_t key;
	void *v;

	while (u64_map__next(&reg->procs, &it, &key, &v)) {
		struct interp_proc_entry *pe = v;

		if (pe->status == PROC_EXITED) {
			if (now_ns - pe->exited_ns >= INTERP_EXITED_GRACE_NS && n < 64)
				reap[n++] = pe;
			continue;
		}
		if (pe->status == PROC_ATTACHED &&
		    (interp_runtime__proc_tick(runtimes[pe->rt], reg->rt_state[pe->rt], pe->state,
					       now_ns) < 0 ||
		     proc_refresh(reg, pe, now_ns) < 0))
			proc_reject(reg, pe);
	}
	for (i = 0; i < n; i++) {
		reg->stats[reap[i]->rt].procs_reaped++;
		proc_remove(reg, reap[i]);
	}
}

/* ---- frames ---- */

const char *interp_registry__code_name(const struct interp_registry *reg, uint64_t file_id,
				       uint64_t vaddr)
{
	const struct interp_file_entry *fe = u64_map__get(&reg->files, file_id);
	const struct interp_runtime *rt;

	if (!fe)
		return NULL;
	rt = runtimes[fe->rt];
	return rt->code_name ? rt->code_name(reg->rt_state[fe->rt], fe->state, vaddr) : NULL;
}

const struct interp_runtime *interp_registry__runtime(const struct interp_registry *reg,
						      uint8_t frame_kind)
{
	size_t i;

	(void)reg;
	for (i = 0; i < RUNTIME_CNT; i++)
		if (runtimes[i]->frame_kind == frame_kind)
			return runtimes[i];
	return NULL;
}

/* Symbolize uf; its runtime's index (RUNTIME_CNT: none), *forked: named through map_pid. */
static size_t symbolize_frame(struct interp_registry *reg, pid_t pid, pid_t map_pid,
			      const struct user_frame *uf, struct interp_symbol *out, bool *forked)
{
	struct interp_proc_entry *pe = NULL;
	size_t r;

	*forked = false;
	for (r = 0; r < RUNTIME_CNT && runtimes[r]->frame_kind != uf->kind; r++)
		;
	if (r == RUNTIME_CNT) {
		*out = (struct interp_symbol){ .function = "[unknown runtime]", .marker = true };
		return r;
	}
	/* markers (no address) too: a runtime may name one from its process (V8's stubs) */
	pe = u64_map__get(&reg->procs, proc_key(pid, r));
	if (!pe && map_pid > 0 && map_pid != pid) {
		pe = u64_map__get(&reg->procs, proc_key(map_pid, r));
		*forked = pe && uf->addr;
	}
	interp_runtime__symbolize(runtimes[r], reg->rt_state[r], pe ? pe->state : NULL, pid, uf,
				  out);
	return r;
}

void interp_registry__symbolize(struct interp_registry *reg, pid_t pid, pid_t map_pid,
				const struct user_frame *uf, struct interp_symbol *out)
{
	bool forked;
	size_t r = symbolize_frame(reg, pid, map_pid, uf, out, &forked);

	if (r == RUNTIME_CNT)
		return;
	reg->stats[r].forked_frames += forked;
	if (out->marker)
		reg->stats[r].markers++;
	else
		reg->stats[r].frames++;
}

void interp_registry__prefetch(struct interp_registry *reg, pid_t pid, pid_t map_pid,
			       const struct user_frame *uf)
{
	struct interp_symbol sym;
	bool forked;

	symbolize_frame(reg, pid, map_pid, uf, &sym, &forked);
}

size_t interp_registry__stats(struct interp_registry *reg, const uint64_t *bpf,
			      struct interp_runtime_stats *out, size_t cap)
{
	size_t i, n = RUNTIME_CNT < cap ? RUNTIME_CNT : cap;

	for (i = 0; i < n; i++) {
		const struct interp_runtime *rt = runtimes[i];

		out[i] = reg->stats[i];
		if (bpf)
			memcpy(out[i].bpf, bpf + (size_t)rt->frame_kind * INTERP_COUNTER_MAX,
			       sizeof(out[i].bpf));
		interp_runtime__stats(rt, reg->rt_state[i], out[i].own);
	}
	return n;
}
