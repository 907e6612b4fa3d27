/* Off-CPU samples: where threads wait, weighted by how long they wait.
 *
 * One program on the sched_switch tracepoint (loaded only for --off-cpu), which runs in the
 * context of the thread leaving the CPU (prev): its kernel stack ends in the scheduler, its
 * user registers and stack are its own, its address space is the current one. So that is
 * where its stack is taken, by the very walk CPU samples use (kernel stack, native unwinder,
 * runtimes), and sent as a RECORD_SAMPLE marked off_cpu. How long the thread stays off is
 * known only when it comes back (the same tracepoint, as next): then, for a stay of at least
 * sampler_cfg.off_cpu_min_ns whose stack was sent, a small RECORD_OFF_CPU (the stay, the
 * reason from prev_state) follows; userspace joins the two by (tid, time of leaving) and
 * drops stacks no RECORD_OFF_CPU claims (short stays). (This kernel family may have neither
 * kprobes nor fentry, so the incoming thread's own context right after a switch is not
 * reachable: the stack is taken on the way out.)
 *
 * Cost bound. Walking at every switch out would make a context-switch storm of short waits
 * expensive, so a walk happens only when the thread's recent past says the stay may be long:
 * a new thread, or one of its last 8 stays reached the minimum (struct off_cpu_thread
 * history). Other switches cost a map lookup and update. Walks are also rationed per CPU
 * (GCRA, as in deferred.h). Long stays without a stack (predicted short, over the budget,
 * ring buffer full) are counted with their time. Kernel threads are left out (no user stack;
 * their waits would drown the picture), and so are exiting ones.
 *
 * Needs bpf_loop: userspace refuses --off-cpu with the tail-call unwinder.
 */
#ifndef STACKSCOPE_OFF_CPU_H
#define STACKSCOPE_OFF_CPU_H

enum off_cpu_walk {
	OFF_CPU_WALK_NONE = 0,    /* predicted short: not walked */
	OFF_CPU_WALK_SENT,        /* its stack record is in the ring buffer */
	OFF_CPU_WALK_OVER_BUDGET, /* would have been walked: over the budget */
	OFF_CPU_WALK_LOST,        /* walked, the record lost (ring buffer full) */
};

struct off_cpu_thread {
	__u64 out_ns; /* when it left (the stack record's hdr.time_ns); 0: on CPU */
	__u32 state;  /* enum off_cpu_state */
	__u8 walk;    /* enum off_cpu_walk */
	__u8 history; /* bit i: the (i+1)-th latest stay reached the minimum */
	__u8 pad[2];
};

/* tid -> its current (or last) stay off CPU. LRU: threads that exit age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1 << 16); /* resized by userspace from the threads */
	__type(key, __u32);
	__type(value, struct off_cpu_thread);
} off_cpu_threads SEC(".maps");

/* GCRA state of the walk budget: one per CPU, no atomics needed. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} off_cpu_budget SEC(".maps");

#define TASK_STATE_INTERRUPTIBLE 0x0001
#define TASK_STATE_UNINTERRUPTIBLE 0x0002
#define TASK_STATE_STOPPED 0x0004
#define TASK_STATE_TRACED 0x0008
#define TASK_STATE_DEAD 0x0080
#define TASK_STATE_NOLOAD 0x0400

static __always_inline __u32 off_cpu_state_of(bool preempt, unsigned int prev_state)
{
	if (preempt || prev_state == 0)
		return OFF_CPU_PREEMPTED;
	if (prev_state & TASK_STATE_INTERRUPTIBLE)
		return OFF_CPU_SLEEP;
	if (prev_state & TASK_STATE_UNINTERRUPTIBLE)
		return prev_state & TASK_STATE_NOLOAD ? OFF_CPU_IDLE : OFF_CPU_UNINTERRUPTIBLE;
	if (prev_state & (TASK_STATE_STOPPED | TASK_STATE_TRACED))
		return OFF_CPU_STOPPED;
	return OFF_CPU_OTHER;
}

static __always_inline bool off_cpu_take_token(__u64 now)
{
	return gcra_take(this_cpu_entry(&off_cpu_budget), now, sampler_cfg.off_cpu_interval_ns,
			 sampler_cfg.off_cpu_burst_ns);
}

/* next comes back on CPU: end its stay, and send the stay when its stack went out. A frame of
 * its own: inlined, its locals took on_switch's frame past what 6.1 allows on the call chain
 * through the walk (on_switch, unwind_loop_cb, Go's goroutine context: 512 bytes).
 */
static __noinline int off_cpu_return(struct task_struct *next, __u64 now)
{
	__u32 tid = next->pid, walk;
	struct off_cpu_thread *t = bpf_map_lookup_elem(&off_cpu_threads, &tid);
	struct off_cpu_record *rec;
	bool long_enough;
	__u64 off_ns;

	if (!t || !t->out_ns)
		return 0;
	off_ns = now - t->out_ns;
	long_enough = off_ns >= sampler_cfg.off_cpu_min_ns;
	t->history = (t->history << 1) | long_enough;
	walk = t->walk;
	if (!long_enough) {
		count(COUNTER_OFF_CPU_SHORT, 1);
	} else if (walk == OFF_CPU_WALK_NONE) {
		count(COUNTER_OFF_CPU_NOT_WALKED, 1);
		count(COUNTER_OFF_CPU_NOT_WALKED_NS, off_ns);
	} else if (walk == OFF_CPU_WALK_OVER_BUDGET) {
		count(COUNTER_OFF_CPU_OVER_BUDGET, 1);
		count(COUNTER_OFF_CPU_OVER_BUDGET_NS, off_ns);
	} else if (walk == OFF_CPU_WALK_SENT &&
		   (rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0))) {
		rec->hdr.kind = RECORD_OFF_CPU;
		rec->hdr.cpu = bpf_get_smp_processor_id();
		rec->hdr.time_ns = now;
		rec->hdr.pid = next->tgid;
		rec->hdr.tid = tid;
		rec->out_time_ns = t->out_ns;
		rec->off_ns = off_ns;
		rec->state = t->state;
		rec->pad = 0;
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
		count(COUNTER_OFF_CPU, 1);
		count(COUNTER_OFF_CPU_NS, off_ns);
	} else {
		count(COUNTER_OFF_CPU_LOST, 1);
		count(COUNTER_OFF_CPU_LOST_NS, off_ns);
	}
	t->out_ns = 0;
	return 0;
}

/* A thread's first entry (in .rodata, not on on_switch's stack). */
static const struct off_cpu_thread off_cpu_fresh = { .history = 1 };

/* prev (the current task) leaves the CPU: note when and why, walk its stack if its stay may
 * be long.
 */
static __always_inline void off_cpu_leave(void *ctx, bool preempt, struct task_struct *prev,
					  unsigned int prev_state)
{
	struct off_cpu_thread *t;
	__u32 tgid = prev->tgid, tid = prev->pid;
	struct unwind_scratch *s;
	__u64 now;

	if (!tgid || tgid == sampler_cfg.self_pid || (prev->flags & 0x00200000 /* PF_KTHREAD */) ||
	    (prev_state & TASK_STATE_DEAD) || !pid_wanted(tgid) || !sel_wanted(tgid, false, 0))
		return;
	t = bpf_map_lookup_elem(&off_cpu_threads, &tid);
	if (!t) {
		bpf_map_update_elem(&off_cpu_threads, &tid, &off_cpu_fresh, BPF_ANY);
		t = bpf_map_lookup_elem(&off_cpu_threads, &tid);
		if (!t)
			return;
	}
	now = bpf_ktime_get_ns();
	t->state = off_cpu_state_of(preempt, prev_state);
	t->walk = OFF_CPU_WALK_NONE;
	t->out_ns = now;
	if (!t->history)
		return;
	if (!off_cpu_take_token(now)) {
		t->walk = OFF_CPU_WALK_OVER_BUDGET;
		return;
	}
	s = begin_sample(prev, tgid, tid, now);
	if (!s)
		return;
	s->rec.hdr.time_ns = now; /* the join key */
	s->rec.off_cpu = 1;
	count(COUNTER_OFF_CPU_WALKS, 1);
	sample_kernel_stack(ctx, &s->rec);
	if (prev->mm) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

		regs_from_pt_regs(&s->st, regs);
		s->user_regs = (__u64)regs;
	} else { /* exiting: its address space is gone */
		s->st.done = 1;
		s->st.end = UNWIND_END_NO_USER;
	}
	walk_user_stack(s, prev, tgid);
	finish_sample(s, false);
	t->walk = s->sent ? OFF_CPU_WALK_SENT : OFF_CPU_WALK_LOST;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	off_cpu_return(next, bpf_ktime_get_ns());
	off_cpu_leave(ctx, preempt, prev, prev_state);
	return 0;
}

#endif
