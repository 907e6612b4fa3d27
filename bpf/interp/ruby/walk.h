/* CRuby frames in the native walk (included by bpf/interp/dispatch.h, which calls it when the
 * native frame about to be emitted is in a libruby's vm_exec_core).
 *
 * rb_activation() starts the run of one vm_exec_core activation: the Ruby frames it runs are
 * emitted first, one per loop iteration (rb_emit()), then the native frame. The sampled
 * thread's execution context is found once per sample, through the thread-local
 * ruby_current_ec (3.x: the DTV entry of libruby's TLS module) or the thread's rb_thread_t in
 * its pthread key (2.x, enum rb_ec_src): both name every Ruby thread's own context, whether or
 * not the thread holds the GVL. Its control frames are walked from the
 * newest (ec->cfp) towards the end of its VM stack (the oldest); one activation runs the frames
 * down to and including the first one a vm_exec() call pushed (flag FINISH), so a C function
 * that calls back into Ruby (Integer#times, Array#each, sort_by) shows its C frames between the
 * two runs. Dummy frames and C blocks (ifunc) are skipped.
 *
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count),
 * so this walk also compiles in the kernel-free replay tests. Every reason for missing Ruby
 * frames is counted (enum rb_counter).
 */
#ifndef STACKSCOPE_RUBY_WALK_H
#define STACKSCOPE_RUBY_WALK_H

#include "interp/common.h"
#include "interp/ruby/bpf_abi.h"

#define RB_STACK_MAX_VALUES (1ULL << 28) /* a VM stack larger than 2 GiB is not one */

struct rb_cursor {
	__u64 cfp; /* next control frame to look at (towards older frames) */
	__u64 end; /* the end of the VM stack: no control frame at or above it */
	__u8 cf[RB_CFP_READ_MAX];
	__u8 body[RB_BODY_READ_MAX];
	__u64 env[3];  /* ep[-2] (method entry or cref), ep[-1] (specval), ep[0] (flags) */
	__u64 lenv[3]; /* the same of an enclosing environment (rb_method_entry()) */
	__u8 gc;       /* the GC runs: a marker goes before the first Ruby frame (last: cf stays
			* 8-byte aligned, read as __u64) */
};

static __always_inline void rb_reset(struct rb_cursor *rb)
{
	rb->cfp = 0;
	rb->end = 0;
}

static __always_inline __u64 rb_cf_u64(const struct rb_cursor *rb, __u16 off)
{
	return *(const __u64 *)(rb->cf + (off & (RB_CFP_READ_MAX - 8)));
}

static __always_inline __u64 rb_body_u64(const struct rb_cursor *rb, __u16 off)
{
	return *(const __u64 *)(rb->body + (off & (RB_BODY_READ_MAX - 8)));
}

/* Find the sampled thread's newest control frame; 0, or < 0 with the reason counted (-2: the
 * process is not attached).
 */
static __always_inline int rb_start(struct unwind_cursor *st, struct interp_state *is,
				    struct rb_cursor *rb)
{
	const struct rb_offsets *o = &is->file.rb.off;
	struct interp_proc *proc;
	__u64 modid, dtv, block, th, ec, stack, size, cfp, end, vm, objspace;
	__u32 gc_flags, key;

	proc = ss_interp_proc(st->pid, FRAME_KIND_RUBY);
	if (!proc || proc->file_id != is->file_id) {
		ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_NO_PROC);
		return -2;
	}
	if (!is->fsbase)
		return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
	if (is->file.rb.ec_src == RB_EC_TSD) {
		/* the thread's rb_thread_t in its pthread key (0 until the VM made it) */
		if (ss_read_user(&key, sizeof(key), proc->rb.tsd_key) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
		if (key >= RB_TSD_KEYS)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
		if (ss_read_user(&th, sizeof(th),
				 is->fsbase + (__s64)proc->rb.tsd_off + 16 * (__u64)key) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
		if (!th)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
		if (ss_read_user(&ec, sizeof(ec), th + o->th_ec) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
	} else if (is->file.rb.ec_src == RB_EC_TLSDESC) {
		/* block: the descriptor's argument, ruby_current_ec's offset from tpidr_el0 */
		if (ss_read_user(&block, sizeof(block), proc->rb.modid_got + 8) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
		if (!block || block >= RB_TLSDESC_STATIC_MAX)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
		if (ss_read_user(&ec, sizeof(ec), is->fsbase + block) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
	} else {
		if (ss_read_user(&modid, sizeof(modid), proc->rb.modid_got) < 0 ||
		    ss_read_user(&dtv, sizeof(dtv), is->fsbase + RB_TCB_DTV) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
		if (!modid || modid > 0xffff || !dtv)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
		if (ss_read_user(&block, sizeof(block), dtv + 16 * modid) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
		/* glibc marks a module's block not allocated yet in this thread with -1. */
		if (!block || block == ~0ULL)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
		if (ss_read_user(&ec, sizeof(ec), block + is->file.rb.tls_off) < 0)
			return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
	}
	if (!ec)
		return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_NO_EC);
	if (ss_read_user(&stack, sizeof(stack), ec + o->ec_vm_stack) < 0 ||
	    ss_read_user(&size, sizeof(size), ec + o->ec_vm_stack_size) < 0 ||
	    ss_read_user(&cfp, sizeof(cfp), ec + o->ec_cfp) < 0)
		return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_READ_FAILED);
	/* The check that makes a wrong layout or TLS module harmless: the newest control frame
	 * lies in the context's own VM stack, a whole number of frames below its end.
	 */
	end = stack + size * 8;
	if (!stack || !o->cfp_size || size >= RB_STACK_MAX_VALUES || cfp < stack || cfp >= end ||
	    (end - cfp) % o->cfp_size)
		return ss_interp_miss(FRAME_KIND_RUBY, RB_COUNTER_BAD_EC);
	rb->cfp = cfp;
	rb->end = end;
	rb->gc = 0;
	/* GC time: vm->objspace->flags.during_gc (unreadable: just no marker) */
	if (proc->rb.vm_ptr && ss_read_user(&vm, sizeof(vm), proc->rb.vm_ptr) == 0 && vm &&
	    ss_read_user(&objspace, sizeof(objspace), vm + o->vm_objspace) == 0 && objspace &&
	    ss_read_user(&gc_flags, sizeof(gc_flags), objspace + o->objspace_flags) == 0)
		rb->gc = (gc_flags & o->gc_running) != 0;
	return 0;
}

/* The method entry candidate of a frame whose environment is rb->env: ep[-2] of its local
 * environment, following the previous-environment links of blocks (at most RB_EP_DEPTH_MAX),
 * or the frame's own for a define_method block. 0 when not reached; userspace checks the rest.
 */
static __always_inline __u64 rb_method_entry(struct rb_cursor *rb)
{
	__u64 flags = rb->env[2], prev;
	int i;

	if (flags & RB_FRAME_FLAG_BMETHOD)
		return rb->env[0];
	rb->lenv[0] = rb->env[0];
	rb->lenv[1] = rb->env[1];
	rb->lenv[2] = flags;
#ifdef __clang__ /* the walk also compiles as plain C (gcc) in the unit tests */
#pragma unroll
#endif
	for (i = 0; i < RB_EP_DEPTH_MAX; i++) {
		if (rb->lenv[2] & RB_ENV_FLAG_LOCAL)
			return rb->lenv[0];
		prev = rb->lenv[1] & ~3ULL; /* VM_ENV_PREV_EP: the guarded specval */
		if (prev < 16 || ss_read_user(rb->lenv, sizeof(rb->lenv), prev - 16) < 0)
			return 0;
	}
	return rb->lenv[2] & RB_ENV_FLAG_LOCAL ? rb->lenv[0] : 0;
}

/* Emit (or skip) the next control frame of the current run. */
static __always_inline void rb_emit(struct unwind_cursor *st, struct interp_state *is,
				    struct rb_cursor *rb, struct user_frame *frames)
{
	const struct rb_offsets *o = &is->file.rb.off;
	__u32 idx = st->frame_cnt, pos = RB_POS_NONE, cookie = 0, magic, iseq_size;
	__u64 pc, iseq, ep, flags, head, body, encoded, addr, me = 0, called_id = 0;

	if (!rb->cfp || rb->cfp >= rb->end) {
		is->emitting = 0;
		return;
	}
	if (ss_interp_full(st, is, frames, FRAME_KIND_RUBY, RB_MARKER_TRUNCATED,
			   RB_COUNTER_TRUNCATED))
		return;
	if (ss_read_user(rb->cf, o->cfp_read_sz & (RB_CFP_READ_MAX - 1), rb->cfp) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_RUBY, RB_MARKER_READ_FAILED,
			       RB_COUNTER_READ_FAILED);
		return;
	}
	rb->cfp += o->cfp_size;
	pc = rb_cf_u64(rb, o->cfp_pc);
	iseq = rb_cf_u64(rb, o->cfp_iseq);
	ep = rb_cf_u64(rb, o->cfp_ep);
	if (ep < 16 || ss_read_user(rb->env, sizeof(rb->env), ep - 16) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_RUBY, RB_MARKER_READ_FAILED,
			       RB_COUNTER_READ_FAILED);
		return;
	}
	flags = rb->env[2];
	magic = (__u32)flags & RB_FRAME_MAGIC_MASK;
	if (flags & RB_FRAME_FLAG_FINISH)
		is->emitting = 0; /* the last frame of this activation's run */
	if (magic == RB_FRAME_MAGIC_CFUNC) {
		addr = rb->env[0];
		if (!addr ||
		    ss_read_user(&called_id, sizeof(called_id), addr + o->me_called_id) < 0)
			called_id = 0; /* still emitted: userspace says what it can */
		pos = RB_POS_CFUNC;
		cookie = (__u32)called_id;
		ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_CFUNCS);
	} else if (magic == RB_FRAME_MAGIC_DUMMY || magic == RB_FRAME_MAGIC_IFUNC || !iseq) {
		ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_SKIPPED);
		return;
	} else {
		if (ss_read_user(&head, sizeof(head), iseq) < 0 ||
		    ss_read_user(&body, sizeof(body), iseq + o->iseq_body) < 0 ||
		    (head & RB_T_MASK) != RB_T_IMEMO || ((head >> 12) & 0xf) != RB_IMEMO_ISEQ ||
		    ss_read_user(rb->body, o->body_read_sz & (RB_BODY_READ_MAX - 1), body) < 0) {
			ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_BAD_ISEQ);
			return;
		}
		addr = iseq;
		iseq_size =
			*(const __u32 *)(rb->body + (o->body_iseq_size & (RB_BODY_READ_MAX - 4)));
		encoded = rb_body_u64(rb, o->body_encoded);
		cookie = iseq_size ^ ((__u32)rb_body_u64(rb, o->body_first_line) << 16);
		if (pc >= encoded && (pc - encoded) / 8 <= iseq_size &&
		    (pc - encoded) / 8 < RB_POS_CFUNC)
			pos = (__u32)((pc - encoded) / 8);
		me = rb_method_entry(rb);
		if (me & 7 || me >> (RB_POS_SHIFT + 3))
			me = 0;
	}
	ss_interp_put(st, frames, idx, FRAME_KIND_RUBY, addr, (__u64)pos << RB_POS_SHIFT | me >> 3,
		      cookie);
	ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_FRAMES);
}

/* The native frame about to be emitted is a vm_exec_core activation. 1: this iteration emitted
 * (or marked or skipped) something, 0: the native step runs now.
 */
static __always_inline int rb_activation(struct unwind_cursor *st, struct interp_state *is,
					 struct rb_cursor *rb, struct user_frame *frames)
{
	int err;

	if (ss_interp_unsupported(st, is, frames, FRAME_KIND_RUBY, RB_COUNTER_STACKS,
				  RB_MARKER_VERSION(is->file.rb.refusal, is->file.major,
						    is->file.minor),
				  RB_COUNTER_UNSUPPORTED))
		return 1;
	if (ss_interp_first(is, FRAME_KIND_RUBY)) {
		err = rb_start(st, is, rb);
		if (err == -2) {
			ss_interp_marker(st, frames, FRAME_KIND_RUBY, RB_MARKER_NO_PROC);
			ss_interp_stop(is, FRAME_KIND_RUBY);
			return 1;
		}
		if (err < 0) {
			ss_interp_stop(is, FRAME_KIND_RUBY);
			return 0;
		}
	}
	if (!rb->cfp || rb->cfp >= rb->end) {
		ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_RUN_EMPTY);
		return 0;
	}
	is->emitting = FRAME_KIND_RUBY;
	if (rb->gc) {
		rb->gc = 0;
		ss_interp_marker(st, frames, FRAME_KIND_RUBY, RB_MARKER_GC);
		ss_interp_count(FRAME_KIND_RUBY, RB_COUNTER_GC);
		return 1;
	}
	rb_emit(st, is, rb, frames);
	return 1;
}

#endif
