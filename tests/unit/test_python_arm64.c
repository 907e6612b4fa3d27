/* CPython's layout for an arm64 interpreter file (src/interp/python/python.c,
 * layout_for_arch()), on any host: Debian 12's arm64 python3.11 (scripts/arm64_files.sh
 * unpacks it into build/arm64-debs/root) must get _PyRuntime's autoTSSkey where the file's
 * own PyGILState_GetThisThreadState reads it: its `ldr w0, [x0, #off]` loads the key
 * (Py_tss_t { int initialized; pthread_key_t key }: the key is rt_tss + 4). The x86-64 python3.11
 * of this host gets its own offset, from its `mov off(%rip), %edi`. With the x86-64 layout on
 * arm64 (issue 19) Python came out with no frames.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "proc/executable.h"
#include "test.h"

extern const struct interp_runtime python_runtime;

/* The offset from _PyRuntime of the pthread key PyGILState_GetThisThreadState loads, from its
 * first instructions: AArch64 `ldr w0, [xN, #imm]` (after adrp/add of _PyRuntime), x86-64
 * `mov disp(%rip), %edi`. -1 when not found.
 */
static long key_offset_in_code(struct elf_file *ef)
{
	static const char *const names[] = { "PyGILState_GetThisThreadState", "_PyRuntime" };
	struct interp_sym syms[2];
	const uint8_t *code;
	size_t i;

	interp_elf__symbols(ef, names, 2, syms);
	if (!syms[0].found || !syms[1].found)
		return -1;
	code = interp_elf__bytes(ef, syms[0].addr, 32);
	if (!code)
		return -1;
	if (elf_file__machine(ef) == EM_AARCH64) {
		for (i = 0; i + 4 <= 32; i += 4) {
			uint32_t insn;

			memcpy(&insn, code + i, 4);
			/* LDR (immediate, unsigned offset), 32-bit, into w0 */
			if ((insn & 0xffc0001f) == 0xb9400000)
				return (long)((insn >> 10) & 0xfff) * 4;
		}
		return -1;
	}
	for (i = 0; i + 6 <= 32; i++) {
		/* 8b 3d disp32: mov disp(%rip), %edi; the next instruction is at i + 6 */
		if (code[i] == 0x8b && code[i + 1] == 0x3d) {
			int32_t disp;

			memcpy(&disp, code + i + 2, 4);
			return (long)(syms[0].addr + i + 6 + disp - syms[1].addr);
		}
	}
	return -1;
}

/* file_detect on the file at path (named as name: the version comes from the name); the
 * detected rt_tss + 4 must be the key offset its code uses.
 */
static void check_file(const char *path, const char *name, uint16_t machine)
{
	struct executable exe;
	struct interp_file bpf;
	void *rt, *state = NULL;
	long key_off;

	memset(&exe, 0, sizeof(exe));
	exe.kind = EXECUTABLE_FILE;
	exe.path = (char *)name;
	exe.fd = -1;
	exe.elf = elf_file__open(path);
	REQUIRE(exe.elf);
	CHECK_EQ_INT(elf_file__machine(exe.elf), machine);
	key_off = key_offset_in_code(exe.elf);
	printf("  %s: the key at _PyRuntime + %#lx in PyGILState_GetThisThreadState\n", path,
	       key_off);
	REQUIRE(key_off > 0);
	rt = interp_runtime__new(&python_runtime);
	REQUIRE(rt);
	memset(&bpf, 0, sizeof(bpf));
	CHECK_EQ_INT(interp_runtime__file_detect(&python_runtime, rt, &exe, &state, &bpf), 0);
	CHECK_EQ_INT(bpf.supported, 1);
	CHECK_EQ_INT(bpf.major, 3);
	CHECK_EQ_INT(bpf.minor, 11);
	CHECK_EQ_INT(bpf.py.off.rt_tss + 4, key_off);
	if (state)
		interp_runtime__file_free(&python_runtime, rt, state);
	interp_runtime__free(&python_runtime, rt);
	elf_file__free(exe.elf);
}

TEST(debian_arm64_python311)
{
	char path[512];
	/* where scripts/setup.sh unpacks them (test_cfi.c reads the same files): the main build
	 * folder's, also for the sanitizer build of this test (BUILD=build/asan)
	 */
	const char *root = getenv("STACKSCOPE_ARM64_FILES");

	snprintf(path, sizeof(path), "%s/usr/bin/python3.11",
		 root ? root : "build/arm64-debs/root");
	if (access(path, R_OK)) /* scripts/setup.sh runs scripts/arm64_files.sh */
		SKIP_SETUP("no arm64 python3.11 in build/arm64-debs (scripts/arm64_files.sh)");
	check_file(path, "/usr/bin/python3.11", EM_AARCH64);
}

TEST(debian_x86_64_python311)
{
	if (access("/usr/bin/python3.11", R_OK))
		SKIP_SETUP("no /usr/bin/python3.11");
	check_file("/usr/bin/python3.11", "/usr/bin/python3.11", EM_X86_64);
}

int main(void)
{
	RUN(debian_arm64_python311);
	RUN(debian_x86_64_python311);
	return test_summary();
}
