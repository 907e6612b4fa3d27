/* Memory-growth sampling (bpf/mem_growth.h, `--faults`), the sampler's side: the programs
 * loaded or not, the fault period written into the BPF configuration before load, and one
 * page-faults perf event per CPU with on_fault attached.
 */
#ifndef STACKSCOPE_SAMPLER_MEM_GROWTH_H
#define STACKSCOPE_SAMPLER_MEM_GROWTH_H

#include <stdbool.h>
#include <stdint.h>

#define MEM_GROWTH_DEFAULT_PERIOD 64 /* page faults per sample: 256 KiB of 4 KiB pages */

struct sampler_bpf;
struct bpf_link;

/* Before load: enable (or leave unloaded) the memory-growth programs; period: page faults
 * per sample (0: the default). 0, or -ENOTSUP (logged) with the tail-call unwinder.
 */
int mem_growth__configure(struct sampler_bpf *skel, bool enable, uint64_t period);

/* After load: a page-faults event per CPU (cpus[0..cnt)), on_fault attached. fds[] and
 * links[] (cnt entries each, fds preset to -1) receive what was opened: the caller closes and
 * destroys them, also after a failure. 0 or -errno (logged).
 */
int mem_growth__attach(struct sampler_bpf *skel, const unsigned int *cpus, unsigned int cnt,
		       int *fds, struct bpf_link **links);

/* --fault-period N (1-1000000000): 0 or -EINVAL. */
int mem_growth__parse_period(const char *arg, uint64_t *period);

/* "page fault", "brk", "mmap" for an enum mem_kind ("memory" when out of range). */
const char *mem_kind__name(uint32_t kind);

#endif
