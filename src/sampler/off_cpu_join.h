/* Off-CPU joining: eBPF sends a thread's stack when it leaves the CPU (a RECORD_SAMPLE marked
 * off_cpu) and, only if it stayed off long enough, a RECORD_OFF_CPU when it comes back
 * (bpf/off_cpu.h). This keeps the latest stack of each thread until its stay ends: claimed by
 * the RECORD_OFF_CPU with the same (tid, time of leaving), it becomes one off-CPU sample
 * (off_cpu_ns, off_cpu_state set); replaced by the thread's next stack, it was a short stay.
 * Both come through the one ring buffer, the stack first (a thread comes back only after it
 * left).
 *
 * Memory: one record per thread off CPU with a stack, freed when claimed or replaced, or
 * by off_cpu_join__expire() (threads that exited after a short stay leave one behind).
 * Not thread-safe.
 */
#ifndef STACKSCOPE_OFF_CPU_JOIN_H
#define STACKSCOPE_OFF_CPU_JOIN_H

#include <stddef.h>
#include <stdint.h>

struct sample_record;
struct off_cpu_record;

struct off_cpu_join_stats {
	uint64_t stacks;      /* off-CPU stacks received */
	uint64_t joined;      /* stays joined to their stack: off-CPU samples */
	uint64_t short_stays; /* stacks replaced before any stay claimed them */
	uint64_t unmatched;   /* stays whose stack was not there (or another) */
	uint64_t unmatched_ns;
	uint64_t expired;     /* stacks dropped: no stay claimed them for too long (a short
			       * stay before the thread exited, or a very long stay) */
	uint64_t bad_records; /* malformed records */
	uint64_t pending;     /* stacks waiting for their stay now */
};

struct off_cpu_join;

struct off_cpu_join *off_cpu_join__new(void);
void off_cpu_join__free(struct off_cpu_join *j);

/* Keep an off-CPU stack record of size bytes. 0, -EINVAL (malformed: counted), -ENOMEM. */
int off_cpu_join__stack(struct off_cpu_join *j, const struct sample_record *rec, size_t size);
/* The stay in r (size bytes): its stack as an off-CPU sample with off_cpu_ns and
 * off_cpu_state set, *out_size its size; owned by the caller (free()). NULL: no stack for it
 * (counted) or ENOMEM (errno).
 */
struct sample_record *off_cpu_join__end(struct off_cpu_join *j, const struct off_cpu_record *r,
					size_t size, size_t *out_size);
/* Drop the stacks of threads that left the CPU before before_ns (CLOCK_MONOTONIC). */
void off_cpu_join__expire(struct off_cpu_join *j, uint64_t before_ns);
const struct off_cpu_join_stats *off_cpu_join__stats(const struct off_cpu_join *j);

#endif
