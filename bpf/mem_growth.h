/* Memory growth samples (`--faults`): where resident memory grows, at a cost that does not
 * depend on the allocation rate.
 *
 * Three programs, loaded only with --faults, each taking the stack of the current thread by
 * the walk CPU samples use (kernel stack when in the kernel, native unwinder, runtimes) and
 * sending it as a RECORD_SAMPLE with mem_kind set:
 *  - on_fault: the software perf event page-faults, one sample every
 *    sampler_cfg.fault_period faults of a CPU (mem_weight = the period: the faults it stands
 *    for). A fault in user mode has the faulting user registers in its context; one in the
 *    kernel (copy_to_user into fresh pages) has its kernel stack and the saved user ones;
 *  - on_brk: syscalls:sys_enter_brk, when the break asked for is above mm->brk (the heap
 *    grows; mem_weight = the bytes of growth; brk(0) and shrinks are not sampled);
 *  - on_mmap_anon: syscalls:sys_enter_mmap of an anonymous mapping (mem_weight = its length
 *    in whole pages: what was asked, not what will be touched).
 * The syscalls are taken every time (they are rare next to faults: glibc's malloc grows its
 * heap in 132 KiB steps and maps only blocks of 128 KiB and more); their kernel stack is the
 * syscall entry and is not sent. stackscope's own process is left out.
 *
 * Needs bpf_loop: userspace refuses --faults with the tail-call unwinder.
 */
#ifndef STACKSCOPE_MEM_GROWTH_H
#define STACKSCOPE_MEM_GROWTH_H

#define SS_MAP_ANONYMOUS 0x20 /* x86-64 and arm64 alike */
#define SS_PAGE_SIZE 4096ULL

SEC("perf_event")
int on_fault(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct unwind_scratch *s;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (tgid == sampler_cfg.self_pid)
		return 0;
	s = start_sample(ctx, task, &tgid);
	if (!s)
		return 0;
	s->rec.mem_kind = MEM_FAULT;
	s->rec.mem_weight = sampler_cfg.fault_period;
	count(COUNTER_MEM_FAULTS, 1);
	walk_user_stack(s, task, tgid);
	return finish_sample(s, false);
}

/* The current thread, in a syscall it entered from user mode: its user stack, no kernel one.
 * A frame of its own: the two tracepoints share it.
 */
static __noinline int mem_syscall_sample(__u32 kind, __u64 weight)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct unwind_scratch *s;
	struct pt_regs *regs;

	if (!tgid || tgid == sampler_cfg.self_pid || !pid_wanted(tgid) || !task->mm ||
	    !sel_wanted(tgid, false, 0))
		return 0;
	s = begin_sample(task, tgid, (__u32)id, bpf_ktime_get_ns());
	if (!s)
		return 0;
	s->rec.mem_kind = kind;
	s->rec.mem_weight = weight;
	count(kind == MEM_BRK ? COUNTER_MEM_BRK : COUNTER_MEM_MMAP, 1);
	regs = task_user_regs(task);
	regs_from_pt_regs(&s->st, regs);
	s->user_regs = (__u64)regs;
	walk_user_stack(s, task, tgid);
	return finish_sample(s, false);
}

SEC("tracepoint/syscalls/sys_enter_brk")
int on_brk(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 want = ctx->args[0], cur;

	if (!want || !task->mm)
		return 0;
	cur = task->mm->brk;
	if (want <= cur)
		return 0;
	return mem_syscall_sample(MEM_BRK, want - cur);
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_anon(struct trace_event_raw_sys_enter *ctx)
{
	__u64 len = ctx->args[1];

	if (!(ctx->args[3] & SS_MAP_ANONYMOUS) || !len)
		return 0;
	return mem_syscall_sample(MEM_MMAP, (len + SS_PAGE_SIZE - 1) & ~(SS_PAGE_SIZE - 1));
}

#endif
