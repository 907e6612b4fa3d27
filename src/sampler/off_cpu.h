/* Off-CPU sampling (bpf/off_cpu.h), the sampler's side: the threshold and the walk budget
 * written into the BPF configuration before load.
 */
#ifndef STACKSCOPE_SAMPLER_OFF_CPU_H
#define STACKSCOPE_SAMPLER_OFF_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OFF_CPU_DEFAULT_MIN_NS 1000000ULL /* 1 ms */
#define OFF_CPU_DEFAULT_RATE 2000         /* stack walks per second, all CPUs */

struct sampler_bpf;

/* Before load: enable (or leave unloaded) the off-CPU programs; rate is walks per second
 * over all CPUs (0: the default), split over cpu_cnt CPUs. 0, or -ENOTSUP (logged) when
 * off-CPU sampling cannot run here.
 */
int off_cpu__configure(struct sampler_bpf *skel, bool enable, uint64_t min_ns, unsigned int rate,
		       unsigned int cpu_cnt);

/* Ring-buffer room for off-CPU records (0 when disabled): a second of stack walks at rate
 * (0: the default), ~2 KiB each (the reader drains every 100 ms: bursts fit).
 */
size_t off_cpu__ringbuf_bytes(bool enable, unsigned int rate);

/* Command-line values (record and agent): --off-cpu-min USECS (0-60000000) into *min_ns, or
 * (rate) --off-cpu-rate N (1-1000000) into *rate. 0 or -EINVAL; then the option's usage.
 */
int off_cpu__parse_option(bool rate, const char *arg, uint64_t *min_ns, unsigned int *rate_out);
const char *off_cpu__option_usage(bool rate);

/* "sleep", "uninterruptible"... for an enum off_cpu_state ("other" when out of range). */
const char *off_cpu_state__name(uint32_t state);

#endif
