/* The agent's in-use view across intervals (`agent --alloc`).
 *
 * An interval's profile says, for allocations: alloc_objects/alloc_space, what was allocated
 * (sampled, unbiased) during the interval; inuse_objects/inuse_space, what is live at the
 * interval's end, wherever it was allocated: the interval's own allocations not freed yet plus
 * those of earlier intervals still live (carried). At each interval's end every entry of the
 * live table is carried into the next profile (alloc_live__carry()): a free in a later
 * interval still finds it and takes it out. The live set is bounded by eBPF's "alloc_live"
 * map (65,536 entries; a full one counted, that allocation then never in use) and the table's
 * cap. Entries of processes that have exited are dropped at the carry, from the table and
 * from eBPF's map, so a dead process never stays "in use" nor holds a slot.
 */
#ifndef STACKSCOPE_PIPELINE_ALLOC_CARRY_H
#define STACKSCOPE_PIPELINE_ALLOC_CARRY_H

#include <stdint.h>

struct alloc_live;
struct profile;

/* Carries al's entries from profile cur (the interval ending) into next; map_fd: eBPF's
 * "alloc_live" map (entries of exited processes deleted there too; -1: not). A failure is
 * logged once at debug level and counted in the table's stats; never fatal.
 */
void alloc_carry__run(struct alloc_live *al, const struct profile *cur, struct profile *next,
		      int map_fd);

/* Process pid exited or exec'd (record): its live allocations taken out of prof's in-use view
 * (alloc_live__process_ended()) and out of eBPF's map (map_fd; -1: not). Never fatal.
 */
void alloc_carry__process_ended(struct alloc_live *al, struct profile *prof, uint32_t pid,
				int map_fd);

#endif
