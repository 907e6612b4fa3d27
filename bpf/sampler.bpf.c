// SPDX-License-Identifier: GPL-2.0
/* The sampler: one perf cpu-clock event per CPU runs on_sample(), which captures who was
 * running (pid, tid, names, cpu, time), the kernel stack, and the user stack unwound by
 * native_unwind.h, and sends one variable-length record through the "events" ring buffer.
 * Process lifecycle tracepoints send exec/exit records and keep the pid filter current.
 *
 * Never prints: every loss is counted in the per-CPU "counters" array (enum counter).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "abi.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct sampler_config sampler_cfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by userspace before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTER_CNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, __u32);                   /* tgid */
	__type(value, __u8);
} pid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1 << 18); /* resized by userspace */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mapping_key);
	__type(value, struct mapping_info);
} mappings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, __u64);                   /* file_id */
	__type(value, struct file_info);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory only for what is used */
	__type(key, struct unwind_page_key);
	__type(value, struct unwind_page);
} unwind_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 22); /* resized by userspace */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_entry_pair);
} unwind_entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

/* Processes forked and not (yet) exec'd: child tgid -> the parent tgid at fork. Until userspace
 * has written the child's own entries into "mappings", the child shares its parent's address
 * space layout (fork copies it; vfork shares it), so its samples are resolved through the
 * parent's entries. LRU: a fork storm evicts the oldest children, which then wait for userspace
 * like any unknown process.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 15);
	__type(key, __u32);   /* child tgid */
	__type(value, __u32); /* parent tgid */
} forked SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

/* ---- the world as native_unwind.h sees it ---- */

static __always_inline int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

static __always_inline struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	struct mapping_key key = {
		.prefixlen = 32 + 64,
		.pid = bpf_htonl(pid),
		.addr = bpf_cpu_to_be64(pc),
	};

	return bpf_map_lookup_elem(&mappings, &key);
}

static __always_inline struct file_info *ss_lookup_file(__u64 file_id)
{
	return bpf_map_lookup_elem(&files, &file_id);
}

static __always_inline struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	struct unwind_page_key key = { .file_id = file_id, .page = page };

	return bpf_map_lookup_elem(&unwind_pages, &key);
}

static __always_inline struct unwind_entry *ss_lookup_entry(__u32 index)
{
	__u32 pair = index / 2;
	struct unwind_entry_pair *p = bpf_map_lookup_elem(&unwind_entries, &pair);

	return p ? &p->e[index & 1] : NULL;
}

static __always_inline struct unwind_rule *ss_lookup_rule(__u32 index)
{
	return bpf_map_lookup_elem(&unwind_rules, &index);
}

#include "native_unwind.h"

/* ---- runtimes (bpf/interp/): their maps and the hooks their walks use ---- */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64); /* file_id */
	__type(value, struct interp_file);
} interp_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct interp_proc_key);
	__type(value, struct interp_proc);
} interp_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FRAME_KIND_CNT *INTERP_COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} interp_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct interp_code);
} interp_code SEC(".maps");

static __always_inline struct interp_code *ss_interp_code(__u32 pid)
{
	return bpf_map_lookup_elem(&interp_code, &pid);
}

static __always_inline struct interp_file *ss_interp_file(__u64 file_id)
{
	return bpf_map_lookup_elem(&interp_files, &file_id);
}

static __always_inline struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime)
{
	struct interp_proc_key key = { .pid = pid, .kind = runtime };

	return bpf_map_lookup_elem(&interp_procs, &key);
}

static __always_inline void ss_interp_count(__u32 runtime, __u32 which)
{
	__u32 idx = runtime * INTERP_COUNTER_MAX + (which & (INTERP_COUNTER_MAX - 1));
	__u64 *c = bpf_map_lookup_elem(&interp_counters, &idx);

	if (c)
		*c += 1;
}

#include "interp/interp_walk.h"

struct unwind_scratch {
	struct unwind_cursor st;
	struct interp_cursor interp; /* interp/interp_walk.h */
	__u64 t0;                    /* when on_sample started (COUNTER_SAMPLE_NS) */
	__u32 chunks;                /* tail-call unwinder: runs so far */
	__u32 pad;
	struct sample_record rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_scratch);
} scratch SEC(".maps");

/* The tail-call unwinder's program (index 0), set by userspace when it is used. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unwind_progs SEC(".maps");

/* bpf_loop wants its context on the stack: it carries the per-CPU scratch pointer. */
struct unwind_loop_ctx {
	struct unwind_scratch *s;
};

static long unwind_loop_cb(__u64 i, void *ctx)
{
	struct unwind_scratch *s = ((struct unwind_loop_ctx *)ctx)->s;

	if (!s)
		return 1;
	if (!ss_interp_step(&s->st, &s->interp, s->rec.user))
		ss_unwind_step(&s->st, s->rec.user);
	return s->st.done ? 1 : 0;
}

/* ---- process filter ---- */

static __always_inline bool pid_wanted(__u32 tgid)
{
	if (sampler_cfg.filter_mode == FILTER_OFF)
		return true;
	return bpf_map_lookup_elem(&pid_filter, &tgid) != NULL;
}

/* ---- sampling ---- */

static __always_inline bool process_known(__u32 tgid)
{
	struct mapping_key marker = { .prefixlen = 32 + 64, .pid = bpf_htonl(tgid) };

	return bpf_map_lookup_elem(&mappings, &marker) != NULL;
}

/* Whose entries in "mappings" (and "interp_procs") describe the address space of tgid: its own
 * once userspace wrote them (the (tgid, 0) marker), else, for a process forked and not exec'd
 * since, its parent's (or the nearest known ancestor's, up to FORK_HOPS generations) — but only
 * while the parent that forked it is still its parent: a reparented child (its parent died, the
 * pid may be reused) gets nothing. Counted: resolved through an ancestor, or not known at all.
 */
#define FORK_HOPS 4
static __always_inline __u32 mapping_owner(struct task_struct *task, __u32 tgid)
{
	struct task_struct *cur = BPF_CORE_READ(task, group_leader);
	__u32 owner = tgid, *parent;
	int hop;

	for (hop = 0; hop < FORK_HOPS; hop++) {
		if (process_known(owner)) {
			if (hop)
				count(COUNTER_FORK_INHERITED, 1);
			return owner;
		}
		parent = bpf_map_lookup_elem(&forked, &owner);
		cur = BPF_CORE_READ(cur, real_parent);
		if (!parent || !cur || BPF_CORE_READ(cur, tgid) != *parent)
			break;
		owner = *parent;
		cur = BPF_CORE_READ(cur, group_leader);
	}
	count(COUNTER_UNKNOWN_PID, 1);
	return tgid;
}

static __always_inline void regs_from_pt_regs(struct unwind_cursor *st, struct pt_regs *r)
{
	st->regs[DWARF_RAX] = BPF_CORE_READ(r, ax);
	st->regs[DWARF_RDX] = BPF_CORE_READ(r, dx);
	st->regs[DWARF_RCX] = BPF_CORE_READ(r, cx);
	st->regs[DWARF_RBX] = BPF_CORE_READ(r, bx);
	st->regs[DWARF_RSI] = BPF_CORE_READ(r, si);
	st->regs[DWARF_RDI] = BPF_CORE_READ(r, di);
	st->regs[DWARF_RBP] = BPF_CORE_READ(r, bp);
	st->regs[DWARF_RSP] = BPF_CORE_READ(r, sp);
	st->regs[DWARF_R8] = BPF_CORE_READ(r, r8);
	st->regs[DWARF_R9] = BPF_CORE_READ(r, r9);
	st->regs[DWARF_R10] = BPF_CORE_READ(r, r10);
	st->regs[DWARF_R11] = BPF_CORE_READ(r, r11);
	st->regs[DWARF_R12] = BPF_CORE_READ(r, r12);
	st->regs[DWARF_R13] = BPF_CORE_READ(r, r13);
	st->regs[DWARF_R14] = BPF_CORE_READ(r, r14);
	st->regs[DWARF_R15] = BPF_CORE_READ(r, r15);
	st->regs[DWARF_RIP] = BPF_CORE_READ(r, ip);
}

/* The perf context can only be read directly (the verifier rewrites these loads). */
static __always_inline void regs_from_ctx(struct unwind_cursor *st, struct bpf_perf_event_data *ctx)
{
	st->regs[DWARF_RAX] = ctx->regs.ax;
	st->regs[DWARF_RDX] = ctx->regs.dx;
	st->regs[DWARF_RCX] = ctx->regs.cx;
	st->regs[DWARF_RBX] = ctx->regs.bx;
	st->regs[DWARF_RSI] = ctx->regs.si;
	st->regs[DWARF_RDI] = ctx->regs.di;
	st->regs[DWARF_RBP] = ctx->regs.bp;
	st->regs[DWARF_RSP] = ctx->regs.sp;
	st->regs[DWARF_R8] = ctx->regs.r8;
	st->regs[DWARF_R9] = ctx->regs.r9;
	st->regs[DWARF_R10] = ctx->regs.r10;
	st->regs[DWARF_R11] = ctx->regs.r11;
	st->regs[DWARF_R12] = ctx->regs.r12;
	st->regs[DWARF_R13] = ctx->regs.r13;
	st->regs[DWARF_R14] = ctx->regs.r14;
	st->regs[DWARF_R15] = ctx->regs.r15;
	st->regs[DWARF_RIP] = ctx->regs.ip;
}

/* The sample's user stack is done: send the record, count how it ended. */
static __always_inline int finish_sample(struct unwind_scratch *s)
{
	struct sample_record *rec = &s->rec;
	__u64 size;

	rec->user_frame_cnt = s->st.frame_cnt;
	rec->user_end = s->st.end;
	rec->map_pid = s->st.pid;
	rec->pad = 0;
	count(COUNTER_USER_FRAMES, s->st.frame_cnt);
	count(COUNTER_FP_FRAMES, s->st.fp_frame_cnt);
	count(COUNTER_UNWIND_END_BASE + (s->st.end < UNWIND_END_CNT ? s->st.end : 0), 1);

	size = __builtin_offsetof(struct sample_record, user) +
	       (__u64)(s->st.frame_cnt & (SS_MAX_USER_FRAMES * 2 - 1)) * sizeof(struct user_frame);
	if (size > sizeof(*rec))
		size = sizeof(*rec);
	if (bpf_ringbuf_output(&events, rec, size, BPF_RB_NO_WAKEUP))
		count(COUNTER_RINGBUF_FULL, 1);
	count(COUNTER_SAMPLE_NS, bpf_ktime_get_ns() - s->t0);
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct unwind_scratch *s;
	struct sample_record *rec;
	struct pt_regs *uregs;
	bool user_mode;
	__u64 t0;
	long n;

	if (tgid == 0) {
		count(COUNTER_IDLE, 1);
		return 0;
	}
	if (!pid_wanted(tgid)) {
		count(COUNTER_FILTERED, 1);
		return 0;
	}
	count(COUNTER_SAMPLES, 1);
	t0 = bpf_ktime_get_ns();

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	rec = &s->rec;
	rec->hdr.kind = RECORD_SAMPLE;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = tgid;
	rec->hdr.tid = tid;
	bpf_get_current_comm(rec->thread_comm, sizeof(rec->thread_comm));
	BPF_CORE_READ_STR_INTO(&rec->comm, task, group_leader, comm);

	/* The context only allows 8-byte loads; cs is the low bits of its slot. */
	user_mode = (*(__u64 *)((void *)ctx + __builtin_offsetof(struct pt_regs, cs)) & 3) == 3;
	rec->kernel_frame_cnt = 0;
	if (!user_mode) {
		n = bpf_get_stack(ctx, rec->kernel_ips, sizeof(rec->kernel_ips), 0);
		if (n < 0) {
			rec->kernel_frame_cnt = n;
			count(COUNTER_KSTACK_FAILED, 1);
		} else {
			rec->kernel_frame_cnt = n / sizeof(__u64);
			if (rec->kernel_frame_cnt >= SS_MAX_KERNEL_FRAMES)
				count(COUNTER_KSTACK_TRUNCATED, 1);
		}
	}

	__builtin_memset(&s->st, 0, sizeof(s->st));
	s->st.pid = tgid;
	/* Fresh runtime cursors; the thread's TLS base finds a runtime's thread state. */
	ss_interp_reset(&s->interp, BPF_CORE_READ(task, thread.fsbase));
	if (user_mode) {
		regs_from_ctx(&s->st, ctx);
	} else if (BPF_CORE_READ(task, mm) &&
		   !(BPF_CORE_READ(task, flags) & 0x00200000 /* PF_KTHREAD */)) {
		uregs = (struct pt_regs *)bpf_task_pt_regs(task);
		regs_from_pt_regs(&s->st, uregs);
	} else {
		s->st.done = 1;
		s->st.end = UNWIND_END_NO_USER;
	}
	s->st.regs_valid = 1;
	if (!s->st.done)
		s->st.pid = mapping_owner(task, tgid);
	s->t0 = t0;
	s->chunks = 0;
	if (!s->st.done && sampler_cfg.tail_calls) {
		bpf_tail_call(ctx, &unwind_progs, 0);
		/* no program in the array: the stack ends here, counted */
		s->st.done = 1;
		s->st.end = UNWIND_END_TRUNCATED;
	} else if (!s->st.done) {
		struct unwind_loop_ctx lc = { .s = s };

		/* Runtime steps (interp/interp_walk.h) take iterations too: each emits a frame, or
		 * skips one shim frame per native eval frame.
		 */
		bpf_loop(SS_MAX_USER_FRAMES * 2 + 1, unwind_loop_cb, &lc, 0);
	}

	return finish_sample(s);
}

/* Without bpf_loop: UNWIND_CHUNK steps per run, then a tail call into itself. */
SEC("perf_event")
int unwind_chunk(struct bpf_perf_event_data *ctx)
{
	struct unwind_scratch *s;
	__u32 zero = 0;
	int i;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	for (i = 0; i < UNWIND_CHUNK && !s->st.done; i++) {
		if (!ss_interp_step(&s->st, &s->interp, s->rec.user))
			ss_unwind_step(&s->st, s->rec.user);
	}
	if (!s->st.done && s->chunks < UNWIND_MAX_CHUNKS) {
		s->chunks++;
		bpf_tail_call(ctx, &unwind_progs, 0);
	}
	if (!s->st.done) {
		s->st.done = 1;
		s->st.end = UNWIND_END_TRUNCATED;
	}
	return finish_sample(s);
}

/* ---- process lifecycle ---- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (child->pid != ctgid)
		return 0; /* a thread: it shares its process's entries */
	if (sampler_cfg.filter_mode == FILTER_FOLLOW_CHILDREN &&
	    bpf_map_lookup_elem(&pid_filter, &ptgid))
		bpf_map_update_elem(&pid_filter, &ctgid, &one, BPF_ANY);
	if (pid_wanted(ctgid))
		bpf_map_update_elem(&forked, &ctgid, &ptgid, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct exec_record *rec;
	__u32 tgid = p->tgid;

	bpf_map_delete_elem(&forked, &tgid); /* a new address space: the parent's no longer */
	if (!pid_wanted(tgid))
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(COUNTER_EVENTS_LOST, 1);
		return 0;
	}
	rec->hdr.kind = RECORD_EXEC;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = tgid;
	rec->hdr.tid = p->pid;
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), p->comm);
	bpf_probe_read_kernel_str(rec->filename, sizeof(rec->filename),
				  BPF_CORE_READ(bprm, filename));
	/* Wake the reader now: the new process's mappings should be known before its samples. */
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct exit_record *rec;
	__u32 tgid = p->tgid;

	if (p->pid != tgid)
		return 0;
	bpf_map_delete_elem(&forked, &tgid);
	if (!pid_wanted(tgid))
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(COUNTER_EVENTS_LOST, 1);
		return 0;
	}
	rec->hdr.kind = RECORD_EXIT;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = tgid;
	rec->hdr.tid = p->pid;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Executable file mappings made by the mmap syscall (the dynamic loader, dlopen): tell
 * userspace at once, so the mapping is in "mappings" before the process runs code in it.
 * The executable itself is mapped by exec, which on_exec() reports.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* len */
} mmap_pending SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), len = ctx->args[1];
	__u32 tid = (__u32)id;

	if (!(ctx->args[2] & 4 /* PROT_EXEC */) || (long)ctx->args[4] < 0 || !pid_wanted(id >> 32))
		return 0;
	bpf_map_update_elem(&mmap_pending, &tid, &len, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int on_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), *len;
	__u32 tid = (__u32)id;
	struct mmap_record *rec;

	len = bpf_map_lookup_elem(&mmap_pending, &tid);
	if (!len)
		return 0;
	if (ctx->ret < 0 && ctx->ret >= -4095)
		goto out;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(COUNTER_EVENTS_LOST, 1);
		goto out;
	}
	rec->hdr.kind = RECORD_MMAP;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = id >> 32;
	rec->hdr.tid = tid;
	rec->addr = ctx->ret;
	rec->len = *len;
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
out:
	bpf_map_delete_elem(&mmap_pending, &tid);
	return 0;
}
