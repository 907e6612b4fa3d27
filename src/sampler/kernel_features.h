/* What the running kernel offers the BPF programs, probed once before the load: the sampler
 * picks its program variants from it (docs/ARCHITECTURE.md "Kernel features and program
 * variants").
 */
#ifndef STACKSCOPE_KERNEL_FEATURES_H
#define STACKSCOPE_KERNEL_FEATURES_H

#include <stdbool.h>

struct kernel_features {
	bool btf;              /* /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF) */
	bool ringbuf;          /* BPF_MAP_TYPE_RINGBUF (5.8) */
	bool task_btf;         /* bpf_get_current_task_btf (5.11) */
	bool task_pt_regs;     /* bpf_task_pt_regs (5.15) */
	bool loop;             /* bpf_loop (5.17) */
	bool find_vma;         /* bpf_find_vma in tracepoint programs (5.17) */
	bool perf_no_prealloc; /* perf_event programs may use hash maps allocated at run time
				* (the BPF memory allocator, 6.1); before, they must be
				* preallocated */
};

/* Probes the running kernel (loads a few tiny programs; needs the BPF capabilities). */
void kernel_features__probe(struct kernel_features *kf);

#endif
