/* CPython frames in the native walk (included by bpf/interp/dispatch.h, which calls it when the
 * native frame about to be emitted is in an interpreter's eval loop).
 *
 * py_activation() starts the run of one eval activation: the Python frames it runs are
 * emitted first, one per loop iteration (py_emit()), then the native eval frame. The Python
 * frame chain of the sampled thread is found once per sample: the thread's PyThreadState ->
 * current frame, the thread state being the libc TSD slot of the gilstate pthread key (3.6:
 * autoTLSkey, 3.7+: _PyRuntime's autoTSSkey), found from the thread pointer (the main thread's
 * as userspace found it: bpf_abi.h, main_tp). That slot is set for every thread with a thread
 * state, also while it has released the GIL (the TLS `_Py_tss_tstate` is not). Which frames
 * belong to one activation: enum py_entry_kind (bpf_abi.h).
 *
 * Only the includer's hooks touch the world (ss_read_user, ss_interp_proc, ss_interp_count),
 * so this walk also runs in the kernel-free replay tests. Every reason for missing Python
 * frames is counted (enum py_counter).
 */
#ifndef STACKSCOPE_PYTHON_WALK_H
#define STACKSCOPE_PYTHON_WALK_H

#include "interp/common.h"
#include "interp/python/bpf_abi.h"

#define PY_TSD_KEYS 32

struct py_cursor {
	__u64 frame; /* next Python frame (frame object / interpreter frame) to emit */
	__u8 buf[PY_FRAME_READ_MAX];
};

static __always_inline void py_reset(struct py_cursor *py)
{
	py->frame = 0;
}

static __always_inline __u64 py_u64(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & (PY_FRAME_READ_MAX - 8)));
}

/* Find the sampled thread's newest Python frame; 0, or < 0 with the reason counted. */
static __always_inline int py_start(struct unwind_cursor *st, struct interp_state *is,
				    struct py_cursor *py)
{
	const struct py_offsets *o = &is->file.py.off;
	struct interp_proc *proc;
	__u32 tss[2], key;
	__u64 tstate, interp, ts_interp, ptr, tp = is->fsbase;

	proc = ss_interp_proc(st->pid, FRAME_KIND_CPYTHON);
	if (!proc || proc->file_id != is->file_id)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_NO_PROC);
	if (ss_read_user(tss, sizeof(tss), proc->py.tss) < 0 ||
	    ss_read_user(&interp, sizeof(interp), proc->py.interp_head) < 0)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_READ_FAILED);
	/* Py_tss_t { initialized, key }, or 3.6's int key (-1, so >= PY_TSD_KEYS, until set) */
	key = o->tstate_kind == PY_TSTATE_KEY ? tss[0] : tss[0] ? tss[1] : PY_TSD_KEYS;
	/* the main thread's own pointer as userspace found it (bpf_abi.h: the task's copy may
	 * be the old image's); not for a child forked and not known yet (proc: its parent's)
	 */
	if (proc->py.main_tp && is->main_pid == st->pid)
		tp = proc->py.main_tp;
	if (key >= PY_TSD_KEYS || !tp)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_TSS_UNSET);
	if (ss_read_user(&tstate, sizeof(tstate), tp + proc->py.tsd_off + 16 * key) < 0)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_READ_FAILED);
	if (!tstate)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_NO_TSTATE);
	/* The check that makes a wrong layout or TSD offset harmless: the thread state must
	 * belong to the runtime's interpreter (sub-interpreters are not followed).
	 */
	if (ss_read_user(&ts_interp, sizeof(ts_interp), tstate + o->ts_interp) < 0 ||
	    ts_interp != interp || !interp)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_BAD_TSTATE);
	if (ss_read_user(&ptr, sizeof(ptr), tstate + o->ts_frame) < 0)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_READ_FAILED);
	if (o->cframe_frame != PY_NO_OFFSET && ptr &&
	    ss_read_user(&ptr, sizeof(ptr), ptr + o->cframe_frame) < 0)
		return ss_interp_miss(FRAME_KIND_CPYTHON, PY_COUNTER_READ_FAILED);
	py->frame = ptr;
	return 0;
}

/* Emit the next Python frame of the current run (or skip the run's shim frame). */
static __always_inline void py_emit(struct unwind_cursor *st, struct interp_state *is,
				    struct py_cursor *py, struct user_frame *frames)
{
	const struct py_offsets *o = &is->file.py.off;
	__u32 idx = st->frame_cnt, instr = PY_INSTR_NONE, argcount = 0;
	__s32 firstlineno = 0, lasti;
	__u64 code, back, ip;
	__u8 entry = 0;

	if (!py->frame) {
		is->emitting = 0;
		return;
	}
	if (ss_interp_full(st, is, frames, FRAME_KIND_CPYTHON, PY_MARKER_TRUNCATED,
			   PY_COUNTER_TRUNCATED))
		return;
	if (ss_read_user(py->buf, o->fr_read_sz & (PY_FRAME_READ_MAX - 1), py->frame) < 0) {
		ss_interp_fail(st, is, frames, FRAME_KIND_CPYTHON, PY_MARKER_READ_FAILED,
			       PY_COUNTER_READ_FAILED);
		return;
	}
	back = py_u64(py->buf, o->fr_back);
	if (o->fr_entry != PY_NO_OFFSET)
		entry = py->buf[o->fr_entry & (PY_FRAME_READ_MAX - 1)];
	if (o->entry_kind == PY_ENTRY_SHIM && entry >= PY_OWNER_ENTRY) {
		/* The activation's own entry frame: the run ends, the native eval frame follows. */
		py->frame = back;
		is->emitting = 0;
		return;
	}
	code = py_u64(py->buf, o->fr_code) & ~(__u64)o->fr_code_tags;
	if (o->instr_kind == PY_INSTR_POINTER) {
		ip = py_u64(py->buf, o->fr_instr);
		if (ip >= code + o->co_code && ip - code - o->co_code < (1u << 30))
			instr = (__u32)(ip - code - o->co_code);
	} else {
		lasti = *(const __s32 *)(py->buf + (o->fr_instr & (PY_FRAME_READ_MAX - 4)));
		if (lasti >= 0 && lasti < (1 << 29))
			instr = o->instr_kind == PY_INSTR_LASTI_UNITS ? (__u32)lasti * 2
								      : (__u32)lasti;
	}
	if (ss_read_user(&argcount, sizeof(argcount), code + o->co_argcount) < 0 ||
	    ss_read_user(&firstlineno, sizeof(firstlineno), code + o->co_firstlineno) < 0) {
		/* Still emitted: userspace may be able to read it, or shows it as unreadable. */
		ss_interp_count(FRAME_KIND_CPYTHON, PY_COUNTER_READ_FAILED);
		argcount = 0;
		firstlineno = 0;
	}
	ss_interp_put(st, frames, idx, FRAME_KIND_CPYTHON, code,
		      (__u64)instr << 32 | (__u32)((__u32)firstlineno + (argcount << 24)), 0);
	ss_interp_count(FRAME_KIND_CPYTHON, PY_COUNTER_FRAMES);

	py->frame = back;
	if (o->entry_kind == PY_ENTRY_EACH || (o->entry_kind == PY_ENTRY_FLAG && entry) || !back)
		is->emitting = 0;
}

/* The native frame about to be emitted is an eval-loop activation. 1: this iteration emitted
 * (or marked) something, 0: the native step runs now.
 */
static __always_inline int py_activation(struct unwind_cursor *st, struct interp_state *is,
					 struct py_cursor *py, struct user_frame *frames)
{
	if (ss_interp_unsupported(st, is, frames, FRAME_KIND_CPYTHON, PY_COUNTER_STACKS,
				  PY_MARKER_UNSUPPORTED, PY_COUNTER_UNSUPPORTED))
		return 1;
	if (ss_interp_first(is, FRAME_KIND_CPYTHON) && py_start(st, is, py) < 0) {
		ss_interp_stop(is, FRAME_KIND_CPYTHON);
		return 0;
	}
	if (!py->frame) {
		ss_interp_count(FRAME_KIND_CPYTHON, PY_COUNTER_RUN_EMPTY);
		return 0;
	}
	is->emitting = FRAME_KIND_CPYTHON;
	py_emit(st, is, py, frames);
	return 1;
}

#endif
