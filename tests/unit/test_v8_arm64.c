/* Debian 12's arm64 libnode.so.108 (V8 10.2; scripts/arm64_files.sh unpacks it into
 * build/arm64-debs/root) through the V8 runtime's file_detect and attach, as the arm64 build
 * sees it: its metadata usable, the frame slots as frame-constants-arm64.h has them (context
 * fp - 8, function fp - 16, BytecodeArray fp - 32, bytecode offset fp - 40), the bytecode
 * handlers found in its stripped blob, and JSEntry's entry frame: V8 10.2 pushes the C++
 * caller's 18 callee-saved registers (x19-x28, d8-d15: kCalleeSavedRegisterBytesPushedBefore-
 * FpLrPair) before its frame record, so that caller's sp is fp + 16 + 144, for the entry frame
 * types 1 and 2 (ENTRY, CONSTRUCT_ENTRY). Debian 12's x86-64 libnode (the runtime matrix's
 * bookworm root, when built) keeps the native step for its entry frames (entry_sp 0).
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "test.h"

extern const struct interp_runtime v8_runtime;

/* file_detect and attach (bias 0) of the libnode at path: 0 with *out, else the failure. */
static int detect(const char *path, uint16_t machine, struct interp_file *bpf,
		  struct v8_proc_abi *out)
{
	struct executable exe;
	struct interp_proc proc;
	void *rt, *state = NULL, *proc_state = NULL;
	int err;

	memset(&exe, 0, sizeof(exe));
	exe.kind = EXECUTABLE_FILE;
	exe.path = (char *)"/usr/lib/libnode.so.108";
	exe.fd = -1;
	exe.elf = elf_file__open(path);
	REQUIRE(exe.elf);
	CHECK_EQ_INT(elf_file__machine(exe.elf), machine);
	rt = interp_runtime__new(&v8_runtime);
	REQUIRE(rt);
	memset(bpf, 0, sizeof(*bpf));
	err = interp_runtime__file_detect(&v8_runtime, rt, &exe, &state, bpf);
	if (!err) {
		memset(&proc, 0, sizeof(proc));
		err = interp_runtime__proc_attach(&v8_runtime, rt, getpid(), state, 0, 0,
						  &proc_state, &proc);
		*out = proc.v8;
	}
	if (proc_state)
		interp_runtime__proc_free(&v8_runtime, rt, proc_state);
	if (state)
		interp_runtime__file_free(&v8_runtime, rt, state);
	interp_runtime__free(&v8_runtime, rt);
	elf_file__free(exe.elf);
	return err;
}

TEST(debian_arm64_libnode108)
{
	const char *root = getenv("STACKSCOPE_ARM64_FILES");
	struct interp_file bpf;
	struct v8_proc_abi p;
	char path[512];

	snprintf(path, sizeof(path), "%s/usr/lib/aarch64-linux-gnu/libnode.so.108",
		 root ? root : "build/arm64-debs/root");
	if (access(path, R_OK))
		SKIP_SETUP("no arm64 libnode.so.108 in build/arm64-debs (scripts/arm64_files.sh)");
	REQUIRE(!detect(path, EM_AARCH64, &bpf, &p));
	CHECK_EQ_INT(bpf.supported, 1);
	CHECK_EQ_INT(bpf.major, 10);
	CHECK_EQ_INT(bpf.minor, 2);
	/* the embedded builtins are the file range the dispatch hands to the V8 walk */
	CHECK(bpf.range_start[0] && bpf.range_end[0] > bpf.range_start[0]);
	CHECK_EQ_INT(p.supported, 1);
	CHECK_EQ_INT(p.fp_context, -8);
	CHECK_EQ_INT(p.fp_function, -16);
	CHECK_EQ_INT(p.fp_bytecode_array, -32);
	CHECK_EQ_INT(p.fp_bytecode_offset, -40);
	CHECK_EQ_INT(p.bc_reg_r14, 0);
	/* the handlers: from WideHandler to the blob's end */
	CHECK(p.handlers_lo > bpf.range_start[0] && p.handlers_hi == bpf.range_end[0]);
	CHECK_EQ_INT(p.entry_sp, 16 + 18 * 8);
	CHECK_EQ_INT(p.entry_types, 1 << 1 | 1 << 2);
}

TEST(debian_x86_64_libnode108)
{
	const char *cache = getenv("RM_CACHE");
	struct interp_file bpf;
	struct v8_proc_abi p;
	char path[600];

	snprintf(path, sizeof(path), "%s/roots/bookworm/usr/lib/x86_64-linux-gnu/libnode.so.108",
		 cache && *cache ? cache : "/var/cache/stackscope/runtime-matrix");
	if (access(path, R_OK))
		SKIP("no bookworm root here (scripts/runtime_root.sh bookworm)");
	REQUIRE(!detect(path, EM_X86_64, &bpf, &p));
	CHECK_EQ_INT(p.supported, 1);
	CHECK_EQ_INT(p.entry_sp, 0);
	CHECK_EQ_INT(p.entry_types, 0);
}

int main(void)
{
	RUN(debian_arm64_libnode108);
	RUN(debian_x86_64_libnode108);
	return test_summary();
}
