/* The arm64 native unwinder (bpf/native_unwind.h with bpf/arch/arm64.h, compiled here as C)
 * replayed over a real arm64 stack: tests/data/arm64_chain.c, built by Debian's cross
 * compiler with pointer authentication (pac-ret) and run under qemu-aarch64, writes the
 * registers and stack its SIGPROF handler interrupted in hot_leaf (a leaf whose return
 * address is still in x30). Its table is built by the production code (unwind_table.c,
 * arm64 rules) and loaded into the stand-in maps (replay_maps.h); the walk must give
 * hot_leaf <- chain_c <- chain_b <- chain_a <- main from CFI alone, through return addresses
 * that were stored signed (their PAC bits stripped).
 *
 * And Go's asynchronous preemption over arm64_wl_go's real table (UNWIND_RULE_GO_PREEMPT): a
 * stack laid out as the runtime's signal handler and runtime.asyncPreempt leave it, with the
 * frame sizes and return addresses read from `go tool objdump` of the same build.
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

/* ---- Go's asynchronous preemption (arm64_wl_go and its objdump) ---- */

/* fn's `TEXT fn(SB)` block in the objdump text od: its start, and in *end the next block's (NULL:
 * the last); NULL when fn has none.
 */
static const char *objdump_block(const char *od, const char *fn, const char **end)
{
	char head[128];
	const char *p;

	snprintf(head, sizeof(head), "\nTEXT %s(SB)", fn);
	p = strstr(od, head);
	*end = p ? strstr(p + 1, "\nTEXT ") : NULL;
	return p;
}

/* The address of the first instruction of fn whose line contains what, plus add; 0 if none. */
static uint64_t objdump_addr(const char *od, const char *fn, const char *what, uint64_t add)
{
	const char *end, *line = objdump_block(od, fn, &end);

	for (line = line ? strchr(line + 1, '\n') : NULL; line && (!end || line < end);
	     line = strchr(line + 1, '\n')) {
		const char *nl = strchr(line + 1, '\n'), *hit = strstr(line, what), *x;

		if (!hit || (nl && hit > nl) || (end && hit > end))
			continue;
		x = strstr(line, "0x");
		if (x && x < hit)
			return strtoull(x, NULL, 16) + add;
	}
	return 0;
}

/* The end of fn's text: past the last instruction of its block; 0 if none. */
static uint64_t objdump_end(const char *od, const char *fn)
{
	const char *end, *x = objdump_block(od, fn, &end), *last = NULL;

	for (x = x ? strstr(x + 1, "\t0x") : NULL; x && (!end || x < end);
	     x = strstr(x + 1, "\t0x"))
		last = x;
	return last ? strtoull(last + 1, NULL, 16) + 4 : 0;
}

/* The frame size fn's prologue allocates (`MOVD.W R30, -N(RSP)`); 0 if none. */
static uint64_t objdump_frame(const char *od, const char *fn)
{
	static const char store[] = "MOVD.W R30, -";
	const char *end, *p = objdump_block(od, fn, &end);

	p = p ? strstr(p, store) : NULL;
	return p && (!end || p < end) ? strtoull(p + strlen(store), NULL, 10) : 0;
}

static void put_word(uint64_t addr, uint64_t v)
{
	REQUIRE(addr >= world.sp && addr + 8 <= world.sp + world.size);
	memcpy(world.stack + (addr - world.sp), &v, 8);
}

/* main.gamma (frameless: its return address in x30) interrupted in its loop and made to call
 * runtime.asyncPreempt (sigctxt.pushCall: sp -= 16, [sp] = x30, x30 = the interrupted pc,
 * pc = asyncPreempt); the sample lands inside asyncPreempt's register saves (its frame of
 * 496 bytes, x30 at its bottom). The walk must give asyncPreempt <- gamma at the interrupted pc
 * itself (not a return address: a signal's frame) <- beta <- alpha <- main.main <-
 * runtime.main <- goexit (the end), from the table alone: without the rule it ends at gamma,
 * whose return address is in no register a walk past the first frame knows.
 */
TEST(go_async_preemption)
{
	static const char *const want[] = { "runtime.asyncPreempt", "main.gamma", "main.beta",
					    "main.alpha",           "main.main",  "runtime.main",
					    "runtime.goexit" };
	const char *exe = test_fixture("arm64_wl_go");
	struct user_frame frames[SS_MAX_USER_FRAMES];
	char *od = NULL;
	struct unwind_cursor st;
	struct elf_file *ef;
	uint64_t file_id = 0, pc_ap, resume, sp_ap, cfa, sp, ra[5], frame[4];
	static const char *const text[] = { "runtime.asyncPreempt.abi0",
					    "main.gamma",
					    "main.beta",
					    "main.alpha",
					    "main.main",
					    "runtime.main",
					    "runtime.goexit.abi0" };
	size_t len = 0;
	FILE *f;
	int fd, i;

	ef = elf_file__open(exe);
	if (!ef || access(test_fixture("arm64_wl_go.objdump"), R_OK)) /* golang-go */
		SKIP_SETUP("no %s or its objdump", exe);
	f = fopen(test_fixture("arm64_wl_go.objdump"), "r");
	REQUIRE(f);
	REQUIRE(getdelim(&od, &len, '\0', f) > 0);
	fclose(f);

	/* asyncPreempt's frame is whole once its `SUB $496, RSP` ran: the sample is after it */
	pc_ap = objdump_addr(od, "runtime.asyncPreempt.abi0", "SUB $496, RSP", 8);
	resume = objdump_addr(od, "main.gamma", "ADD $1, R2, R2", 0);
	ra[0] = objdump_addr(od, "main.beta", "CALL main.gamma(SB)", 4);
	ra[1] = objdump_addr(od, "main.alpha", "CALL main.beta(SB)", 4);
	ra[2] = objdump_addr(od, "main.main", "CALL main.alpha(SB)", 4);
	ra[3] = objdump_addr(od, "runtime.main", "CALL (R0)", 4);
	/* goexit's caller pc, as newproc1 sets it: its entry plus one instruction */
	ra[4] = objdump_addr(od, "runtime.goexit.abi0", "MOVD R0, R0", 4);
	frame[0] = objdump_frame(od, "main.beta");
	frame[1] = objdump_frame(od, "main.alpha");
	frame[2] = objdump_frame(od, "main.main");
	frame[3] = objdump_frame(od, "runtime.main");
	CHECK_EQ_INT(objdump_frame(od, "main.gamma"), 0);
	for (i = 0; i < 5; i++)
		REQUIRE(ra[i] > 4);
	for (i = 0; i < 4; i++)
		REQUIRE(frame[i] >= 16 && frame[i] < 1024);
	REQUIRE(pc_ap > 8 && resume);

	fd = open(exe, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0 && file_id__of_fd(fd, &file_id) == 0);
	close(fd);
	REQUIRE(kmaps_load_table(ef, file_id) == 0);
	world.map = (struct mapping_info){ .file_id = file_id, .start = 0x1000, .end = 1ULL << 40 };

	/* the goroutine's stack: asyncPreempt's frame at sp_ap, the 16 bytes pushCall took at
	 * cfa, then gamma's sp (beta's: gamma has no frame) and the frames above
	 */
	world.size = 8192;
	world.stack = calloc(1, world.size);
	REQUIRE(world.stack);
	world.sp = 0xc000040000ULL;
	sp_ap = world.sp + 64;
	cfa = sp_ap + 496;
	put_word(sp_ap, resume);         /* asyncPreempt's x30, stored at its frame's bottom */
	put_word(sp_ap - 8, 0xdead0008); /* x29, below it as Go saves it */
	put_word(cfa, ra[0]);            /* gamma's x30 (into beta), pushed by the handler */
	sp = cfa + 16;
	for (i = 0; i < 4; i++) {
		put_word(sp, ra[i + 1]); /* each frame's caller's x30 at the bottom of its frame */
		put_word(sp - 8, 0xdead0000 + (uint64_t)i);
		sp += frame[i];
	}

	memset(&st, 0, sizeof(st));
	st.pid = 4242;
	st.regs[DWARF_RIP] = pc_ap;
	st.regs[DWARF_RSP] = sp_ap;
	st.regs[DWARF_RBP] = sp_ap - 8;
	st.regs[SS_ARM64_LR_SLOT] = resume;
	st.regs_valid = 1;
	for (i = 0; i < 64 && !st.done; i++)
		ss_unwind_step(&st, frames);

	for (i = 0; i < (int)st.frame_cnt; i++)
		printf("  #%d %#llx flags %#x\n", i, (unsigned long long)frames[i].addr,
		       frames[i].flags);
	printf("  end %u after %u frames\n", st.end, st.frame_cnt);
	CHECK_EQ_INT(st.end, UNWIND_END_OK);
	/* goexit, the goroutine's root, is the last frame (its STOP rule) */
	REQUIRE(st.frame_cnt == 7);
	for (i = 0; i < 7; i++) {
		uint64_t a = frames[i].addr - (frames[i].flags & USER_FRAME_RETURN ? 1 : 0);

		/* each frame in its function's text */
		CHECK(a >= objdump_addr(od, text[i], "", 0) && a < objdump_end(od, text[i]));
		if (a < objdump_addr(od, text[i], "", 0) || a >= objdump_end(od, text[i]))
			printf("  frame %d should be %s\n", i, want[i]);
		CHECK_EQ_INT(frames[i].flags & USER_FRAME_FP, 0);
	}
	/* gamma at the interrupted pc itself, marked as a signal's frame */
	CHECK_EQ_INT(frames[1].addr, resume);
	CHECK_EQ_INT(frames[1].flags & (USER_FRAME_SIGNAL | USER_FRAME_RETURN), USER_FRAME_SIGNAL);
	CHECK_EQ_INT(frames[2].addr, ra[0]);
	CHECK_EQ_INT(frames[5].addr, ra[3]);
	free(od);
	free(world.stack);
	elf_file__free(ef);
	kmaps_free();
}

int main(void)
{
	RUN(known_chain_from_a_leaf_with_pac);
	RUN(go_async_preemption);
	return test_summary();
}
