/* opcache's JIT code in a PHP 8.2 or 8.4 process (src/interp/php/php_jit.c, arm64:
 * php_jit_arm64.c): where its buffer lies,
 * and how a pc there unwinds (bpf/interp/php/walk.h php_code_step(): as execute_ex at its
 * dispatch jump, on whose frame HYBRID-VM JIT code runs).
 */
#ifndef STACKSCOPE_PHP_JIT_H
#define STACKSCOPE_PHP_JIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct elf_file;

/* execute_ex's frame where it dispatches to a handler: the vaddr of its first `jmp *(%r15)`
 * after the prologue and the bytes from sp there to the CFA (return address + pushes + the
 * stack it reserves), read from the function's own code. 0, or -ENOENT when the code is not
 * the expected [endbr64], pushes (with rbp made the frame pointer among them), `sub $n, %rsp`,
 * then a dispatch within the first bytes (another compiler's or VM kind's execute_ex: JIT
 * frames are then not placed).
 */
int php_jit__vm_frame(struct elf_file *ef, uint64_t entry, uint64_t size, uint64_t *dispatch,
		      uint32_t *frame);

/* The same read from arm64 code (php_jit_arm64.c), execute_ex's `size` bytes at vaddr
 * `entry` (untrusted: reads stay within size): the vaddr of the first `br xA` after
 * `ldr xA, [x28]`, the frame size there, and *ra_off, the bytes from sp there to the saved
 * x30 (on x86-64 it is frame - 8). 0, or -ENOENT for another shape.
 */
int php_jit__vm_frame_arm64(const uint8_t *code, size_t size, uint64_t entry, uint64_t *dispatch,
			    uint32_t *frame, uint32_t *ra_off);

/* The JIT buffer of process pid: opcache's shared memory segment (an anonymous shared
 * mapping, "/dev/zero (deleted)" in the maps) holds it as its one executable part, made
 * executable when opcache starts. 0 with [*start, *end); -ENODATA: opcache's segment is there
 * without an executable part (its JIT is off for good); -ENOENT: no segment (opcache not
 * loaded or not started yet), or two executable ones; or -errno.
 */
int php_jit__find_buffer(pid_t pid, uint64_t *start, uint64_t *end);

#endif
