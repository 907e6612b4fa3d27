/* Memory-growth sampling setup: configuration before load, page-fault events after. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "abi.h"
#include "base/log.h"
#include "sampler/mem_growth.h"
#include "sampler.skel.h"

static const char *const kind_names[MEM_KIND_CNT] = {
	[MEM_FAULT] = "page fault",
	[MEM_BRK] = "brk",
	[MEM_MMAP] = "mmap",
};

const char *mem_kind__name(uint32_t kind)
{
	return kind < MEM_KIND_CNT && kind_names[kind] ? kind_names[kind] : "memory";
}

int mem_growth__parse_period(const char *arg, uint64_t *period)
{
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	*period = strtoull(arg, &end, 10);
	return errno || *end || !*period || *period > 1000000000 ? -EINVAL : 0;
}

int mem_growth__configure(struct sampler_bpf *skel, bool enable, uint64_t period)
{
	bpf_program__set_autoload(skel->progs.on_fault, enable);
	bpf_program__set_autoload(skel->progs.on_brk, enable);
	bpf_program__set_autoload(skel->progs.on_mmap_anon, enable);
	if (!enable)
		return 0;
	if (skel->rodata->sampler_cfg.tail_calls) {
		pr_err("--faults needs bpf_loop (Linux 5.17): this kernel has the tail-call "
		       "unwinder only\n");
		return -ENOTSUP;
	}
	skel->rodata->sampler_cfg.fault_period = period ? period : MEM_GROWTH_DEFAULT_PERIOD;
	return 0;
}

static int open_page_faults(unsigned int cpu, uint64_t period)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = period,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int mem_growth__attach(struct sampler_bpf *skel, const unsigned int *cpus, unsigned int cnt,
		       int *fds, struct bpf_link **links)
{
	uint64_t period = skel->rodata->sampler_cfg.fault_period;
	unsigned int i;
	int err;

	for (i = 0; i < cnt; i++) {
		fds[i] = open_page_faults(cpus[i], period);
		if (fds[i] < 0) {
			err = -errno;
			pr_err("perf_event_open(page-faults, cpu %u): %s\n", cpus[i],
			       strerror(-err));
			return err;
		}
		links[i] = bpf_program__attach_perf_event(skel->progs.on_fault, fds[i]);
		if (!links[i]) {
			err = -errno;
			pr_err("cannot attach to the page-faults event on cpu %u: %s\n", cpus[i],
			       strerror(-err));
			return err;
		}
	}
	return 0;
}
