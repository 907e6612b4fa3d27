/* Runtime frames in the native walk: the dispatch every runtime's eBPF walk plugs into
 * (included by sampler.bpf.c, and by the replay tests, after native_unwind.h).
 *
 * Before each native step, ss_interp_step() looks at the native frame about to be emitted:
 * when its pc lies in a range that "interp_files" gives for its file (the native code that runs
 * a runtime's frames: CPython's eval loop), the runtime's walk emits that activation's frames
 * first, one per loop iteration, and the native step follows. Decided and measured: the walks
 * are inlined into the one bpf_loop step rather than tail-called per runtime (a tail call per
 * activation would cost a program switch for every eval frame, and the verifier sees one
 * step per program either way); docs/ARCHITECTURE.md has the instruction counts.
 *
 * Hooks the includer provides, besides native_unwind.h's:
 *   static struct interp_file *ss_interp_file(__u64 file_id);         NULL: not a runtime
 *   static struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime); NULL: not attached
 *   static void ss_interp_count(__u32 runtime, __u32 which);          one of its counters
 *
 * Code in anonymous memory (a JIT's code, HotSpot's code cache, V8's code space) has no file
 * and no unwind table: a runtime that owns such code registers its ranges per process
 * ("interp_code": tgid -> up to INTERP_CODE_RANGES [start, end) ranges with their runtime,
 * written by the registry from what the runtime reports). When the native frame about to be
 * emitted lies in no mapped file but in such a range, ss_interp_step() hands it to that
 * runtime's code-range walker instead of the native step (which would end with
 * "[unwind: unmapped pc]" or guess through the frame pointer): the walker emits that frame
 * and moves the native cursor (pc, sp, fp) to the caller itself, so the walk continues in the
 * caller, native or managed. HotSpot's (hotspot_walk.h) is the first; V8's (v8_walk.h) uses
 * it for its JIT code, and its file range (node's embedded builtins) dispatches to the same
 * walk, which moves the native cursor there too: the one file-range runtime that does.
 * A code-range walker keeps no state between calls (its scratch lives outside the union of
 * interpreter cursors, which persist across steps).
 *
 * Hooks the includer provides for it:
 *   static struct interp_code *ss_interp_code(__u32 pid);             NULL: no ranges
 *
 * Invariants: a runtime step appends at most one frame; an interpreter walk never moves the
 * native cursor; a code-range walker moves it only to a caller whose sp is strictly above
 * (or ends the stack), or, at the same sp, to a pc in a mapped file (PHP: JIT code runs on
 * execute_ex's frame), which no code-range walker sees again; runtime cursors only move to older frames, so a sample cannot loop
 * and stays bounded by the loop's step count. Adding a runtime: its cursor in the union below,
 * its walk's include, and one case in each switch (a code-range walker: its case in
 * ss_interp_code_step()).
 */
#ifndef STACKSCOPE_INTERP_WALK_H
#define STACKSCOPE_INTERP_WALK_H

#include "abi.h"

/* Runtime frames stop this many frames before the end of the record (a marker frame says
 * so), leaving room for the native callers.
 */
#define INTERP_NATIVE_RESERVE 48

static __always_inline void ss_interp_marker(struct unwind_cursor *st, struct user_frame *frames,
					     __u8 runtime, __u64 what)
{
	__u32 idx = st->frame_cnt;
	struct user_frame *fr;

	if (idx >= SS_MAX_USER_FRAMES)
		return;
	/* keeps the mask below: without it, 6.1's verifier loses the bound on a spilled idx */
	barrier_var(idx);
	fr = &frames[idx & (SS_MAX_USER_FRAMES - 1)];
	fr->addr = 0;
	fr->file_id = what;
	fr->flags = 0;
	fr->kind = runtime;
	fr->pad[0] = fr->pad[1] = fr->pad[2] = 0;
	st->frame_cnt = idx + 1;
}

/* What every runtime's walk may read and update. */
struct interp_state {
	__u64 checked_pc; /* the native frame last checked for being a runtime activation */
	__u64 checked_sp;
	__u64 file_id;      /* the interpreter file whose description `file` holds (0: none) */
	__u64 miss_file_id; /* the last file known not to be an interpreter */
	__u64 fsbase;       /* the sampled thread's TLS base */
	struct interp_file file;
	__u8 emitting;   /* the runtime whose activation is being emitted (0: none) */
	__u8 off;        /* bit per runtime: no (more) frames of it in this sample */
	__u8 started;    /* bit per runtime: its per-sample start ran */
	__u8 code_state; /* 0: "interp_code" not looked up yet, 1: `code` holds it, 2: none */
	__u8 pad[4];
	struct interp_code code; /* the sampled process's code ranges (code_state 1) */
};

#include "interp/python_walk.h" /* one line per runtime */
#include "interp/hotspot_walk.h"
#include "interp/ruby_walk.h"
#include "interp/php_walk.h"
#include "interp/perl_walk.h"
#include "interp/v8_walk.h"

struct interp_cursor {
	struct interp_state is;
	union { /* the interpreter walks' own cursors */
		struct py_cursor py;
		struct rb_cursor rb;
		struct php_cursor php;
		struct perl_cursor perl;
	};
	union { /* the code-range walkers' scratch (nothing kept between steps) */
		struct hs_cursor hs;
		struct v8_cursor v8;
	};
};

/* Reset for a new sample (the runtimes' read buffers need no clearing). */
static __always_inline void ss_interp_reset(struct interp_cursor *ic, __u64 fsbase)
{
	__builtin_memset(&ic->is, 0, sizeof(ic->is));
	py_reset(&ic->py);
	rb_reset(&ic->rb);
	php_reset(&ic->php);
	perl_reset(&ic->perl);
	ic->is.fsbase = fsbase;
}

/* The native frame about to be emitted (pc, lookup_pc = pc or pc - 1 for return addresses)
 * lies in no mapped file: 1 when a runtime's code-range walker took this iteration.
 */
static __always_inline int ss_interp_code_step(struct unwind_cursor *st, struct interp_cursor *ic,
					       struct user_frame *frames, __u64 lookup_pc)
{
	struct interp_state *is = &ic->is;
	struct interp_code *c;
	__u8 runtime = 0;
	int i;

	if (is->code_state == 0) {
		c = ss_interp_code(st->pid);
		is->code_state = 2;
		if (c) {
			is->code = *c;
			is->code_state = 1;
		}
	}
	if (is->code_state == 1)
		for (i = 0; i < INTERP_CODE_RANGES; i++)
			if (lookup_pc >= is->code.r[i].start && lookup_pc < is->code.r[i].end)
				runtime = is->code.r[i].runtime;
	switch (runtime) {
	case FRAME_KIND_HOTSPOT:
		return hs_code_step(st, is, &ic->hs, frames);
	case FRAME_KIND_PHP: /* JIT code on an execute_ex frame: the interpreter's cursor */
		return php_code_step(st, is, &ic->php, frames);
	case 0: /* in no range: V8's code space before userspace read the process's maps? */
	case FRAME_KIND_V8:
		return v8_step(st, is, &ic->v8, frames, 0, runtime == 0);
	}
	return 0;
}

/* Called before every native step. Returns 1 when this iteration was used for a runtime (the
 * native step must wait), 0 when the native step should run now.
 */
static __always_inline int ss_interp_step(struct unwind_cursor *st, struct interp_cursor *ic,
					  struct user_frame *frames)
{
	struct interp_state *is = &ic->is;
	__u64 pc, lookup_pc, addr, file_id;
	struct mapping_info *m;
	struct interp_file *inf;
	__u8 bit;

	if (st->done)
		return 0;
	switch (is->emitting) {
	case FRAME_KIND_CPYTHON:
		py_emit(st, is, &ic->py, frames);
		return 1;
	case FRAME_KIND_RUBY:
		rb_emit(st, is, &ic->rb, frames);
		return 1;
	case FRAME_KIND_PHP:
		php_emit(st, is, &ic->php, frames);
		return 1;
	case FRAME_KIND_PERL:
		perl_emit(st, is, &ic->perl, frames);
		return 1;
	}
	pc = st->regs[DWARF_RIP];
	if (pc == is->checked_pc && st->regs[DWARF_RSP] == is->checked_sp)
		return 0;
	is->checked_pc = pc;
	is->checked_sp = st->regs[DWARF_RSP];
	if (pc < 0x1000 || pc > SS_USER_ADDR_MAX)
		return 0;
	lookup_pc = st->pc_is_return ? pc - 1 : pc;
	if (lookup_pc < st->last_map.start || lookup_pc >= st->last_map.end) {
		/* The same lookup the native step would do; it reuses last_map. */
		m = ss_lookup_mapping(st->pid, lookup_pc);
		st->lookups++;
		if (!m || !m->file_id)
			return ss_interp_code_step(st, ic, frames, lookup_pc);
		st->last_map = *m;
		st->last_file_flags = FILE_FLAGS_UNREAD;
	}
	file_id = st->last_map.file_id;
	if (file_id == is->miss_file_id)
		return 0;
	if (file_id != is->file_id) {
		inf = ss_interp_file(file_id);
		if (!inf) {
			is->miss_file_id = file_id;
			return 0;
		}
		is->file = *inf;
		is->file_id = file_id;
	}
	addr = lookup_pc - st->last_map.bias;
	if (!((addr >= is->file.range_start[0] && addr < is->file.range_end[0]) ||
	      (addr >= is->file.range_start[1] && addr < is->file.range_end[1])))
		return 0;
	if (is->file.runtime == FRAME_KIND_NATIVE || is->file.runtime >= 8)
		return 0;
	bit = 1 << is->file.runtime;
	if (is->off & bit)
		return 0;

	/* An activation of this runtime. */
	switch (is->file.runtime) {
	case FRAME_KIND_CPYTHON:
		return py_activation(st, is, &ic->py, frames);
	case FRAME_KIND_RUBY:
		return rb_activation(st, is, &ic->rb, frames);
	case FRAME_KIND_PHP:
		return php_activation(st, is, &ic->php, frames);
	case FRAME_KIND_PERL:
		return perl_activation(st, is, &ic->perl, frames);
	case FRAME_KIND_V8: /* node's builtins: a code-range walk that moves the cursor */
		return v8_step(st, is, &ic->v8, frames, 1, 0);
	}
	return 0;
}

#endif
