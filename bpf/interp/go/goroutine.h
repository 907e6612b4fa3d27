/* The goroutine a Go thread runs for, from eBPF (included by sampler.bpf.c; layouts in
 * interp/go/bpf_abi.h, offsets per process from src/interp/go/go_runtime.c). Two users:
 *  - the sample's labels (labels.h): m.curg.labels;
 *  - the walk through a switch to g0 (native_unwind.h's UNWIND_RULE_GO_G0): a sample on g0's
 *    stack under runtime.systemstack or morestack goes on in the goroutine's own stack,
 *    from the context the switch saved in m.curg.sched (pc, sp, bp), as the runtime's own
 *    tracebacks (and so `go tool pprof` of a profile taken inside the program) show it.
 *
 * Hooks the includer provides: ss_read_user, ss_interp_proc.
 */
#ifndef STACKSCOPE_GO_GOROUTINE_H
#define STACKSCOPE_GO_GOROUTINE_H

#include "interp/common.h"
#include "interp/go/bpf_abi.h"

struct go_thread {
	__u64 g;    /* the running g: the goroutine, g0 or gsignal */
	__u64 m;    /* its m (the thread) */
	__u64 curg; /* the user goroutine m runs for (0: none, the scheduler) */
};

/* The sampled thread's g, m and m.curg through the TLS slot (fsbase: the thread's). 0, or -1
 * when unreadable (a thread the runtime has not set up: a C thread of a cgo program).
 */
static __always_inline int go_thread_read(const struct go_proc_abi *go, __u64 fsbase,
					  struct go_thread *t)
{
	if (!fsbase || ss_read_user(&t->g, sizeof(t->g), fsbase + (__s64)go->tls_g) || !t->g ||
	    ss_read_user(&t->m, sizeof(t->m), t->g + go->g_m) || !t->m ||
	    ss_read_user(&t->curg, sizeof(t->curg), t->m + go->m_curg))
		return -1;
	return 0;
}

/* Where the goroutine of a thread on g0 was when it switched: ctx = pc, sp, bp from
 * m.curg.sched (which: GO_CONTEXT_SCHED), or the pc and sp runtime.cgocall saved in
 * m.curg.syscallpc/sp before asmcgocall moved to g0 (GO_CONTEXT_SYSCALL; bp 0: cgocall's
 * frame rule restores it). sp is the sp of the switching frame (systemstack's, morestack's), which must
 * lie on g0's stack [g0.stack.lo, g0.stack.hi): only then did the switch happen (a sample
 * in systemstack before it switched, on the goroutine's stack, has a stale curg.sched), and
 * the saved sp on the goroutine's own stack (sched is cleared as the goroutine resumes). 0, or
 * -1 (not on g0 under a switch, unreadable: the walk ends there as a thread root).
 * A function of its own (static: 5.10's verifier takes no pointer arguments of global
 * functions).
 */
static __noinline int go_goroutine_context(__u32 pid, __u64 fsbase, __u64 sp, __u32 which,
					   struct go_sched *ctx)
{
	struct interp_proc *p = ss_interp_proc(pid, FRAME_KIND_GO);
	__u64 stack[2], pc_off, sp_off;
	struct go_thread t;

	/* g0 read into stack[0], then g0's stack bounds over it: 64 bytes of stack, as 6.1
	 * counts on_switch -> unwind_loop_cb -> unwind_native_step -> here within its 512
	 */
	if (!ctx || !p || go_thread_read(&p->go, fsbase, &t) || !t.curg || t.curg == t.g ||
	    ss_read_user(stack, sizeof(stack[0]), t.m + p->go.m_g0) || t.curg == stack[0] ||
	    ss_read_user(stack, sizeof(stack), stack[0]) || sp < stack[0] || sp >= stack[1] ||
	    ss_read_user(stack, sizeof(stack), t.curg))
		return -1;
	pc_off = which == GO_CONTEXT_SYSCALL ? p->go.g_syscall_pc : p->go.g_sched_pc;
	sp_off = which == GO_CONTEXT_SYSCALL ? p->go.g_syscall_sp : p->go.g_sched_sp;
	ctx->bp = 0;
	if (ss_read_user(&ctx->pc, sizeof(ctx->pc), t.curg + pc_off) ||
	    ss_read_user(&ctx->sp, sizeof(ctx->sp), t.curg + sp_off) ||
	    (which == GO_CONTEXT_SCHED &&
	     ss_read_user(&ctx->bp, sizeof(ctx->bp), t.curg + p->go.g_sched_bp)))
		return -1;
	/* a context being restored (gogo and systemstack's return clear sched.sp) is no context */
	if (ctx->sp < stack[0] || ctx->sp >= stack[1] || !ctx->pc)
		return -1;
	return 0;
}

#endif
