/* Fixture for tests/unit/test_cfi.c: signal trampolines recognised by their code, not by a
 * CIE 'S' augmentation: `cfi_restorer` has a plain FDE around exactly
 * `mov $15,%rax; syscall`; `__restore_rt` has no CFI at all (as in musl).
 */
__asm__(".text\n"
	".globl cfi_restorer\n"
	".type cfi_restorer,@function\n"
	"cfi_restorer:\n"
	".cfi_startproc\n"
	"mov $15,%rax\n"
	"syscall\n"
	".cfi_endproc\n"
	".size cfi_restorer,.-cfi_restorer\n"
	"nop\n"
	".globl __restore_rt\n"
	".type __restore_rt,@function\n"
	"__restore_rt:\n"
	"mov $15,%rax\n"
	"syscall\n"
	".size __restore_rt,.-__restore_rt\n");

int main(void)
{
	return 0;
}
