/* What every runtime's eBPF walk uses (bpf/interp/<runtime>/walk.h): the state the walks share
 * within one sample, the frames they append, and how a runtime counts, stops or fails for the
 * rest of a sample. The dispatch that calls the walks is bpf/interp/dispatch.h.
 *
 * The walks touch the world only through functions the includer defines (sampler.bpf.c with
 * its maps; the unit tests over a process's memory, tests/lib/bpf_world.h, or recorded stacks),
 * besides native_unwind.h's. They are declared here, so that every walk header compiles on its
 * own (make test compiles each one so):
 *   ss_interp_file(file_id)       "interp_files": NULL, not a runtime's interpreter
 *   ss_interp_proc(pid, runtime)  "interp_procs": NULL, that runtime is not attached there
 *   ss_interp_count(runtime, i)   one of its counters ("interp_counters")
 *   ss_interp_code(pid)           "interp_code": NULL, the process has no code ranges
 *
 * Invariants: a frame is only appended below SS_MAX_USER_FRAMES, at the index the cursor says
 * (st->frame_cnt, then one more); a runtime's bit in `off` set in a sample stays set (no more of
 * its frames in that sample).
 */
#ifndef STACKSCOPE_INTERP_COMMON_H
#define STACKSCOPE_INTERP_COMMON_H

#include "abi.h"
#include "native_unwind.h"

static struct interp_file *ss_interp_file(__u64 file_id);
static struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime);
static void ss_interp_count(__u32 runtime, __u32 which);
static struct interp_code *ss_interp_code(__u32 pid);

/* Runtime frames stop this many frames before the end of the record (a marker frame says
 * so), leaving room for the native callers.
 */
#define INTERP_NATIVE_RESERVE 48

/* A runtime's bit in interp_state's off and started: room for INTERP_RUNTIME_MAX kinds. */
#define INTERP_BIT(runtime) (1 << (runtime))
#define INTERP_RUNTIME_MAX 16
_Static_assert(FRAME_KIND_CNT <= INTERP_RUNTIME_MAX, "a bit per runtime in interp_state");

/* What every runtime's walk may read and update. ss_interp_reset() (dispatch.h) resets the fields
 * before file, one cache line; file and code are read only while file_id and code_state say that
 * this sample filled them. A field added goes before file, and is reset there.
 */
struct interp_state {
	__u64 checked_pc; /* the native frame last checked for being a runtime activation */
	__u64 checked_sp;
	__u64 file_id;      /* the interpreter file whose description `file` holds (0: none) */
	__u64 miss_file_id; /* the last file known not to be an interpreter */
	__u64 fsbase;       /* the sampled thread's TLS base */
	__u8 emitting;      /* the runtime whose activation is being emitted (0: none) */
	__u8 code_state;    /* 0: "interp_code" not looked up yet, 1: `code` holds it, 2: none */
	__u16 off;          /* bit per runtime: no (more) frames of it in this sample */
	__u16 started;      /* bit per runtime: its per-sample start ran */
	__u8 moved_after_defer; /* a runtime moved the native cursor past the defer point (a
				 * code-range walker, V8's file range): no replay can redo that */
	__u8 pad[1];
	__u32 main_pid; /* the sampled thread's pid when it is its process's main thread, else 0 */
	__u32 pad2;
	struct interp_file file; /* file_id's (while file_id != 0) */
	struct interp_code code; /* the sampled process's code ranges (code_state 1) */
};

_Static_assert(__builtin_offsetof(struct interp_state, file) == 56 &&
		       sizeof(struct interp_state) ==
			       56 + sizeof(struct interp_file) + sizeof(struct interp_code),
	       "ss_interp_reset() resets the 56 bytes before file, file and code are filled first");

/* Write frames[idx] and count it: idx must be st->frame_cnt, below SS_MAX_USER_FRAMES (the
 * caller checked; the mask keeps the verifier's bound).
 */
static __always_inline void ss_interp_put(struct unwind_cursor *st, struct user_frame *frames,
					  __u32 idx, __u8 kind, __u64 addr, __u64 file_id,
					  __u32 flags)
{
	struct user_frame *fr;

	/* keeps the mask below: without it, 6.1's verifier loses the bound on a spilled idx */
	barrier_var(idx);
	fr = &frames[idx & (SS_MAX_USER_FRAMES - 1)];
	fr->addr = addr;
	fr->file_id = file_id;
	fr->flags = flags;
	fr->kind = kind;
	fr->pad[0] = fr->pad[1] = fr->pad[2] = 0;
	st->frame_cnt = idx + 1;
}

/* Append one frame, or nothing when the record is full. */
static __always_inline void ss_interp_frame(struct unwind_cursor *st, struct user_frame *frames,
					    __u8 kind, __u64 addr, __u64 file_id, __u32 flags)
{
	__u32 idx = st->frame_cnt;

	if (idx >= SS_MAX_USER_FRAMES)
		return;
	ss_interp_put(st, frames, idx, kind, addr, file_id, flags);
}

/* A runtime's pseudo-frame: addr 0, file_id its marker code (bpf/abi.h). */
static __always_inline void ss_interp_marker(struct unwind_cursor *st, struct user_frame *frames,
					     __u8 runtime, __u64 what)
{
	ss_interp_frame(st, frames, runtime, 0, what, 0);
}

/* A frame of a code-range walker (HotSpot, V8: their *_abi.h): addr, then file_id = sub << 60 |
 * pos (28 bits, all ones: none) << 32 | cookie; a return address as the native walk marks it.
 */
#define INTERP_POS_NONE 0xfffffffu

static __always_inline void ss_interp_code_frame(struct unwind_cursor *st,
						 struct user_frame *frames, __u8 runtime,
						 __u64 addr, __u64 sub, __u64 pos, __u32 cookie)
{
	ss_interp_frame(st, frames, runtime, addr,
			sub << 60 | (pos & INTERP_POS_NONE) << 32 | cookie,
			st->pc_is_return ? USER_FRAME_RETURN : 0);
}

/* No more frames of this runtime in this sample. */
static __always_inline void ss_interp_stop(struct interp_state *is, __u8 runtime)
{
	is->off |= INTERP_BIT(runtime);
	is->emitting = 0;
}

/* A code-range walker's marker, its counter, and no more frames of it in this sample (it
 * emits no runs: `emitting` is never its own).
 */
static __always_inline void ss_interp_code_fail(struct unwind_cursor *st, struct interp_state *is,
						struct user_frame *frames, __u8 runtime,
						__u64 marker, __u32 counter)
{
	ss_interp_marker(st, frames, runtime, marker);
	ss_interp_count(runtime, counter);
	is->off |= INTERP_BIT(runtime);
}

/* A marker, its counter, and no more frames of this runtime in this sample. */
static __always_inline void ss_interp_fail(struct unwind_cursor *st, struct interp_state *is,
					   struct user_frame *frames, __u8 runtime, __u64 marker,
					   __u32 counter)
{
	ss_interp_marker(st, frames, runtime, marker);
	ss_interp_count(runtime, counter);
	ss_interp_stop(is, runtime);
}

/* An interpreter's frames end before they started in this sample: a marker (a version its walk
 * does not understand, a cursor another interpreter used), its counter, no more of its frames.
 */
static __always_inline void ss_interp_refuse(struct unwind_cursor *st, struct interp_state *is,
					     struct user_frame *frames, __u8 runtime, __u64 marker,
					     __u32 counter)
{
	is->started |= INTERP_BIT(runtime);
	ss_interp_fail(st, is, frames, runtime, marker, counter);
}

/* An interpreter's activation begins: the sample's first counts as one of its stacks. 1 when its
 * file is a version the walk does not understand (refused: the iteration was used), else 0.
 */
static __always_inline int ss_interp_unsupported(struct unwind_cursor *st, struct interp_state *is,
						 struct user_frame *frames, __u8 runtime,
						 __u32 stacks_counter, __u64 marker, __u32 counter)
{
	if (!(is->started & INTERP_BIT(runtime)))
		ss_interp_count(runtime, stacks_counter);
	if (is->file.supported)
		return 0;
	ss_interp_refuse(st, is, frames, runtime, marker, counter);
	return 1;
}

/* A runtime's per-sample start failed for the reason counted: < 0, for the start to return. */
static __always_inline int ss_interp_miss(__u8 runtime, __u32 counter)
{
	ss_interp_count(runtime, counter);
	return -1;
}

/* 1 the first time in this sample that this runtime starts (then marked started), else 0. */
static __always_inline int ss_interp_first(struct interp_state *is, __u8 runtime)
{
	if (is->started & INTERP_BIT(runtime))
		return 0;
	is->started |= INTERP_BIT(runtime);
	return 1;
}

/* 1 when the record has no room left for this interpreter's frames (INTERP_NATIVE_RESERVE
 * frames stay for the native callers): its marker, counter, and no more of its frames.
 */
static __always_inline int ss_interp_full(struct unwind_cursor *st, struct interp_state *is,
					  struct user_frame *frames, __u8 runtime, __u64 marker,
					  __u32 counter)
{
	if (st->frame_cnt < SS_MAX_USER_FRAMES - INTERP_NATIVE_RESERVE)
		return 0;
	ss_interp_fail(st, is, frames, runtime, marker, counter);
	return 1;
}

/* The sampled process's code ranges, looked up once a sample: 1 when is->code holds them. */
static __always_inline int ss_interp_code_ranges(struct unwind_cursor *st, struct interp_state *is)
{
	struct interp_code *c;

	if (is->code_state == 0) {
		c = ss_interp_code(st->pid);
		is->code_state = 2;
		if (c) {
			is->code = *c;
			is->code_state = 1;
		}
	}
	return is->code_state == 1;
}

#endif
