/* Runtime frames in the native walk: the dispatch every runtime's eBPF walk plugs into, and the
 * only includer of the walks (included by sampler.bpf.c, and by the unit tests through
 * tests/lib/bpf_world.h or their own hooks).
 *
 * Before each native step, ss_interp_step() looks at the native frame about to be emitted:
 * when its pc lies in a range that "interp_files" gives for its file (the native code that runs
 * a runtime's frames: CPython's eval loop), the runtime's walk emits that activation's frames
 * first, one per loop iteration, and the native step follows. Decided and measured: the walks
 * are inlined into the one bpf_loop step rather than tail-called per runtime (a tail call per
 * activation would cost a program switch for every eval frame, and the verifier sees one
 * step per program either way); docs/ARCHITECTURE.md has the instruction counts.
 *
 * The hooks the includer provides are native_unwind.h's and interp/common.h's.
 *
 * Code in anonymous memory (a JIT's code, HotSpot's code cache, V8's code space) has no file
 * and no unwind table: a runtime that owns such code registers its ranges per process
 * ("interp_code": tgid -> up to INTERP_CODE_RANGES [start, end) ranges with their runtime,
 * written by the registry from what the runtime reports). When the native frame about to be
 * emitted lies in no mapped file but in such a range, ss_interp_step() hands it to that
 * runtime's code-range walker instead of the native step (which would end with
 * "[unwind: unmapped pc]" or guess through the frame pointer): the walker emits that frame
 * and moves the native cursor (pc, sp, fp) to the caller itself, so the walk continues in the
 * caller, native or managed. HotSpot's (hotspot/walk.h) is the first; V8's (v8/walk.h) uses
 * it for its JIT code, and its file range (node's embedded builtins) dispatches to the same
 * walk, which moves the native cursor there too: the one file-range runtime that does.
 * A code-range walker keeps no state between calls (its scratch lives outside the union of
 * interpreter cursors, which persist across steps).
 *
 * Invariants: a runtime step appends at most one frame; an interpreter walk never moves the
 * native cursor; a code-range walker moves it only to a caller whose sp is strictly above
 * (or ends the stack), or, at the same sp, to a pc in a mapped file (PHP: JIT code runs on
 * execute_ex's frame), which no code-range walker sees again; runtime cursors only move to
 * older frames, so a sample cannot loop and stays bounded by the loop's step count.
 *
 * Adding a runtime: its folder (bpf/interp/<runtime>/walk.h and bpf_abi.h), its line in
 * INTERP_RUNTIMES (bpf/abi.h: its frame kind, ABI members and registry entry) with its
 * bpf_abi.h's include, and its line in INTERP_WALKS below with its walk's include, from which
 * the cursor unions, the reset and the three switches are generated. What a line promises of
 * the walk, by prefix p:
 *   struct p_cursor;
 *   cursor KEEP (an interpreter's: kept across steps while `emitting` is its kind, in the
 *     first union, which its activations must not trust after another's, PERL_UNION_PEERS):
 *     p_reset(cursor) at each sample, p_emit(st, is, cursor, frames) for its next frame;
 *     SCRATCH (a code-range walker's, for one step, in the second union);
 *   file 1: int p_activation(st, is, cursor, frames) for a native frame in its file ranges;
 *   code 1: int p_code_step(st, is, cursor, frames, guess) for a pc in its code ranges, 2: and
 *     also for a pc in no mapping and no range (guess 1; one runtime at most).
 */
#ifndef STACKSCOPE_INTERP_DISPATCH_H
#define STACKSCOPE_INTERP_DISPATCH_H

#include "interp/common.h"

#include "interp/python/walk.h" /* with a line in INTERP_WALKS */
#include "interp/hotspot/walk.h"
#include "interp/ruby/walk.h"
#include "interp/php/walk.h"
#include "interp/perl/walk.h"
#include "interp/v8/walk.h"
#include "interp/luajit/walk.h"
#include "interp/beam/walk.h"

/* X(kind, prefix, cursor, file, code): FRAME_KIND_<kind> and the walk's names, as above. */
/* clang-format off */
#define INTERP_WALKS(X)                          \
	X(CPYTHON, py,   KEEP,    1, 0)          \
	X(HOTSPOT, hs,   SCRATCH, 0, 1)          \
	X(RUBY,    rb,   KEEP,    1, 0)          \
	X(PHP,     php,  KEEP,    1, 1)          \
	X(PERL,    perl, KEEP,    1, 0)          \
	X(V8,      v8,   SCRATCH, 1, 2)          \
	X(LUAJIT,  luajit, KEEP,    1, 1)        \
	X(BEAM,    beam, KEEP,    1, 1)          \
	/* one line per runtime, with its include above */

/* What the columns generate: each X below expands to its text for the runtimes it applies to. */
#define INTERP_KEEP_KEEP(...) __VA_ARGS__
#define INTERP_KEEP_SCRATCH(...)
#define INTERP_SCRATCH_KEEP(...)
#define INTERP_SCRATCH_SCRATCH(...) __VA_ARGS__
#define INTERP_IF_0(...)
#define INTERP_IF_1(...) __VA_ARGS__
#define INTERP_IF_2(...) __VA_ARGS__
#define INTERP_GUESS_0(...)
#define INTERP_GUESS_1(...)
#define INTERP_GUESS_2(...) __VA_ARGS__

#define INTERP_KEPT_CURSOR(K, p, cursor, file, code) INTERP_KEEP_##cursor(struct p##_cursor p;)
#define INTERP_SCRATCH_CURSOR(K, p, cursor, file, code) \
	INTERP_SCRATCH_##cursor(struct p##_cursor p;)
#define INTERP_RESET(K, p, cursor, file, code) INTERP_KEEP_##cursor(p##_reset(&ic->p);)
#define INTERP_EMIT_CASE(K, p, cursor, file, code) \
	INTERP_KEEP_##cursor(case FRAME_KIND_##K: p##_emit(st, is, &ic->p, frames); return 1;)
#define INTERP_FILE_CASE(K, p, cursor, file, code) \
	INTERP_IF_##file(case FRAME_KIND_##K: return p##_activation(st, is, &ic->p, frames);)
#define INTERP_CODE_CASE(K, p, cursor, file, code) \
	INTERP_GUESS_##code(case 0:) \
	INTERP_IF_##code(case FRAME_KIND_##K: \
		return p##_code_step(st, is, &ic->p, frames, runtime == 0);)
/* clang-format on */

struct interp_cursor {
	struct interp_state is;
	union { /* the interpreter walks' own cursors */
		INTERP_WALKS(INTERP_KEPT_CURSOR)
	};
	union { /* the code-range walkers' scratch (nothing kept between steps) */
		INTERP_WALKS(INTERP_SCRATCH_CURSOR)
	};
};

/* Reset for a new sample (the runtimes' read buffers need no clearing; nor do the state's file
 * and code, read only once file_id and code_state say that this sample filled them: 200 of its
 * 256 bytes, three cache lines a sample of a process without a runtime never touches): the
 * thread's TLS base, and its pid when it is its process's main thread (0: another thread).
 */
static __always_inline void ss_interp_reset(struct interp_cursor *ic, __u64 fsbase, __u32 main_pid)
{
	struct interp_state *is = &ic->is;

	is->checked_pc = 0;
	is->checked_sp = 0;
	is->file_id = 0;
	is->miss_file_id = 0;
	is->fsbase = fsbase;
	is->emitting = 0;
	is->code_state = 0;
	is->off = 0;
	is->started = 0;
	is->moved_after_defer = 0;
	is->main_pid = main_pid;
	INTERP_WALKS(INTERP_RESET)
}

/* The native frame about to be emitted (pc, lookup_pc = pc or pc - 1 for return addresses)
 * lies in no mapped file: 1 when a runtime's code-range walker took this iteration.
 */
static __always_inline int ss_interp_code_step(struct unwind_cursor *st, struct interp_cursor *ic,
					       struct user_frame *frames, __u64 lookup_pc)
{
	struct interp_state *is = &ic->is;
	__u8 runtime = 0;
	int i;

	if (ss_interp_code_ranges(st, is))
		for (i = 0; i < INTERP_CODE_RANGES; i++)
			if (lookup_pc >= is->code.r[i].start && lookup_pc < is->code.r[i].end)
				runtime = is->code.r[i].runtime;
	/* Its walker moves the native cursor; past a defer point the replay (native steps only)
	 * could not follow it: deferred.h keeps such a sample as walked here. (The guessing
	 * walker, V8's, marks its runtime started when it takes a frame.)
	 */
	if (runtime && st->defer_cnt)
		is->moved_after_defer = 1;
	switch (runtime) {
		INTERP_WALKS(INTERP_CODE_CASE)
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
	__u16 bit;

	if (st->done)
		return 0;
	switch (is->emitting) {
		INTERP_WALKS(INTERP_EMIT_CASE)
	}
	pc = st->regs[DWARF_RIP];
	if (pc == is->checked_pc && st->regs[DWARF_RSP] == is->checked_sp)
		return 0;
	is->checked_pc = pc;
	is->checked_sp = st->regs[DWARF_RSP];
	if (pc < 0x1000 || pc > SS_USER_ADDR_MAX)
		return 0;
	lookup_pc = st->pc_is_return ? pc - 1 : pc;
	if ((lookup_pc < st->last_map.start || lookup_pc >= st->last_map.end) &&
	    !SS_FRAME_MEMO(st, lookup_pc)) {
		/* The same lookup the native step would do; it reuses last_map (and the memo's
		 * answer, fetched here). */
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
	if (is->file.runtime == FRAME_KIND_NATIVE || is->file.runtime >= INTERP_RUNTIME_MAX)
		return 0;
	bit = 1 << is->file.runtime;
	if (is->off & bit)
		return 0;

	/* An activation of this runtime. V8's file range (node's embedded builtins) is the one
	 * whose walk moves the native cursor: past a defer point, no replay can follow it.
	 */
	if (st->defer_cnt && is->file.runtime == FRAME_KIND_V8)
		is->moved_after_defer = 1;
	switch (is->file.runtime) {
		INTERP_WALKS(INTERP_FILE_CASE)
	}
	return 0;
}

#endif
