/* Appended to the arm64 vmlinux.h (Makefile, `make arm64`), which comes from the BTF of
 * Debian 12's arm64 kernel (6.1): kernel types the sampler uses that are newer than 6.1
 * (their layout is the kernel's; CO-RE and the kfuncs' checks resolve them at load).
 */
#ifndef STACKSCOPE_ARM64_VMLINUX_EXTRA_H
#define STACKSCOPE_ARM64_VMLINUX_EXTRA_H

struct bpf_iter_task_vma { /* 6.7: the task VMA iterator kfuncs */
	__u64 __opaque[1];
};

#endif
