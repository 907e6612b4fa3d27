/* The eBPF "world" for unit tests that run one runtime's eBPF walk (bpf/interp/) as plain C over
 * a live process's memory (test_php.c and test_perl.c read a child interpreter, and
 * test_hotspot_stub.c its own memory), then the walks themselves (bpf/interp/dispatch.h).
 *
 * The world is one process and one runtime: `world` below, which the test fills in before it
 * walks (pid, runtime, and for an interpreter its file_id, file and proc entries). The walk sees:
 *   - memory: the process's, read with process_vm_readv(); a failed read zeroes the buffer, as
 *     bpf_probe_read_user() does;
 *   - no mapping, file, table page, entry or rule (a native step finds nothing; a switch to Go's
 *     g0 ends the walk, as eBPF's does for a process it has no Go entry for);
 *   - "interp_files": `file` for file_id; "interp_procs": `proc` for (pid, runtime); no
 *     "interp_code" ranges;
 *   - "interp_counters": `counters`, the runtime's own (other runtimes' counts are dropped).
 * Include it once, after the system headers; it needs nothing else before it.
 */
#ifndef STACKSCOPE_TESTS_BPF_WORLD_H
#define STACKSCOPE_TESTS_BPF_WORLD_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "abi.h"

static struct {
	pid_t pid;     /* the process whose memory the walk reads */
	__u32 runtime; /* enum user_frame_kind of the runtime under test */
	__u64 file_id; /* its interpreter file (0: none) */
	struct interp_file file;
	struct interp_proc proc;
	__u64 counters[INTERP_COUNTER_MAX];
} world;

static int ss_read_user(void *dst, __u32 size, __u64 addr)
{
	struct iovec local = { dst, size }, remote = { (void *)(uintptr_t)addr, size };

	if (process_vm_readv(world.pid, &local, 1, &remote, 1, 0) != (ssize_t)size) {
		memset(dst, 0, size);
		return -EFAULT;
	}
	return 0;
}

/* No mapping, file, table page, pool segment, entry or rule is ever found; no process has code
 * ranges.
 */
#define BPF_WORLD_NOTHING(type, name, ...) \
	static type *name(__VA_ARGS__)     \
	{                                  \
		return NULL;               \
	}

BPF_WORLD_NOTHING(struct mapping_info, ss_lookup_mapping, __u32 pid, __u64 pc)
BPF_WORLD_NOTHING(struct file_info, ss_lookup_file, __u64 file_id)
BPF_WORLD_NOTHING(struct unwind_page, ss_lookup_page, __u64 file_id, __u64 page)
BPF_WORLD_NOTHING(void, ss_lookup_segment, __u32 segment)
BPF_WORLD_NOTHING(struct unwind_entry, ss_lookup_entry, void *segment, __u32 index)
BPF_WORLD_NOTHING(struct unwind_rule, ss_lookup_rule, __u32 index)
BPF_WORLD_NOTHING(struct interp_code, ss_interp_code, __u32 pid)

struct unwind_cursor;
static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx)
{
	(void)st, (void)which, (void)ctx;
	return -1;
}

static struct interp_file *ss_interp_file(__u64 file_id)
{
	return world.file_id && file_id == world.file_id ? &world.file : NULL;
}

static struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime)
{
	return pid == (__u32)world.pid && runtime == world.runtime ? &world.proc : NULL;
}

static void ss_interp_count(__u32 runtime, __u32 which)
{
	if (runtime == world.runtime && which < INTERP_COUNTER_MAX)
		world.counters[which]++;
}

#include "interp/dispatch.h"

#endif
