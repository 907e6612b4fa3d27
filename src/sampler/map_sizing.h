/* The BPF maps' sizes from the machine and its load (docs/ARCHITECTURE.md "BPF map sizes").
 *
 * The maps used to be sized for a large host whatever the host: 31 MiB for a `record` of a
 * quiet 2-CPU box, most of it an unwind-entry pool and per-process hashes that such a box
 * never fills. Now each map is sized from what fills it: the per-process maps
 * from the processes alive at start (with room for growth: hashes without preallocation cost
 * only their buckets until used), the per-thread ones from the threads; the unwind-entry pool
 * (a BPF array: it cannot grow) keeps its 16 MiB unless the memory is small. --map-scale N
 * multiplies every one of them for hosts whose load the start-up count does not show. A full
 * map is counted where it was before.
 */
#ifndef STACKSCOPE_MAP_SIZING_H
#define STACKSCOPE_MAP_SIZING_H

#include <stdint.h>

#define MAP_SCALE_MAX 64

struct map_sizing_input {
	unsigned int cpus;    /* online CPUs */
	uint64_t mem_bytes;   /* MemTotal; 0: unknown */
	unsigned int procs;   /* processes alive now */
	unsigned int threads; /* threads alive now */
	unsigned int scale;   /* --map-scale, 1..MAP_SCALE_MAX (0 counts as 1) */
};

struct map_sizes {
	uint32_t unwind_entries; /* the table pool, in 4-byte entries (even) */
	uint32_t unwind_pages;   /* a table's 64 KiB pages of code */
	uint32_t proc_hash;      /* per-process hashes without preallocation (interp_procs,
				  * interp_code, new_mappings, pid_filter) */
	uint32_t proc_lru;       /* per-process LRU caches (sel_procs), always preallocated */
	uint32_t forked;         /* children not yet exec'd (LRU: a fork storm evicts) */
	uint32_t files;          /* executables by file_id, and files as the kernel names them
				  * (known_files: 4x) */
	uint32_t mmap_pending;   /* threads inside mmap (LRU) */
	uint32_t threads;        /* per-thread LRU state: off-CPU stays, allocation calls */
};

void map_sizing__compute(const struct map_sizing_input *in, struct map_sizes *out);

/* cpus and scale are the caller's; mem_bytes from /proc/meminfo, procs from /proc, threads
 * from /proc/loadavg.
 */
void map_sizing__read_machine(struct map_sizing_input *in);

#endif
