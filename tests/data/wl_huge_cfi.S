/* A function whose CFI alone needs more than one segment of the eBPF unwinder's entry pool
 * (bpf/abi.h: 1M entries): 600,000 push/pop pairs of one byte each, the CFA moving with every
 * one, so 1.2M table rows (~18 of its 64 KiB pages). No frame pointer anywhere: a sample inside
 * it reaches main only through that table. main calls it for ever.
 */
	.text
	.globl	huge_cfi
	.type	huge_cfi, @function
huge_cfi:
	.cfi_startproc
	.rept	600000
	push	%rax
	.cfi_adjust_cfa_offset 8
	pop	%rax
	.cfi_adjust_cfa_offset -8
	.endr
	ret
	.cfi_endproc
	.size	huge_cfi, .-huge_cfi

	.globl	main
	.type	main, @function
main:
	.cfi_startproc
	sub	$8, %rsp
	.cfi_adjust_cfa_offset 8
1:	call	huge_cfi
	jmp	1b
	.cfi_endproc
	.size	main, .-main

	.section .note.GNU-stack, "", @progbits
