/* replay_runtime__place(): eBPF's runtime frames from past the defer point put back before the
 * replay's native frames that run them (src/unwind/replay_runtime.h).
 *
 * Frames are written as letters: upper case native (addr = the letter, file 1), lower case a
 * runtime's (CPython's), '?' a native frame eBPF guessed by its frame pointer wrongly.
 */
#include <errno.h>
#include <string.h>

#include "test.h"
#include "unwind/replay_runtime.h"

static uint32_t frames_of(const char *s, struct user_frame *f)
{
	uint32_t n = 0;

	for (; *s; s++, n++) {
		memset(&f[n], 0, sizeof(f[n]));
		f[n].addr = (uint64_t)(unsigned char)*s;
		f[n].file_id = *s == '?' ? 7 : 1;
		f[n].flags = USER_FRAME_RETURN;
		f[n].kind = *s >= 'a' && *s <= 'z' ? FRAME_KIND_CPYTHON : FRAME_KIND_NATIVE;
	}
	return n;
}

static void text_of(const struct user_frame *f, uint32_t n, char *s)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		s[i] = (char)f[i].addr;
	s[n] = 0;
}

/* Merge ebpf (defer point at idx) with replay (its frames from idx on); the merged text in out
 * ("" on failure), the runtime frames placed in *placed; returns the function's result.
 */
static int place(const char *ebpf, uint32_t idx, const char *replay, char *out, uint32_t *placed)
{
	static struct user_frame e[SS_MAX_USER_FRAMES], r[SS_MAX_USER_FRAMES],
		m[SS_MAX_USER_FRAMES];
	uint32_t ecnt = frames_of(ebpf, e), rcnt, end = UNWIND_END_OK;
	int err;

	/* the replay writes from the defer point on; the frames before it are eBPF's */
	memcpy(r, e, idx * sizeof(r[0]));
	rcnt = idx + frames_of(replay, r + idx);
	*placed = 0;
	err = replay_runtime__place(e, ecnt, idx, r, &rcnt, &end, m, placed);
	if (err)
		out[0] = 0;
	else
		text_of(m, rcnt, out);
	return err;
}

/* Runs placed: eBPF's walk, its defer point, the replay from there, the merged walk. */
TEST(placed)
{
	static const struct {
		const char *ebpf, *replay, *want;
		uint32_t idx, placed;
	} cases[] = {
		/* the defer point below every runtime frame (libc's table not in yet): nothing
		 * to place, the runtime frames before it stay */
		{ "LbaEM?", "MCS", "LbaEMCS", 4, 0 },
		/* among them (the interpreter's table not in, eBPF found two eval frames E by
		 * their frame pointers): each run before its own E, in order, where the replay has
		 * native frames eBPF skipped (F, G) and without eBPF's wrong guess (?) */
		{ "LXbaE?dcEM", "XFEGEMS", "LXFbaEGdcEMS", 1, 4 },
		/* recursion: the same eval frame twice; the second run goes to the second one */
		{ "LbEaEM", "EEMS", "LbEaEMS", 1, 2 },
	};
	char out[SS_MAX_USER_FRAMES + 1];
	uint32_t placed;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(place(cases[i].ebpf, cases[i].idx, cases[i].replay, out, &placed), 0);
		CHECK_STR(out, cases[i].want);
		CHECK_EQ_INT(placed, cases[i].placed);
	}
}

/* A run whose eval frame the replay never reaches, or a run that ended eBPF's walk: no place,
 * the caller keeps eBPF's walk.
 */
TEST(unplaced)
{
	char out[SS_MAX_USER_FRAMES + 1];
	uint32_t placed;

	CHECK_EQ_INT(place("LXbaEM", 1, "XMS", out, &placed), -ENOENT);
	CHECK_EQ_INT(place("LXba", 1, "XMS", out, &placed), -ENOENT);
	/* the second E only eBPF's guess found: its run has no place */
	CHECK_EQ_INT(place("LXbEaEM", 1, "XEMS", out, &placed), -ENOENT);
}

/* More frames than a record holds: cut at SS_MAX_USER_FRAMES, the walk marked truncated. */
TEST(truncated)
{
	static struct user_frame e[SS_MAX_USER_FRAMES], r[SS_MAX_USER_FRAMES],
		m[SS_MAX_USER_FRAMES];
	uint32_t i, rcnt = SS_MAX_USER_FRAMES, end = UNWIND_END_OK, placed = 0;

	frames_of("LbaE", e);
	for (i = 0; i < SS_MAX_USER_FRAMES; i++)
		frames_of(i == 1 ? "E" : "N", &r[i]);
	r[0] = e[0];
	CHECK_EQ_INT(replay_runtime__place(e, 4, 1, r, &rcnt, &end, m, &placed), 0);
	CHECK_EQ_INT(rcnt, SS_MAX_USER_FRAMES);
	CHECK_EQ_INT(end, UNWIND_END_TRUNCATED);
	CHECK_EQ_INT(placed, 2);
	CHECK_EQ_INT(m[1].kind, FRAME_KIND_CPYTHON);
	CHECK_EQ_U64(m[3].addr, 'E');
}

int main(void)
{
	RUN(placed);
	RUN(unplaced);
	RUN(truncated);
	return test_summary();
}
