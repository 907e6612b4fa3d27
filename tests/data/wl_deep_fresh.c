/*
 * tests/system/test_cold.sh compiles this at test time into a binary nobody has seen (a fresh
 * file with a unique build id): no unwind table exists for it when it starts. From its first
 * milliseconds it burns CPU DEEP_FRAMES calls down: main -> deep_descend x DEEP_FRAMES ->
 * deep_burn, each deep_descend frame holding a DEEP_FRAME_BYTES buffer, so the leaf's stack
 * pointer lies ~45 KiB below main's frame: more than one 28 KiB part of a deferred sample's
 * stack copy (bpf/abi.h), less than two. It burns for argv[1] seconds (default 0.2).
 * Built -O2 -fomit-frame-pointer: only .eh_frame unwinds it, frame pointers cannot.
 */
#include <string.h>
#include "wl_common.h"

#define DEEP_FRAMES 30
#define DEEP_FRAME_BYTES 1536

static WL_NOINLINE void deep_burn(double until)
{
	unsigned long x = 0;

	while (wl_now() < until)
		for (int i = 0; i < 20000; i++)
			x += (unsigned long)i * i;
	wl_sink += x;
}

/* Not a tail call (the buffer is used after the call) and not inlined: one frame per level. */
static WL_NOINLINE void deep_descend(int level, double until)
{
	volatile char pad[DEEP_FRAME_BYTES];

	memset((char *)pad, level, sizeof(pad));
	if (level < DEEP_FRAMES)
		deep_descend(level + 1, until);
	else
		deep_burn(until);
	wl_sink += pad[level % DEEP_FRAME_BYTES];
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? strtod(argv[1], NULL) : 0.2;

	if (!(secs > 0) || secs > 10)
		return 2;
	deep_descend(1, wl_now() + secs);
	return 0;
}
