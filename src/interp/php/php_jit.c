/* opcache's JIT code, as the PHP runtime (php.c) hands it to eBPF: the process's JIT buffer
 * as its code range, and execute_ex's dispatch point, where a pc in JIT code is unwound.
 *
 * Facts (PHP 8.2 and 8.4, x86-64, the HYBRID VM Debian builds): the VM enters JIT code the way it
 * enters any handler, `jmp *(%r15)` with r15 the opline whose handler the JIT replaced
 * (Zend/zend_vm_execute.h ZEND_VM_DISPATCH; ext/opcache/jit/zend_jit_x86.dasc JMP_IP), and JIT
 * code calls other PHP functions by switching execute_data in place, never by a native call;
 * it runs on execute_ex's frame without moving rsp (execute_ex reserves
 * ZEND_VM_HYBRID_JIT_RED_ZONE_SIZE bytes for it; the JIT's prologue subtracts HYBRID_SPAD only
 * when that is not defined). Checked on the real process: at JIT pcs, rsp equals execute_ex's
 * body rsp and sp + 152 holds the return address into zend_execute. Stubs that push (trace
 * exits) break this; eBPF checks the return address it finds (bpf/interp/php/walk.h).
 * PHP 8.4's JIT (the IR framework, ext/opcache/jit/zend_jit_ir.c) keeps this: for the HYBRID VM
 * its code has a fixed frame in that red zone (fixed_stack_red_zone, no prologue) and leaves
 * rbp alone; its trace exits save more (php.c's layouts). Debian 13's 8.4 is a CET build:
 * functions start with endbr64, and its execute_ex makes rbp a frame pointer (sp + 208 there).
 *
 * The buffer: opcache maps its shared memory anonymous and shared
 * (ext/opcache/shared_alloc_mmap.c: MAP_SHARED | MAP_ANONYMOUS, shown as "/dev/zero (deleted)")
 * and the JIT buffer is the segment's tail, made executable (zend_jit_protect). Other JITs in a
 * PHP process (PCRE's) map private memory.
 */
#include <errno.h>
#include <string.h>

#include "formats/elf_file.h"
#include "interp/php/php_jit.h"
#include "proc/maps.h"

#define PROLOGUE_MAX 32  /* bytes of endbr64, pushes and the sub */
#define DISPATCH_MAX 256 /* bytes after the prologue searched for the dispatch */

static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

int php_jit__vm_frame(struct elf_file *ef, uint64_t entry, uint64_t size, uint64_t *dispatch,
		      uint32_t *frame)
{
	const uint8_t *b;
	size_t avail, i = 0, n;
	uint32_t bytes = 8, sub; /* the return address */

	if (elf_file__bytes_at_vaddr(ef, entry, (const void **)&b, &avail))
		return -ENOENT;
	if (avail > size)
		avail = size;
	if (avail >= 4 && !memcmp(b, endbr64, 4)) /* a CET build's (PHP 8.4 in Debian 13) */
		i = 4;
	/* push %r64 (0x50-0x57), push %r8-%r15 (0x41 0x50-0x57), and rbp made the frame
	 * pointer on the way (mov %rsp, %rbp: 48 89 e5; 8.4's execute_ex), which moves no sp
	 */
	while (i < PROLOGUE_MAX && i + 1 < avail) {
		if (b[i] >= 0x50 && b[i] <= 0x57) {
			i += 1;
		} else if (b[i] == 0x41 && b[i + 1] >= 0x50 && b[i + 1] <= 0x57) {
			i += 2;
		} else if (i + 3 <= avail && b[i] == 0x48 && b[i + 1] == 0x89 && b[i + 2] == 0xe5) {
			i += 3;
			continue;
		} else {
			break;
		}
		bytes += 8;
	}
	/* sub $imm8, %rsp (48 83 ec ib) or sub $imm32, %rsp (48 81 ec id) */
	if (i + 7 <= avail && b[i] == 0x48 && b[i + 1] == 0x83 && b[i + 2] == 0xec) {
		sub = b[i + 3];
		i += 4;
	} else if (i + 7 <= avail && b[i] == 0x48 && b[i + 1] == 0x81 && b[i + 2] == 0xec) {
		memcpy(&sub, b + i + 3, 4);
		i += 7;
	} else {
		return -ENOENT;
	}
	if (sub > (1u << 16))
		return -ENOENT;
	bytes += sub;
	/* jmp *(%r15): 41 ff 27 */
	n = avail < i + DISPATCH_MAX ? avail : i + DISPATCH_MAX;
	for (; i + 3 <= n; i++) {
		if (b[i] == 0x41 && b[i + 1] == 0xff && b[i + 2] == 0x27) {
			*dispatch = entry + i;
			*frame = bytes;
			return 0;
		}
	}
	return -ENOENT;
}

int php_jit__find_buffer(pid_t pid, uint64_t *start, uint64_t *end)
{
	struct proc_maps maps = { 0 };
	int found = 0, shm = 0, err;
	size_t i;

	err = proc_maps__read(pid, NULL, &maps);
	if (err)
		return err;
	for (i = 0; i < maps.cnt; i++) {
		const struct proc_map *m = &maps.maps[i];

		if (!(m->perms & PROC_MAP_SHARED) || strcmp(m->path, "/dev/zero") || !m->deleted)
			continue;
		shm++;
		if (!(m->perms & PROC_MAP_EXEC))
			continue;
		if (found++) /* two: not opcache's one segment as known */
			break;
		*start = m->start;
		*end = m->end;
	}
	proc_maps__free(&maps);
	if (found == 1)
		return 0;
	return shm && !found ? -ENODATA : -ENOENT;
}
