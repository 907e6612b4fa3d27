/* Probing the running kernel's BPF features: helpers by libbpf's probe (a tiny program calling
 * the helper, which the verifier accepts or not), kfuncs by their names in the kernel's BTF,
 * and whether a perf_event program may use a hash map allocated at run time by loading one.
 */
#include <linux/bpf.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "sampler/kernel_features.h"

static bool has_helper(enum bpf_prog_type type, enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(type, id, NULL) == 1;
}

/* Loads "lookup key 0 in a BPF_F_NO_PREALLOC hash map; return 0" as a perf_event program:
 * kernels before 6.1 refuse it ("perf_event programs can only use preallocated hash map").
 */
static bool perf_event_takes_no_prealloc(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mopts, .map_flags = BPF_F_NO_PREALLOC);
	int map_fd, prog_fd;
	bool ok;

	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, NULL, 4, 4, 1, &mopts);
	if (map_fd < 0)
		return false;
	{
		struct bpf_insn insns[] = {
			/* *(u32 *)(r10 - 4) = 0 */
			{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
			/* r2 = r10 - 4 */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X,
			  .dst_reg = BPF_REG_2,
			  .src_reg = BPF_REG_10 },
			{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
			/* r1 = the map (two-slot load) */
			{ .code = BPF_LD | BPF_DW | BPF_IMM,
			  .dst_reg = BPF_REG_1,
			  .src_reg = BPF_PSEUDO_MAP_FD,
			  .imm = map_fd },
			{ 0 },
			{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
			/* return 0 */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
			{ .code = BPF_JMP | BPF_EXIT },
		};

		prog_fd = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, NULL, "GPL", insns,
					sizeof(insns) / sizeof(insns[0]), NULL);
	}
	ok = prog_fd >= 0;
	if (ok)
		close(prog_fd);
	close(map_fd);
	return ok;
}

void kernel_features__probe(struct kernel_features *kf)
{
	kf->btf = !access("/sys/kernel/btf/vmlinux", R_OK);
	kf->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	kf->task_btf = has_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_task_btf);
	kf->task_pt_regs = has_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs);
	kf->loop = has_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop);
	kf->find_vma = has_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_find_vma);
	kf->perf_no_prealloc = perf_event_takes_no_prealloc();
}
