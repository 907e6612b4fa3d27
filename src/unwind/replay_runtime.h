/* A deferred sample's runtime frames put back into its replay.
 *
 * eBPF emits a runtime's frames (an interpreter's: CPython, Ruby, Perl, PHP...) right before the
 * native frame that runs them (the eval loop's activation: bpf/interp/dispatch.h), reading the
 * process's heap as it was at the sample. The replay of a deferred sample (stack_replay.c)
 * walks native frames only, from a copy of the stack: the heap is not in it. So the runtime
 * frames eBPF emitted after the defer point are kept, each run of them placed again right
 * before the replay's first native frame, after the previous run's, that is the native frame
 * eBPF emitted after that run (same file and address: its anchor). Frames before the defer
 * point stay as eBPF sent them.
 *
 * A run whose anchor the replay never reaches (eBPF's frame-pointer guess found an eval frame
 * the replay does not, or the run ended eBPF's walk) cannot be placed: the caller keeps eBPF's
 * walk. Runtime frames the replay would need but eBPF never emitted (its guess missed an eval
 * frame) stay missing: the heap they need is gone.
 */
#ifndef STACKSCOPE_REPLAY_RUNTIME_H
#define STACKSCOPE_REPLAY_RUNTIME_H

#include <stdint.h>

#include "abi.h"

/* Merge ebpf[defer_idx .. ebpf_cnt)'s runtime frames into replay[defer_idx .. *replay_cnt),
 * written to out[] (SS_MAX_USER_FRAMES; out[0 .. defer_idx) copied from ebpf; out must not
 * overlap either input). *replay_cnt becomes the merged count, at most SS_MAX_USER_FRAMES
 * (*end becomes UNWIND_END_TRUNCATED when frames did not fit). *runtime_cnt: the runtime frames
 * placed. Returns 0, or -ENOENT when a run found no anchor in the replay (out undefined).
 */
int replay_runtime__place(const struct user_frame *ebpf, uint32_t ebpf_cnt, uint32_t defer_idx,
			  const struct user_frame *replay, uint32_t *replay_cnt, uint32_t *end,
			  struct user_frame *out, uint32_t *runtime_cnt);

#endif
