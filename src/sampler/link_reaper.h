/* BPF links destroyed on a thread of their own.
 *
 * Destroying a uprobe's link unregisters the probe and waits out the RCU flavours its handlers
 * may run under (tasks-trace RCU and SRCU on 6.x kernels), and the kernel does these one after
 * the other whatever thread asks (strace, 6.18 on this 2-CPU VM: 16 links from 8 threads still
 * closed ~80 ms apart; 0.15-2.4 s each under load). So `record --alloc -- COMMAND` read no
 * sample for 1.5-2 s on the sampling thread each time a process of the command exited with
 * its 8-16 probes. Given to the reaper, the links go on its thread (made at the first link
 * given) and the caller returns at once; at the end link_reaper__free() waits for the rest.
 * (One uprobe_multi link per file, Linux 6.6, would make it one wait: not yet used.)
 */
#ifndef STACKSCOPE_SAMPLER_LINK_REAPER_H
#define STACKSCOPE_SAMPLER_LINK_REAPER_H

#include <stddef.h>

struct bpf_link;
struct link_reaper;

struct link_reaper *link_reaper__new(void);

/* Takes the links (the array stays the caller's); a link the reaper cannot queue (no memory,
 * no thread) is destroyed here.
 */
void link_reaper__give(struct link_reaper *r, struct bpf_link *const *links, size_t cnt);

/* Waits until every link given is destroyed, then frees the reaper. */
void link_reaper__free(struct link_reaper *r);

#endif
