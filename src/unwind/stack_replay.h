/* The native unwinder step (bpf/native_unwind.h, compiled here as C, unchanged) run in
 * userspace over a copy of a user stack: the second half of deferred unwinding.
 *
 * A deferred sample (bpf/abi.h, struct stack_copy_record) carries the unwinder's cursor at its
 * defer point and pages of its user stack. stack_replay__run() resumes the walk there, one step
 * at a time as eBPF does it (at most 2 * SS_MAX_USER_FRAMES + 1 steps), with memory reads served
 * from the copy only, and the mapping / file / table lookups answered by the caller's world:
 * the same values the BPF maps hold (or will hold), so a replay of a walk whose tables existed
 * gives eBPF's frames bit for bit.
 *
 * Outcomes: REPLAY_DONE (frames and end set), REPLAY_WAIT (a lookup said "not known yet": the
 * frames are not touched beyond the defer point; run again later). A read outside the copy that
 * ends the walk ends it with UNWIND_END_STACK_COPY instead of the reason eBPF would give.
 *
 * Not thread-safe: one replay at a time per process (the world is a file-static pointer while
 * a replay runs: the step's hooks take no context).
 */
#ifndef STACKSCOPE_STACK_REPLAY_H
#define STACKSCOPE_STACK_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"

/* What the walk looks up. Returned pointers are read before the next call of the same hook. */
struct replay_world {
	/* The mapping of pid holding pc (NULL: none); *wait = true when it may appear later. */
	const struct mapping_info *(*mapping)(void *ctx, uint32_t pid, uint64_t pc, bool *wait);
	/* The file's flags as eBPF sees them (NULL: absent); *wait = true while its table is
	 * still to be built.
	 */
	const struct file_info *(*file)(void *ctx, uint64_t file_id, bool *wait);
	const struct unwind_page *(*page)(void *ctx, uint64_t file_id, uint64_t page);
	/* Whether the entry pool's segment exists (bpf/abi.h), and entry index of it (NULL:
	 * unreadable).
	 */
	bool (*segment)(void *ctx, uint32_t segment);
	const struct unwind_entry *(*entry)(void *ctx, uint32_t segment, uint32_t index);
	const struct unwind_rule *(*rule)(void *ctx, uint32_t index);
	void *ctx;
};

enum stack_replay_outcome {
	REPLAY_DONE = 0,
	REPLAY_WAIT = 1,
};

/* Resume sr's walk for pid (whose mappings to use): frames[sr->at.frame_idx ...] are written
 * (frames[] holds SS_MAX_USER_FRAMES), *frame_cnt and *end set on REPLAY_DONE. stack_len: the
 * bytes from sr->stack actually present (checked against what the record says by the caller),
 * up to SS_DEFER_STACK_PARTS * sizeof(sr->stack): a copy sent in parts is joined in one
 * allocation whose stack bytes run on past sr->stack[] (deferred.c).
 * Returns enum stack_replay_outcome, or -EINVAL for a defer point outside the record's bounds.
 */
int stack_replay__run(const struct replay_world *w, const struct stack_copy_record *sr,
		      size_t stack_len, uint32_t pid, struct user_frame *frames,
		      uint32_t *frame_cnt, uint32_t *end);

#endif
