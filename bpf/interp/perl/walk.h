/* Perl 5 frames in the native walk (included by bpf/interp/dispatch.h, which calls it when
 * the native frame about to be emitted is in a Perl binary's Perl_runops_standard).
 *
 * The interpreter of the sampled thread is the value of its pthread key PL_thr_key (threaded
 * builds: libc's TSD slot, fsbase + tsd_off + 16 k). Its Perl call stack is the context stack:
 * PL_curstackinfo -> si_cxstack[si_cxix .. 0], then si_prev (an outer stackinfo: C code that
 * runs Perl with a stack of its own, sort's comparisons, magic, DESTROY...). Sub calls from Perl
 * (pp_entersub) push a CXt_SUB context and stay in the same runops loop; C code running Perl
 * starts a nested runops: call_sv() pushes a sub whose retop is NULL (XS callbacks, BEGIN),
 * pp_sort and magic push a new stackinfo first. So one runops activation runs the contexts from
 * the cursor down to and including the first sub or eval entered from C (retop NULL), or to the
 * bottom of its stackinfo; the main stackinfo's bottom is the main program ("main"). One
 * exception: a sub called by the last op of sort's block has no retop either (the block's last
 * op has no successor: that ends sort's runops), so a sub without retop directly above a sort
 * block (CXt_NULL) stays in the activation (an XS in a sort block calling back into Perl would
 * then have its callback placed one runops too far out: placement, not names).
 *
 * Frames are the sub contexts (CV -> GV read here: a closure's CV may be gone when userspace
 * reads; a sub without a glob, CvNAMED, by its CV), eval STRING and require'd files' code, sort's block; loops, bare blocks and eval { }
 * run inside their sub and are passed over. Each frame's statement is PL_curcop for the newest,
 * then the blk_oldcop of the frame context above it (the COP current when it was entered).
 *
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count),
 * so this walk also runs in the kernel-free replay tests. Every reason for missing Perl frames
 * is counted (enum perl_counter). Contexts are checked as they are read (type, CV type), a
 * failure ends this sample's Perl frames with a marker: frames are missing, never wrong.
 */
#ifndef STACKSCOPE_PERL_WALK_H
#define STACKSCOPE_PERL_WALK_H

#include "interp/common.h"
#include "interp/perl/bpf_abi.h"

/* Runtimes whose walks keep a cursor in interp_cursor's union (which Perl's shares): their
 * frames in the same stack as Perl's would overwrite Perl's cursor (see perl_activation). That
 * is every runtime but those listed apart: the code-range walkers (their scratch is a union of
 * its own) and Go (no walk); a new runtime is a peer unless it is added there.
 */
#define PERL_UNION_APART                                                                          \
	(INTERP_BIT(FRAME_KIND_NATIVE) | INTERP_BIT(FRAME_KIND_PERL) |                            \
	 INTERP_BIT(FRAME_KIND_HOTSPOT) | INTERP_BIT(FRAME_KIND_V8) | INTERP_BIT(FRAME_KIND_GO) | \
	 INTERP_BIT(FRAME_KIND_BEAM))
#define PERL_UNION_PEERS ((__u16)~PERL_UNION_APART)
#define PERL_TSD_KEYS 32
#define PERL_SI_READ_SZ 48  /* bytes of a PERL_SI read: through si_type */
#define PERL_XCV_READ_SZ 40 /* XPVCV from xcv_gv_u through xcv_flags */
#define PERL_MASK64(buf) (sizeof(buf) - 8)
#define PERL_MASK32(buf) (sizeof(buf) - 4)

struct perl_cursor {
	__u64 si;      /* the stackinfo being walked */
	__u64 cxstack; /* its si_cxstack */
	__u64 cop;     /* the statement of the next frame to emit */
	__s32 cxix;    /* its next context to read (-1: none left) */
	__s32 si_type;
	__u8 run_frames; /* frames emitted by the current runops activation */
	__u8 from_c;     /* the last frame had no retop: entered from C, unless sort's block
			  * (whose last op has no successor either) is the next context */
	__u8 pad[6];
	__u8 cxbuf[PERL_CX_READ_MAX]; /* 8-byte aligned: read as __u64 */
	__u8 sibuf[64];
	__u8 cvbuf[64];
};

static __always_inline void perl_reset(struct perl_cursor *pl)
{
	pl->si = 0;
}

static __always_inline __u64 perl_u64(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u64 *)(buf + (off & mask));
}

static __always_inline __u32 perl_u32(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u32 *)(buf + (off & mask));
}

/* Load the stackinfo at si into the cursor; 0, or < 0 (not a stackinfo we understand). */
static __always_inline int perl_load_si(struct perl_cursor *pl, const struct perl_offsets *o,
					__u64 si)
{
	__s32 cxix, cxmax, type;

	if (!si || ss_read_user(pl->sibuf, PERL_SI_READ_SZ, si) < 0)
		return -1;
	cxix = (__s32)perl_u32(pl->sibuf, o->si_cxix, PERL_MASK32(pl->sibuf));
	cxmax = (__s32)perl_u32(pl->sibuf, o->si_cxmax, PERL_MASK32(pl->sibuf));
	type = (__s32)perl_u32(pl->sibuf, o->si_type, PERL_MASK32(pl->sibuf));
	if (type < PERL_SI_MAIN || type > o->si_type_max || cxix < -1 || cxix > cxmax)
		return -2;
	pl->si = si;
	pl->cxstack = perl_u64(pl->sibuf, o->si_cxstack, PERL_MASK64(pl->sibuf));
	pl->cxix = cxix;
	pl->si_type = type;
	if (!pl->cxstack && cxix >= 0)
		return -2;
	return 0;
}

/* Find the sampled thread's interpreter and its newest context; 0, or < 0 with the reason
 * counted (and a marker emitted where the layout looks wrong).
 */
static __always_inline int perl_start(struct unwind_cursor *st, struct interp_state *is,
				      struct perl_cursor *pl, struct user_frame *frames)
{
	const struct perl_offsets *o = &is->file.perl.off;
	struct interp_proc *proc;
	__u64 interp, si;
	__u32 key;
	int err;

	proc = ss_interp_proc(st->pid, FRAME_KIND_PERL);
	if (!proc || proc->file_id != is->file_id)
		return ss_interp_miss(FRAME_KIND_PERL, PERL_COUNTER_NO_PROC);
	if (proc->perl.rejected) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_REJECTED,
			       PERL_COUNTER_REJECTED);
		return -1;
	}
	if (ss_read_user(&key, sizeof(key), proc->perl.thr_key) < 0 || key >= PERL_TSD_KEYS ||
	    !is->fsbase ||
	    ss_read_user(&interp, sizeof(interp), is->fsbase + proc->perl.tsd_off + 16 * key) < 0 ||
	    !interp)
		return ss_interp_miss(FRAME_KIND_PERL, PERL_COUNTER_NO_INTERP);
	if (ss_read_user(&pl->cop, sizeof(pl->cop), interp + o->interp_curcop) < 0 ||
	    ss_read_user(&si, sizeof(si), interp + o->interp_curstackinfo) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_READ_FAILED,
			       PERL_COUNTER_READ_FAILED);
		return -1;
	}
	err = perl_load_si(pl, o, si);
	if (err < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL,
			       err == -1 ? PERL_MARKER_READ_FAILED : PERL_MARKER_BAD_FRAME,
			       err == -1 ? PERL_COUNTER_READ_FAILED : PERL_COUNTER_BAD_FRAME);
		return -1;
	}
	pl->run_frames = 0;
	pl->from_c = 0;
	return 0;
}

/* Append one Perl frame (see bpf_abi.h for the encoding). */
static __always_inline void perl_push(struct unwind_cursor *st, struct interp_state *is,
				      struct perl_cursor *pl, struct user_frame *frames, __u64 type,
				      __u64 ptr)
{
	const struct perl_offsets *o = &is->file.perl.off;
	__u32 idx = st->frame_cnt, line = 0;

	if (pl->cop && ss_read_user(&line, sizeof(line), pl->cop + o->cop_line) < 0)
		line = 0;
	ss_interp_put(st, frames, idx, FRAME_KIND_PERL,
		      type << PERL_FRAME_TYPE_SHIFT | (ptr & PERL_FRAME_PTR_MASK),
		      (__u64)(line & 0xffff) << PERL_FRAME_LINE_SHIFT |
			      (pl->cop & PERL_FRAME_ADDR_MASK),
		      0);
	if (pl->run_frames < 255)
		pl->run_frames++;
	ss_interp_count(FRAME_KIND_PERL, PERL_COUNTER_FRAMES);
}

/* A sub context's frame: its CV's glob (its CV when it has none). 0, 1 when the context has no
 * sub (being entered or left: nothing emitted), or < 0 (marker emitted).
 */
static __always_inline int perl_push_sub(struct unwind_cursor *st, struct interp_state *is,
					 struct perl_cursor *pl, struct user_frame *frames)
{
	const struct perl_offsets *o = &is->file.perl.off;
	__u64 cv, any, gv;
	__u32 flags;

	cv = perl_u64(pl->cxbuf, o->cx_sub_cv, PERL_MASK64(pl->cxbuf));
	if (!cv) {
		/* pp_entersub between cx_pushblock and cx_pushsub, or pp_leavesub after cx_popsub:
		 * no sub to show, but blk_oldcop already (still) is the caller's statement.
		 */
		ss_interp_count(FRAME_KIND_PERL, PERL_COUNTER_SUB_MOVING);
		return 1;
	}
	if (ss_read_user(pl->cvbuf, 16, cv) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_READ_FAILED,
			       PERL_COUNTER_READ_FAILED);
		return -1;
	}
	any = perl_u64(pl->cvbuf, 0, PERL_MASK64(pl->cvbuf));
	flags = perl_u32(pl->cvbuf, o->sv_flags, PERL_MASK32(pl->cvbuf));
	if ((flags & 0xff) != PERL_SVT_PVCV || !any) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_BAD_FRAME,
			       PERL_COUNTER_BAD_FRAME);
		return -1;
	}
	if (o->xcv_flags < o->xcv_gv || o->xcv_flags - o->xcv_gv > PERL_XCV_READ_SZ - 4 ||
	    ss_read_user(pl->cvbuf, PERL_XCV_READ_SZ, any + o->xcv_gv) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_READ_FAILED,
			       PERL_COUNTER_READ_FAILED);
		return -1;
	}
	gv = perl_u64(pl->cvbuf, 0, PERL_MASK64(pl->cvbuf));
	flags = perl_u32(pl->cvbuf, o->xcv_flags - o->xcv_gv, PERL_MASK32(pl->cvbuf));
	if (!gv) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_BAD_FRAME,
			       PERL_COUNTER_BAD_FRAME);
		return -1;
	}
	if (flags & PERL_CVF_NAMED)
		perl_push(st, is, pl, frames, PERL_FRAME_NAMED,
			  (cv & PERL_FRAME_ADDR_MASK) | ((gv >> 3) & 0xff)
								<< PERL_FRAME_COOKIE_SHIFT);
	else
		perl_push(st, is, pl, frames, PERL_FRAME_SUB, gv);
	return 0;
}

/* Emit the next Perl frame of the current runops activation, or pass over one context. */
static __always_inline void perl_emit(struct unwind_cursor *st, struct interp_state *is,
				      struct perl_cursor *pl, struct user_frame *frames)
{
	const struct perl_offsets *o = &is->file.perl.off;
	__u64 retop, prev, type = 0;
	__u32 cx_size = o->cx_size;
	__u8 cxt, ctype;
	__u16 optype;
	int err;

	if (ss_interp_full(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_TRUNCATED,
			   PERL_COUNTER_TRUNCATED))
		return;
	if (pl->cxix < 0 && pl->from_c) {
		pl->from_c = 0;
		is->emitting = 0;
		return;
	}
	if (pl->cxix < 0) {
		if (pl->si_type == PERL_SI_MAIN) {
			perl_push(st, is, pl, frames, PERL_FRAME_MAIN, 0);
			ss_interp_stop(is, FRAME_KIND_PERL); /* the main program: nothing older */
			return;
		}
		if (pl->run_frames) {
			is->emitting = 0; /* this activation ran this stackinfo's bottom */
			return;
		}
		/* Nothing of this activation left in this stackinfo: its Perl runs in the outer one
		 * (the runops that a sort, magic or call_sv in progress started has not pushed its
		 * context yet, or its stackinfo was emitted by a newer activation).
		 */
		prev = perl_u64(pl->sibuf, o->si_prev, PERL_MASK64(pl->sibuf));
		if (!prev) {
			ss_interp_count(FRAME_KIND_PERL, PERL_COUNTER_RUN_EMPTY);
			ss_interp_stop(is, FRAME_KIND_PERL);
			return;
		}
		err = perl_load_si(pl, o, prev);
		if (err < 0)
			ss_interp_fail(st, is, frames, FRAME_KIND_PERL,
				       err == -1 ? PERL_MARKER_READ_FAILED : PERL_MARKER_BAD_FRAME,
				       err == -1 ? PERL_COUNTER_READ_FAILED
						 : PERL_COUNTER_BAD_FRAME);
		return;
	}
	if (cx_size > PERL_CX_READ_MAX || cx_size < 8 ||
	    ss_read_user(pl->cxbuf, cx_size, pl->cxstack + (__u64)pl->cxix * cx_size) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_READ_FAILED,
			       PERL_COUNTER_READ_FAILED);
		return;
	}
	cxt = pl->cxbuf[o->cx_type & (PERL_CX_READ_MAX - 1)];
	ctype = cxt & PERL_CXTYPEMASK;
	if (pl->from_c) {
		pl->from_c = 0;
		if (ctype != PERL_CXT_NULL) {
			is->emitting = 0; /* C's runops ends here; this context is the next one's */
			return;
		}
	}
	pl->cxix--;
	retop = perl_u64(pl->cxbuf, o->cx_retop, PERL_MASK64(pl->cxbuf));
	if ((ctype == PERL_CXT_SUB || ctype == PERL_CXT_FORMAT) && !(cxt & PERL_CXP_SUB_RE_FAKE)) {
		err = perl_push_sub(st, is, pl, frames);
		if (err < 0)
			return;
		if (err > 0)
			retop = 1; /* stale: only a pushed sub's retop says who called it */
	} else if (ctype == PERL_CXT_EVAL && !(cxt & PERL_CXP_EVALBLOCK)) {
		optype = *(const __u16 *)(pl->cxbuf + (o->cx_u16 & (PERL_CX_READ_MAX - 2))) >> 7;
		type = optype == o->op_require || optype == o->op_dofile ? PERL_FRAME_FILE
									 : PERL_FRAME_EVAL;
		perl_push(st, is, pl, frames, type, 0);
	} else if (ctype == PERL_CXT_NULL) {
		perl_push(st, is, pl, frames, PERL_FRAME_SORT, 0);
		retop = 1; /* a block context has no retop */
	} else {
		ss_interp_count(FRAME_KIND_PERL, PERL_COUNTER_CONTEXTS);
		return; /* runs inside its frame: the statement stays that frame's */
	}
	pl->cop = perl_u64(pl->cxbuf, o->cx_oldcop, PERL_MASK64(pl->cxbuf));
	pl->from_c = !retop; /* call_sv, eval_sv, or a call ending sort's block */
}

/* The native frame about to be emitted is a runops activation. 1: this iteration emitted
 * (or marked) something, 0: the native step runs now.
 */
static __always_inline int perl_activation(struct unwind_cursor *st, struct interp_state *is,
					   struct perl_cursor *pl, struct user_frame *frames)
{
	if (ss_interp_unsupported(st, is, frames, FRAME_KIND_PERL, PERL_COUNTER_STACKS,
				  PERL_MARKER_UNSUPPORTED, PERL_COUNTER_UNSUPPORTED))
		return 1;
	/* Another interpreter's walk ran in this stack (Perl embedded in it, or it in Perl): its
	 * cursor shares the union with Perl's, so Perl's is not trustworthy any more.
	 */
	if (is->started & PERL_UNION_PEERS) {
		ss_interp_refuse(st, is, frames, FRAME_KIND_PERL, PERL_MARKER_MIXED,
				 PERL_COUNTER_MIXED);
		return 1;
	}
	if (ss_interp_first(is, FRAME_KIND_PERL) && perl_start(st, is, pl, frames) < 0) {
		ss_interp_stop(is, FRAME_KIND_PERL);
		return 1;
	}
	pl->run_frames = 0;
	is->emitting = FRAME_KIND_PERL;
	perl_emit(st, is, pl, frames);
	return 1;
}

#endif
