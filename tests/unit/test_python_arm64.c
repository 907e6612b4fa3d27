/* CPython's layout for an arm64 interpreter file (src/interp/python/python.c,
 * layout_for_arch()), on any host: Debian 12's arm64 python3.11 (scripts/arm64_files.sh
 * unpacks it into build/arm64-debs/root) must get _PyRuntime's autoTSSkey where the file's
 * own PyGILState_GetThisThreadState reads it: its `ldr w0, [x0, #off]` loads the key
 * (Py_tss_t { int initialized; pthread_key_t key }: the key is rt_tss + 4). The x86-64 python3.11
 * of this host gets its own offset, from its `mov off(%rip), %edi`. With the x86-64 layout on
 * arm64 (issue 19) Python came out with no frames.
 *
 * The same check on the x86-64 interpreters of the runtime matrix's Debian roots
 * (scripts/runtime_root.sh: 3.9, 3.13, 3.14; a root not built here is a skip), whose
 * _PyRuntime layouts come from the table or their _Py_DebugOffsets (3.13, 3.14: 3.14's own
 * struct, its frame owner and tagged f_executable checked too).
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
		uint32_t imm;

		/* 8b 3d disp32: mov disp(%rip), %edi, the key; the next instruction is at i + 6 */
		if (code[i] == 0x8b && code[i + 1] == 0x3d) {
			int32_t disp;

			memcpy(&disp, code + i + 2, 4);
			return (long)(syms[0].addr + i + 6 + disp - syms[1].addr);
		}
		/* bf imm32: mov $addr, %edi, the Py_tss_t to PyThread_tss_get (non-PIE 3.14) */
		if (code[i] == 0xbf) {
			memcpy(&imm, code + i + 1, 4);
			if (imm >= syms[1].addr && imm - syms[1].addr < 0x10000)
				return (long)(imm - syms[1].addr + 4);
		}
	}
	return -1;
}

/* file_detect on the file at path (named as name: the version comes from the name), then an
 * attach at bias 0: the gilstate key address given to eBPF (Py_tss_t: the key is at + 4) must
 * be _PyRuntime + the key offset its code uses.
 */
static void check_file(const char *path, const char *name, uint16_t machine, int minor)
{
	struct executable exe;
	static const char *const runtime_name[] = { "_PyRuntime" };
	struct interp_sym runtime;
	struct interp_file bpf;
	struct interp_proc proc;
	void *rt, *state = NULL, *proc_state = NULL;
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
	CHECK_EQ_INT(bpf.minor, minor);
	if (minor == 14) {
		/* 3.14's frame: owner after stackpointer, f_executable a tagged _PyStackRef */
		CHECK_EQ_INT(bpf.py.off.fr_entry, 74);
		CHECK_EQ_INT(bpf.py.off.fr_code_tags, 3);
		CHECK_EQ_INT(bpf.py.off.co_code, 208);
	}
	interp_elf__symbols(exe.elf, runtime_name, 1, &runtime);
	memset(&proc, 0, sizeof(proc));
	CHECK_EQ_INT(interp_runtime__proc_attach(&python_runtime, rt, getpid(), state, 0, 0,
						 &proc_state, &proc),
		     0);
	CHECK_EQ_U64(proc.py.tss + 4, runtime.addr + (uint64_t)key_off);
	if (proc_state)
		interp_runtime__proc_free(&python_runtime, rt, proc_state);
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
	check_file(path, "/usr/bin/python3.11", EM_AARCH64, 11);
}

TEST(debian_x86_64_python311)
{
	if (access("/usr/bin/python3.11", R_OK))
		SKIP_SETUP("no /usr/bin/python3.11");
	check_file("/usr/bin/python3.11", "/usr/bin/python3.11", EM_X86_64, 11);
}

/* SUITE's /usr/bin/python3.MINOR in the runtime matrix's roots (RM_CACHE as
 * scripts/runtime_root.sh has it), if that root is built here.
 */
static void check_root(const char *suite, int minor)
{
	const char *cache = getenv("RM_CACHE");
	char path[512], name[64];

	snprintf(path, sizeof(path), "%s/roots/%s/usr/bin/python3.%d",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix", suite, minor);
	snprintf(name, sizeof(name), "/usr/bin/python3.%d", minor);
	if (access(path, R_OK))
		SKIP("no %s root here (scripts/runtime_root.sh %s)", suite, suite);
	check_file(path, name, EM_X86_64, minor);
}

TEST(bullseye_python39)
{
	check_root("bullseye", 9);
}

TEST(trixie_python313)
{
	check_root("trixie", 13);
}

TEST(sid_python314)
{
	check_root("sid", 14);
}

int main(void)
{
	RUN(debian_arm64_python311);
	RUN(debian_x86_64_python311);
	RUN(bullseye_python39);
	RUN(trixie_python313);
	RUN(sid_python314);
	return test_summary();
}
