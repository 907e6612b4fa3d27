/* Allocation samples (`--alloc`): the malloc family of a libc, sampled by bytes.
 *
 * Uprobes on the entry of malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign
 * and free; uretprobes on the allocators' returns (the pointer). Loaded only with --alloc;
 * userspace attaches them to the libc files it chose (src/sampler/mem_alloc.c).
 *
 * Sampling by bytes, as tcmalloc and Go do: each thread counts down the bytes it allocates
 * ("alloc_threads": left); the allocation that crosses zero is sampled and the count starts
 * again from an exponentially distributed interval of mean sampler_cfg.alloc_rate (drawn from
 * alloc_exp_q16[], -ln(u) for 1024 even steps of u, filled by userspace). An allocation of n
 * bytes is so sampled with probability 1 - exp(-n / rate): userspace weighs it by the inverse
 * (the unbiased estimate). The entry notes a sampled call (pending); its return takes the
 * stack from the caller (the uretprobe's registers are the caller's, at the return address)
 * and sends a RECORD_SAMPLE (mem_kind MEM_SAMPLED_ALLOC, mem_weight the bytes, mem_addr the pointer).
 *
 * Sampled pointers stay in "alloc_live" (bounded: a full map is counted, that allocation is
 * never in the in-use view) until a free (or a realloc) of the same pointer in the same
 * process sends a RECORD_FREE. A free of any other pointer (unsampled, never seen, a double
 * free) costs one lookup and sends nothing. realloc(p, n) frees p at its entry (realloc(p, 0)
 * only frees); a failed realloc leaves p allocated though it is then out of the in-use view.
 *
 * One program per argument layout; which function it stands for (enum alloc_fn, the frame's
 * name) is the attach cookie, so glibc, jemalloc (mallocx, rallocx, sdallocx), tcmalloc,
 * operator new/delete and pymalloc (PyObject_Malloc, PyMem_Malloc...) share them.
 *
 * Allocators call allocators: PyObject_Malloc falls back to malloc for large sizes, often by a
 * tail jump, and PYTHONMALLOC=malloc routes every call there. A thread's outermost call is the
 * one counted: an entry at or below the stack pointer of a call still in flight (sp) is nested
 * and ignored; the return above it ends the outer call. Userspace attaches the return probes
 * of a file before its entries, so that no entry misses its return.
 *
 * Needs bpf_loop, as --faults.
 */
#ifndef STACKSCOPE_MEM_ALLOC_H
#define STACKSCOPE_MEM_ALLOC_H

#define ALLOC_EXP_STEPS 1024
const volatile __u32 alloc_exp_q16[ALLOC_EXP_STEPS];

struct alloc_thread {
	__s64 left;    /* bytes to allocate before the next sample */
	__u64 size;    /* pending: the sampled call's bytes */
	__u64 memptr;  /* pending posix_memalign: where the pointer is written */
	__u64 sp;      /* the outermost call in flight: its stack pointer at entry (0: none) */
	__u64 addr;    /* the sampled call's pointer, for alloc_sample() */
	__u32 fn;      /* pending: enum alloc_fn */
	__u32 pending; /* the call in flight was sampled */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 15); /* resized by userspace from the threads */
	__type(key, __u32);
	__type(value, struct alloc_thread);
} alloc_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for the live samples only */
	__type(key, struct alloc_key);
	__type(value, __u64); /* the allocation's size */
} alloc_live SEC(".maps");

static __always_inline __s64 alloc_next_interval(void)
{
	__u32 i = bpf_get_prandom_u32() & (ALLOC_EXP_STEPS - 1);

	return (__s64)((sampler_cfg.alloc_rate * alloc_exp_q16[i]) >> 16) + 1;
}

static __always_inline bool alloc_wanted(__u32 tgid)
{
	return tgid && tgid != sampler_cfg.self_pid && pid_wanted(tgid) &&
	       sel_wanted(tgid, false, 0);
}

/* An allocator's entry: count the bytes down, note a sampled call for its return. */
static __always_inline int alloc_enter(struct pt_regs *ctx, __u64 size, __u64 memptr)
{
	__u64 id = bpf_get_current_pid_tgid(), sp = PT_REGS_SP(ctx);
	__u32 tid = (__u32)id, fn = (__u32)bpf_get_attach_cookie(ctx);
	struct alloc_thread *t, fresh = {};

	if (!alloc_wanted(id >> 32))
		return 0;
	t = bpf_map_lookup_elem(&alloc_threads, &tid);
	if (!t) {
		fresh.left = alloc_next_interval();
		bpf_map_update_elem(&alloc_threads, &tid, &fresh, BPF_ANY);
		t = bpf_map_lookup_elem(&alloc_threads, &tid);
		if (!t)
			return 0;
	}
	if (t->sp && sp <= t->sp) { /* inside an allocator call already counted */
		count(COUNTER_ALLOC_NESTED, 1);
		return 0;
	}
	t->sp = sp;
	t->pending = 0;
	if (!size)
		return 0;
	if ((__s64)size < t->left) {
		t->left -= size;
		return 0;
	}
	t->left = alloc_next_interval();
	t->pending = 1;
	t->size = size;
	t->fn = fn;
	t->memptr = memptr;
	return 0;
}

/* The pointer p of the current process is freed: forget it if it was sampled. */
static __always_inline void alloc_forget(__u64 p)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct alloc_key key = { .tgid = id >> 32, .addr = p };
	struct free_record *rec;

	if (!p || bpf_map_delete_elem(&alloc_live, &key))
		return;
	count(COUNTER_ALLOC_FREED, 1);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(COUNTER_ALLOC_FREE_LOST, 1);
		return;
	}
	rec->hdr.kind = RECORD_FREE;
	rec->hdr.cpu = bpf_get_smp_processor_id();
	rec->hdr.time_ns = bpf_ktime_get_ns();
	rec->hdr.pid = key.tgid;
	rec->hdr.tid = (__u32)id;
	rec->addr = p;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

/* An allocator returns p (ctx: the caller's registers): 1 when the call was sampled and its
 * stack is to go out (the pointer kept in the thread's entry for alloc_sample()). A frame of
 * its own, returned from before the walk: the walk's frames (the unwinding loop's callback
 * and what it calls) need all but this one's share of the 512 bytes of stack.
 */
static __noinline int alloc_return(struct pt_regs *ctx, __u64 p)
{
	__u64 id = bpf_get_current_pid_tgid(), size;
	struct alloc_key key = { .tgid = id >> 32 };
	__u32 tid = (__u32)id, fn;
	struct alloc_thread *t;

	t = bpf_map_lookup_elem(&alloc_threads, &tid);
	/* a nested call's return lands at or below the outer call's entry */
	if (!t || !t->sp || PT_REGS_SP(ctx) <= t->sp)
		return 0;
	t->sp = 0;
	if (!t->pending)
		return 0;
	t->pending = 0;
	size = t->size;
	fn = t->fn;
	if (fn == ALLOC_POSIX_MEMALIGN) { /* returns 0, the pointer in *memptr */
		if ((__u32)p || bpf_probe_read_user(&p, sizeof(p), (void *)t->memptr))
			p = 0;
	}
	if (!p) {
		count(COUNTER_ALLOC_FAILED, 1);
		return 0;
	}
	key.addr = p;
	if (!bpf_map_lookup_elem(&alloc_live, &key)) {
		if (bpf_map_update_elem(&alloc_live, &key, &size, BPF_NOEXIST)) {
			count(COUNTER_ALLOC_LIVE_FULL, 1);
			p = 0; /* in the allocated view only */
		}
	} else {
		count(COUNTER_ALLOC_REPLACED, 1);
		bpf_map_update_elem(&alloc_live, &key, &size, BPF_ANY);
	}
	count(COUNTER_ALLOC_SAMPLED, 1);
	t->addr = p;
	return 1;
}

/* The sampled allocation alloc_return() kept: its stack and record. */
static __noinline int alloc_sample(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct unwind_scratch *s;
	struct alloc_thread *t;

	t = bpf_map_lookup_elem(&alloc_threads, &tid);
	if (!t)
		return 0;
	s = begin_sample(task, id >> 32, tid, bpf_ktime_get_ns());
	if (!s)
		return 0;
	s->rec.mem_kind = MEM_SAMPLED_ALLOC;
	s->rec.mem_weight = t->size;
	s->rec.mem_fn = t->fn;
	s->rec.mem_addr = t->addr;
	regs_from_pt_regs(&s->st, ctx);
	walk_user_stack(s, task, id >> 32);
	return finish_sample(s, false);
}

/* malloc(size) and the like: mallocx, operator new, valloc, PyObject_Malloc, PyMem_Malloc */
SEC("uprobe")
int BPF_KPROBE(on_malloc, __u64 size)
{
	return alloc_enter(ctx, size, 0);
}

/* calloc(n, size), PyObject_Calloc, PyMem_Calloc */
SEC("uprobe")
int BPF_KPROBE(on_calloc, __u64 n, __u64 size)
{
	/* calloc refuses a product past 2^64; past 2^32 each, it cannot succeed anyway */
	if ((n >> 32) || (size >> 32))
		return 0;
	return alloc_enter(ctx, n * size, 0);
}

/* realloc(p, size), rallocx, PyObject_Realloc, PyMem_Realloc */
SEC("uprobe")
int BPF_KPROBE(on_realloc, __u64 p, __u64 size)
{
	if (p && alloc_wanted(bpf_get_current_pid_tgid() >> 32))
		alloc_forget(p);
	return alloc_enter(ctx, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(on_posix_memalign, __u64 memptr, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, memptr);
}

/* aligned_alloc(align, size), memalign */
SEC("uprobe")
int BPF_KPROBE(on_aligned_alloc, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(on_memalign, __u64 align, __u64 size)
{
	return alloc_enter(ctx, size, 0);
}

/* free(p) and the like: sdallocx, dallocx, operator delete, PyObject_Free, PyMem_Free */
SEC("uprobe")
int BPF_KPROBE(on_libc_free, __u64 p)
{
	if (p && alloc_wanted(bpf_get_current_pid_tgid() >> 32))
		alloc_forget(p);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(on_alloc_return, __u64 ret)
{
	return alloc_return(ctx, ret) == 1 ? alloc_sample(ctx) : 0;
}

#endif
