/* A deferred sample's runtime frames put back into its replay. See replay_runtime.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "unwind/replay_runtime.h"

/* The anchor test: flags may differ (eBPF reached the frame by a frame-pointer guess, the
 * replay by its table), the frame itself may not.
 */
static bool same_native(const struct user_frame *a, const struct user_frame *b)
{
	return a->kind == FRAME_KIND_NATIVE && b->kind == FRAME_KIND_NATIVE && a->addr == b->addr &&
	       a->file_id == b->file_id;
}

/* Append f to out unless full (then the walk is marked truncated): 1 when appended. */
static uint32_t put(struct user_frame *out, uint32_t *n, const struct user_frame *f, uint32_t *end)
{
	if (*n >= SS_MAX_USER_FRAMES) {
		*end = UNWIND_END_TRUNCATED;
		return 0;
	}
	out[(*n)++] = *f;
	return 1;
}

int replay_runtime__place(const struct user_frame *ebpf, uint32_t ebpf_cnt, uint32_t defer_idx,
			  const struct user_frame *replay, uint32_t *replay_cnt, uint32_t *end,
			  struct user_frame *out, uint32_t *runtime_cnt)
{
	uint32_t e = defer_idx, r = defer_idx, n = defer_idx, run, anchor, placed = 0;

	if (defer_idx > ebpf_cnt || defer_idx > *replay_cnt || ebpf_cnt > SS_MAX_USER_FRAMES ||
	    *replay_cnt > SS_MAX_USER_FRAMES)
		return -EINVAL;
	memcpy(out, ebpf, defer_idx * sizeof(*out));
	while (e < ebpf_cnt) {
		if (ebpf[e].kind == FRAME_KIND_NATIVE) {
			e++;
			continue;
		}
		/* a run ebpf[run .. anchor) and the native frame it belongs before */
		for (run = e; e < ebpf_cnt && ebpf[e].kind != FRAME_KIND_NATIVE; e++)
			;
		anchor = e;
		if (anchor == ebpf_cnt)
			return -ENOENT;
		while (r < *replay_cnt && !same_native(&replay[r], &ebpf[anchor]))
			put(out, &n, &replay[r++], end);
		if (r == *replay_cnt)
			return -ENOENT;
		for (; run < anchor; run++)
			placed += put(out, &n, &ebpf[run], end);
		put(out, &n, &replay[r++], end); /* the anchor: a later run's is further on */
	}
	while (r < *replay_cnt)
		put(out, &n, &replay[r++], end);
	*replay_cnt = n;
	*runtime_cnt = placed;
	return 0;
}
