/* The frame shapes of OpenJDK 17's arm64 C1/C2 code (MacroAssembler::build_frame and
 * remove_frame, the return poll of safepoint_poll(at_return), `ret`), assembled by Debian's
 * cross assembler for tests/unit/test_hotspot_arm64.c, which lays them out as nmethods and
 * samples each instruction. Each shape starts 64 bytes after the previous one.
 */
	.text
/* A frame of 48 bytes (below 528: sub, then stp at its top); complete at offset 0x0c. */
small_frame:
	nop				/* 0x00 the verified entry's patchable nop */
	sub	sp, sp, #48		/* 0x04 */
	stp	x29, x30, [sp, #32]	/* 0x08 */
	mov	x0, x1			/* 0x0c the body */
	ldp	x29, x30, [sp, #32]	/* 0x10 */
	add	sp, sp, #48		/* 0x14 */
	ldr	x8, [x28, #1064]	/* 0x18 the return poll: the thread's polling word */
	cmp	sp, x8			/* 0x1c */
	b.hi	small_frame		/* 0x20 (to the poll's stub) */
	ret				/* 0x24 */
	.balign	64
/* A frame of 1024 bytes (the record pushed first, then the rest); complete at 0x4c. */
large_frame:
	nop				/* 0x40 */
	stp	x29, x30, [sp, #-16]!	/* 0x44 */
	sub	sp, sp, #1008		/* 0x48 */
	mov	x0, x1			/* 0x4c */
	add	sp, sp, #1008		/* 0x50 */
	ldp	x29, x30, [sp], #16	/* 0x54 */
	ldr	x8, [x28, #1064]	/* 0x58 */
	cmp	sp, x8			/* 0x5c */
	b.hi	large_frame		/* 0x60 */
	ret				/* 0x64 */
	.balign	64
