/* CPython frames in the native walk (BPF only; included by sampler.bpf.c after
 * native_unwind.h).
 *
 * Before each native step, ss_py_step() looks at the frame about to be emitted: when its pc is
 * in the eval loop (_PyEval_EvalFrameDefault or its cold part) of a file in "interp_files",
 * the Python frames that this eval activation runs are emitted first, one per loop iteration,
 * and the native step follows. The Python frame chain of the sampled thread is found once per
 * sample: libc TSD slot of _PyRuntime's autoTSSkey -> PyThreadState -> current frame. That
 * slot is set for every thread with a thread state, also while it has released the GIL (the
 * TLS `_Py_tss_tstate` is not). Which frames belong to one activation: see enum
 * py_entry_kind in abi.h.
 *
 * Invariants: a Python step appends at most one frame and never moves the native cursor; the
 * Python cursor only moves to older frames, so a sample cannot loop; Python frames stop
 * PY_NATIVE_RESERVE frames before the end of the record (marker frame), leaving room for the
 * native callers. Every reason for missing Python frames is counted in "interp_counters".
 */
#ifndef STACKSCOPE_PYTHON_UNWIND_H
#define STACKSCOPE_PYTHON_UNWIND_H

#include "abi.h"

#define PY_NATIVE_RESERVE 48
#define PY_TSD_KEYS 32

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64); /* file_id */
	__type(value, struct interp_file);
} interp_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct interp_proc);
} interp_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, INTERP_COUNTER_CNT);
	__type(key, __u32);
	__type(value, __u64);
} interp_counters SEC(".maps");

enum py_state {
	PY_STATE_INIT = 0, /* no eval frame met yet in this sample */
	PY_STATE_READY,    /* thread's frame chain found; frame = next frame to emit */
	PY_STATE_OFF,      /* no (more) Python frames in this sample */
};

struct py_cursor {
	__u64 frame;          /* next Python frame (frame object / interpreter frame) to emit */
	__u64 fsbase;         /* the sampled thread's TLS base */
	__u64 checked_pc;     /* the native frame last checked for being an eval activation */
	__u64 checked_sp;
	__u64 file_id;        /* the interpreter file whose layout `file` holds (0: none) */
	__u64 miss_file_id;   /* the last file known not to be an interpreter */
	struct interp_file file;
	__u8 state;           /* enum py_state */
	__u8 emitting;        /* inside the run of one eval activation */
	__u8 seen;            /* an eval activation was met in this sample */
	__u8 pad[5];
	__u8 buf[PY_FRAME_READ_MAX];
};

static __always_inline void py_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&interp_counters, &which);

	if (c)
		*c += 1;
}

static __always_inline __u64 py_u64(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & (PY_FRAME_READ_MAX - 8)));
}

static __always_inline void py_marker(struct unwind_cursor *st, struct user_frame *frames,
				      enum py_marker what)
{
	__u32 idx = st->frame_cnt;
	struct user_frame *fr;

	if (idx >= SS_MAX_USER_FRAMES)
		return;
	fr = &frames[idx & (SS_MAX_USER_FRAMES - 1)];
	fr->addr = 0;
	fr->file_id = what;
	fr->flags = USER_FRAME_PYTHON;
	fr->pad = 0;
	st->frame_cnt = idx + 1;
}

/* Find the sampled thread's newest Python frame; 0, or < 0 with the reason counted. */
static __always_inline int py_start(struct unwind_cursor *st, struct py_cursor *py)
{
	const struct py_offsets *o = &py->file.py;
	struct interp_proc *proc;
	__u32 tss[2], pid = st->pid;
	__u64 tstate, interp, ts_interp, ptr;

	proc = bpf_map_lookup_elem(&interp_procs, &pid);
	if (!proc || proc->file_id != py->file_id) {
		py_count(INTERP_COUNTER_NO_PROC);
		return -1;
	}
	if (ss_read_user(tss, sizeof(tss), proc->runtime + o->rt_tss) < 0 ||
	    ss_read_user(&interp, sizeof(interp), proc->runtime + o->rt_interp_head) < 0) {
		py_count(INTERP_COUNTER_READ_FAILED);
		return -1;
	}
	if (!tss[0] || tss[1] >= PY_TSD_KEYS || !py->fsbase) {
		py_count(INTERP_COUNTER_TSS_UNSET);
		return -1;
	}
	if (ss_read_user(&tstate, sizeof(tstate), py->fsbase + proc->tsd_off + 16 * tss[1]) < 0) {
		py_count(INTERP_COUNTER_READ_FAILED);
		return -1;
	}
	if (!tstate) {
		py_count(INTERP_COUNTER_NO_TSTATE);
		return -1;
	}
	/* The check that makes a wrong layout or TSD offset harmless: the thread state must
	 * belong to the runtime's interpreter (sub-interpreters are not followed).
	 */
	if (ss_read_user(&ts_interp, sizeof(ts_interp), tstate + o->ts_interp) < 0 ||
	    ts_interp != interp || !interp) {
		py_count(INTERP_COUNTER_BAD_TSTATE);
		return -1;
	}
	if (ss_read_user(&ptr, sizeof(ptr), tstate + o->ts_frame) < 0) {
		py_count(INTERP_COUNTER_READ_FAILED);
		return -1;
	}
	if (o->cframe_frame != PY_NO_OFFSET && ptr &&
	    ss_read_user(&ptr, sizeof(ptr), ptr + o->cframe_frame) < 0) {
		py_count(INTERP_COUNTER_READ_FAILED);
		return -1;
	}
	py->frame = ptr;
	return 0;
}

/* Emit the next Python frame of the current run (or skip the run's shim frame). */
static __always_inline void py_emit(struct unwind_cursor *st, struct py_cursor *py,
				    struct user_frame *frames)
{
	const struct py_offsets *o = &py->file.py;
	__u32 idx = st->frame_cnt, instr = PY_INSTR_NONE, argcount = 0;
	__s32 firstlineno = 0, lasti;
	__u64 code, back, ip;
	struct user_frame *fr;
	__u8 entry = 0;

	if (!py->frame) {
		py->emitting = 0;
		return;
	}
	if (idx >= SS_MAX_USER_FRAMES - PY_NATIVE_RESERVE) {
		py_marker(st, frames, PY_MARKER_TRUNCATED);
		py_count(INTERP_COUNTER_TRUNCATED);
		py->state = PY_STATE_OFF;
		py->emitting = 0;
		return;
	}
	if (ss_read_user(py->buf, o->fr_read_sz & (PY_FRAME_READ_MAX - 1), py->frame) < 0) {
		py_marker(st, frames, PY_MARKER_READ_FAILED);
		py_count(INTERP_COUNTER_READ_FAILED);
		py->state = PY_STATE_OFF;
		py->emitting = 0;
		return;
	}
	back = py_u64(py->buf, o->fr_back);
	if (o->fr_entry != PY_NO_OFFSET)
		entry = py->buf[o->fr_entry & (PY_FRAME_READ_MAX - 1)];
	if (o->entry_kind == PY_ENTRY_SHIM && entry == PY_OWNED_BY_CSTACK) {
		/* The activation's own shim: the run ends, the native eval frame follows. */
		py->frame = back;
		py->emitting = 0;
		return;
	}
	code = py_u64(py->buf, o->fr_code);
	if (o->instr_kind == PY_INSTR_POINTER) {
		ip = py_u64(py->buf, o->fr_instr);
		if (ip >= code + o->co_code && ip - code - o->co_code < (1u << 30))
			instr = (__u32)(ip - code - o->co_code);
	} else {
		lasti = *(const __s32 *)(py->buf + (o->fr_instr & (PY_FRAME_READ_MAX - 4)));
		if (lasti >= 0 && lasti < (1 << 29))
			instr = o->instr_kind == PY_INSTR_LASTI_UNITS ? (__u32)lasti * 2 : (__u32)lasti;
	}
	if (ss_read_user(&argcount, sizeof(argcount), code + o->co_argcount) < 0 ||
	    ss_read_user(&firstlineno, sizeof(firstlineno), code + o->co_firstlineno) < 0) {
		/* Still emitted: userspace may be able to read it, or shows it as unreadable. */
		py_count(INTERP_COUNTER_READ_FAILED);
		argcount = 0;
		firstlineno = 0;
	}
	fr = &frames[idx & (SS_MAX_USER_FRAMES - 1)];
	fr->addr = code;
	fr->file_id = (__u64)instr << 32 | (__u32)((__u32)firstlineno + (argcount << 24));
	fr->flags = USER_FRAME_PYTHON;
	fr->pad = 0;
	st->frame_cnt = idx + 1;
	py_count(INTERP_COUNTER_FRAMES);

	py->frame = back;
	if (o->entry_kind == PY_ENTRY_EACH || (o->entry_kind == PY_ENTRY_FLAG && entry) || !back)
		py->emitting = 0;
}

/* Called before every native step. Returns 1 when this iteration was used for Python (the
 * native step must wait), 0 when the native step should run now.
 */
static __always_inline int ss_py_step(struct unwind_cursor *st, struct py_cursor *py,
				      struct user_frame *frames)
{
	__u64 pc, lookup_pc, addr, file_id;
	struct mapping_info *m;
	struct file_info *f;
	struct interp_file *inf;

	if (st->done)
		return 0;
	if (py->emitting) {
		py_emit(st, py, frames);
		return 1;
	}
	if (py->state == PY_STATE_OFF)
		return 0;
	pc = st->regs[DWARF_RIP];
	if (pc == py->checked_pc && st->regs[DWARF_RSP] == py->checked_sp)
		return 0;
	py->checked_pc = pc;
	py->checked_sp = st->regs[DWARF_RSP];
	if (pc < 0x1000 || pc > SS_USER_ADDR_MAX)
		return 0;
	lookup_pc = st->pc_is_return ? pc - 1 : pc;
	if (lookup_pc < st->last_map.start || lookup_pc >= st->last_map.end) {
		/* The same lookup the native step would do; it reuses last_map. */
		m = ss_lookup_mapping(st->pid, lookup_pc);
		st->lookups++;
		if (!m || !m->file_id)
			return 0;
		st->last_map = *m;
		f = ss_lookup_file(m->file_id);
		st->last_file_flags = f ? f->flags : 0;
	}
	file_id = st->last_map.file_id;
	if (file_id == py->miss_file_id)
		return 0;
	if (file_id != py->file_id) {
		inf = bpf_map_lookup_elem(&interp_files, &file_id);
		if (!inf) {
			py->miss_file_id = file_id;
			return 0;
		}
		py->file = *inf;
		py->file_id = file_id;
	}
	addr = lookup_pc - st->last_map.bias;
	if (!((addr >= py->file.eval_start[0] && addr < py->file.eval_end[0]) ||
	      (addr >= py->file.eval_start[1] && addr < py->file.eval_end[1])))
		return 0;

	/* An eval-loop activation. */
	if (!py->seen) {
		py->seen = 1;
		py_count(INTERP_COUNTER_STACKS);
	}
	if (py->file.kind != INTERP_PYTHON) {
		py_marker(st, frames, PY_MARKER_UNSUPPORTED);
		py_count(INTERP_COUNTER_UNSUPPORTED);
		py->state = PY_STATE_OFF;
		return 1;
	}
	if (py->state == PY_STATE_INIT) {
		if (py_start(st, py) < 0) {
			py->state = PY_STATE_OFF;
			return 0;
		}
		py->state = PY_STATE_READY;
	}
	if (!py->frame) {
		py_count(INTERP_COUNTER_RUN_EMPTY);
		return 0;
	}
	py->emitting = 1;
	py_emit(st, py, frames);
	return 1;
}

#endif
