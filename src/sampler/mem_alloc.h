/* Allocation sampling (bpf/mem_alloc.h, `--alloc`), the sampler's side: the programs loaded or
 * not, the sampling rate and its exponential table written before load, and the uprobes on the
 * malloc family of the allocator files chosen (sampler/alloc_targets.h): those of each -p
 * process, every libc and named allocator mapped by a process when system-wide (a COMMAND's
 * tree: sampler/alloc_procs.h, with mem_alloc__attach_target()).
 * Uprobes are perf-event links: they go with the process's file descriptors, whatever way it
 * ends (exit, kill, crash).
 */
#ifndef STACKSCOPE_SAMPLER_MEM_ALLOC_H
#define STACKSCOPE_SAMPLER_MEM_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEM_ALLOC_DEFAULT_RATE (512 * 1024) /* mean bytes between samples, as tcmalloc */

struct sampler_bpf;
struct bpf_link;

/* Before load: enable (or leave unloaded) the allocation programs; rate: mean bytes between
 * samples (0: the default). 0, or -ENOTSUP (logged) with the tail-call unwinder.
 */
int mem_alloc__configure(struct sampler_bpf *skel, bool enable, uint64_t rate);

/* After load: uprobes on the allocator files (sampler/alloc_targets.h) of each of
 * pids[0..pid_cnt), in that process only (no other process traps); with pid_cnt 0, on the libc
 * and named allocators any process maps (all), or on stackscope's own libc and command's
 * files (NULL: none), for every process that maps them (eBPF's pid filter then drops the
 * others' calls, after their trap). *links (malloc'ed, *link_cnt entries) receives them: the
 * caller destroys and frees them, also after a failure. 0 or -errno (logged).
 */
int mem_alloc__attach(struct sampler_bpf *skel, const pid_t *pids, size_t pid_cnt, bool all,
		      char *const *command, struct bpf_link ***links, size_t *link_cnt);

struct alloc_target;

/* The probes of target t, in pid's address space only (-1: every process mapping it; a pid's
 * probes follow it across exec), the returns first so that no entry goes without its return
 * (bpf/mem_alloc.h's nesting), appended to *links (*cnt of *cap, grown). say: one info line
 * and a failure logged, else neither. 0 or -errno (the links made so far are in *links).
 */
int mem_alloc__attach_target(struct sampler_bpf *skel, const struct alloc_target *t, pid_t pid,
			     bool say, struct bpf_link ***links, size_t *cnt, size_t *cap);

/* The ring buffer's room for allocation samples (0 when disabled): a malloc-heavy process
 * sends thousands a second (2 GiB a second at the default rate: ~4,000), in bursts the
 * reader, woken at half full, drains late on a loaded box.
 */
size_t mem_alloc__ringbuf_bytes(bool enable);

/* --alloc-rate BYTES (1-1073741824): 0 or -EINVAL. */
int mem_alloc__parse_rate(const char *arg, uint64_t *rate);

/* The unbiased weights of a sampled allocation of size bytes at rate: the allocations
 * (*objects) and bytes (*bytes) it stands for, 1 / (1 - exp(-size / rate)) times its own.
 */
void mem_alloc__weights(uint64_t size, uint64_t rate, uint64_t *objects, uint64_t *bytes);

/* "malloc", "calloc"... for an enum alloc_fn ("alloc" when out of range). */
const char *alloc_fn__name(uint32_t fn);

#endif
