/* The arm64 native unwinder (bpf/native_unwind.h with bpf/arch/arm64.h, compiled here as C)
 * replayed over a real arm64 stack: tests/data/arm64_chain.c, built by Debian's cross
 * compiler with pointer authentication (pac-ret) and run under qemu-aarch64, writes the
 * registers and stack its SIGPROF handler interrupted in hot_leaf (a leaf whose return
 * address is still in x30). Its table is built by the production code (unwind_table.c,
 * arm64 rules) and loaded into the stand-in maps (replay_maps.h); the walk must give
 * hot_leaf <- chain_c <- chain_b <- chain_a <- main from CFI alone, through return addresses
 * that were stored signed (their PAC bits stripped).
 */
#define SS_ARCH_ARM64 1

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "proc/file_id.h"
#include "formats/elf_symbols.h"
#include "test.h"

/* the runtimes' maps of replay_maps.h are not used here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "replay_maps.h"
#pragma GCC diagnostic pop

#define QEMU_AARCH64 "/usr/bin/qemu-aarch64-static"

static struct {
	uint64_t pc, sp, x29, x30, size;
	uint8_t *stack;
	struct mapping_info map;
} world;

static int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	if (addr < world.sp || addr - world.sp > world.size ||
	    size > world.size - (addr - world.sp)) {
		memset(dst, 0, size);
		return -EFAULT;
	}
	memcpy(dst, world.stack + (addr - world.sp), size);
	return 0;
}

static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	(void)pid;
	return pc >= world.map.start && pc < world.map.end ? &world.map : NULL;
}

#include "native_unwind.h"

/* Run the fixture under qemu-aarch64 and read its dump into world; false: skipped/failed. */
static bool capture(const char *exe, const char *dump)
{
	uint64_t hdr[6];
	FILE *f;
	pid_t pid;
	int status;

	unlink(dump);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execl(QEMU_AARCH64, QEMU_AARCH64, exe, dump, (char *)NULL);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	f = fopen(dump, "rb");
	REQUIRE(f);
	REQUIRE(fread(hdr, sizeof(hdr), 1, f) == 1);
	REQUIRE(!memcmp(&hdr[0], "SSA64\0\0\0", 8));
	world.pc = hdr[1];
	world.sp = hdr[2];
	world.x29 = hdr[3];
	world.x30 = hdr[4];
	world.size = hdr[5];
	REQUIRE(world.size > 0 && world.size < (1 << 20));
	world.stack = malloc(world.size);
	REQUIRE(world.stack);
	REQUIRE(fread(world.stack, world.size, 1, f) == 1);
	fclose(f);
	return true;
}

/* A stack word that is v with PAC bits above the 48-bit address: v was stored signed. */
static bool stored_signed(uint64_t v)
{
	for (uint64_t off = 0; off + 8 <= world.size; off += 8) {
		uint64_t w;

		memcpy(&w, world.stack + off, 8);
		if (w != v && (w & SS_USER_ADDR_MAX) == v)
			return true;
	}
	return false;
}

TEST(known_chain_from_a_leaf_with_pac)
{
	static const char *const want[] = { "hot_leaf", "chain_c", "chain_b", "chain_a", "main" };
	const char *exe = test_fixture("arm64_chain");
	char dump[64];
	struct user_frame frames[SS_MAX_USER_FRAMES];
	struct unwind_cursor st;
	struct elf_symbols *syms;
	struct elf_file *ef;
	uint64_t file_id = 0;
	size_t signed_cnt = 0;
	int fd, i;

	ef = elf_file__open(exe);
	if (!ef) /* gcc-aarch64-linux-gnu: scripts/setup.sh */
		SKIP_SETUP("no %s", exe);
	if (access(QEMU_AARCH64, X_OK))
		SKIP_SETUP("no %s (qemu-user-static)", QEMU_AARCH64);
	CHECK_EQ_INT(elf_file__machine(ef), EM_AARCH64);
	snprintf(dump, sizeof(dump), "/tmp/ss-arm64-dump.%d", (int)getpid());
	capture(exe, dump);
	unlink(dump);
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0 && file_id__of_fd(fd, &file_id) == 0);
	close(fd);
	REQUIRE(kmaps_load_table(ef, file_id) == 0);
	/* static, not PIE: ELF addresses are the process's */
	world.map = (struct mapping_info){ .file_id = file_id, .start = 0x1000, .end = 1ULL << 40 };

	memset(&st, 0, sizeof(st));
	st.pid = 4242;
	st.regs[DWARF_RIP] = world.pc;
	st.regs[DWARF_RSP] = world.sp;
	st.regs[DWARF_RBP] = world.x29;
	st.regs[SS_ARM64_LR_SLOT] = world.x30;
	st.regs_valid = 1;
	for (i = 0; i < 64 && !st.done; i++)
		ss_unwind_step(&st, frames);

	syms = elf_symbols__load(ef);
	REQUIRE(syms);
	REQUIRE(st.frame_cnt >= 5);
	for (i = 0; i < (int)st.frame_cnt; i++) {
		uint64_t off = 0,
			 a = frames[i].addr - (frames[i].flags & USER_FRAME_RETURN ? 1 : 0);
		const char *name = elf_symbols__lookup(syms, a, &off);

		printf("  #%d %s+%#llx flags %#x\n", i, name ? name : "?", (unsigned long long)off,
		       frames[i].flags);
		if (i < 5) {
			CHECK(name && !strcmp(name, want[i]));
			/* from CFI: no frame-pointer fallback */
			CHECK_EQ_INT(frames[i].flags & USER_FRAME_FP, 0);
			CHECK_EQ_INT(!!(frames[i].flags & USER_FRAME_RETURN), i > 0);
		}
		if (i > 0 && i < 5 && stored_signed(frames[i].addr))
			signed_cnt++;
	}
	printf("  end %u after %u frames; %zu of chain_c..main's return addresses were signed\n",
	       st.end, st.frame_cnt, signed_cnt);
	/* chain_c's return address came from x30 (hot_leaf saved none); the ones chain_c,
	 * chain_b and chain_a stored (paciasp) were signed: main's caller, libc, has no PAC.
	 * A signature is 7 bits under qemu-user's 48-bit addresses with top-byte-ignore, so
	 * one in 128 is 0 and looks unsigned (the run's key is random): 2 of the 3, not all.
	 */
	CHECK(world.x30 >> 48 == 0);
	CHECK(signed_cnt >= 2);
	CHECK_EQ_INT(st.fp_frame_cnt, 0);
	elf_symbols__free(syms);
	elf_file__free(ef);
	free(world.stack);
	kmaps_free();
}

int main(void)
{
	RUN(known_chain_from_a_leaf_with_pac);
	return test_summary();
}
