/* Off-CPU sampling setup: configuration before load. */
#include <errno.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "abi.h"
#include "base/log.h"
#include "sampler/off_cpu.h"
#include "sampler.skel.h"

static const char *const state_names[OFF_CPU_STATE_CNT] = {
	[OFF_CPU_PREEMPTED] = "preempted",
	[OFF_CPU_SLEEP] = "sleep",
	[OFF_CPU_UNINTERRUPTIBLE] = "uninterruptible",
	[OFF_CPU_IDLE] = "idle",
	[OFF_CPU_STOPPED] = "stopped",
	[OFF_CPU_OTHER] = "other",
};

size_t off_cpu__ringbuf_bytes(bool enable, unsigned int rate)
{
	return enable ? (size_t)(rate ? rate : OFF_CPU_DEFAULT_RATE) * 2048 : 0;
}

/* A whole number 0..max, digits only. */
static int parse_whole(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

int off_cpu__parse_option(bool rate, const char *arg, uint64_t *min_ns, unsigned int *rate_out)
{
	uint64_t n;

	if (parse_whole(arg, rate ? 1000000 : 60000000, &n) || (rate && !n))
		return -EINVAL;
	if (rate)
		*rate_out = (unsigned int)n;
	else
		*min_ns = n * 1000;
	return 0;
}

const char *off_cpu__option_usage(bool rate)
{
	return rate ? "--off-cpu-rate must be walks per second (1-1000000)"
		    : "--off-cpu-min must be microseconds (0-60000000)";
}

const char *off_cpu_state__name(uint32_t state)
{
	return state < OFF_CPU_STATE_CNT ? state_names[state] : "other";
}

int off_cpu__configure(struct sampler_bpf *skel, bool enable, uint64_t min_ns, unsigned int rate,
		       unsigned int cpu_cnt)
{
	uint64_t per_cpu;

	bpf_program__set_autoload(skel->progs.on_switch, enable);
	if (!enable) /* the per-thread map unused: 5.5 MiB of kernel memory saved */
		return bpf_map__set_max_entries(skel->maps.off_cpu_threads, 1);
	if (skel->rodata->sampler_cfg.tail_calls) {
		pr_err("off-CPU profiling needs bpf_loop (Linux 5.17): this kernel has the "
		       "tail-call unwinder only\n");
		return -ENOTSUP;
	}
	rate = rate ? rate : OFF_CPU_DEFAULT_RATE;
	per_cpu = rate / (cpu_cnt ? cpu_cnt : 1);
	if (!per_cpu)
		per_cpu = 1;
	skel->rodata->sampler_cfg.off_cpu_min_ns = min_ns;
	skel->rodata->sampler_cfg.off_cpu_interval_ns = 1000000000ULL / per_cpu;
	/* a quarter of a second of credit per CPU */
	skel->rodata->sampler_cfg.off_cpu_burst_ns =
		(per_cpu / 4 + 1) * skel->rodata->sampler_cfg.off_cpu_interval_ns;
	return 0;
}
