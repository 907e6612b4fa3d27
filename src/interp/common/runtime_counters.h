/* The fields of a runtime's descriptor (struct interp_runtime, ../interp.h) that follow from its
 * two counter lists and its state type, so that a runtime writes each of them once: the names
 * of its eBPF counters (its bpf/interp/<runtime>/bpf_abi.h list, SS_COUNTER_NAME), the names of
 * its own counters (its INTERP_LIST_TEXT list), the size of its state and where in it the
 * values of its own counters are.
 *
 * Invariants: the state type has a member `uint64_t stats[n]`, n its own counters; stat_cnt is
 * that array's length, so interp_runtime__stats never reads past it, and a list with more
 * entries than the array (or than bpf_cnt) does not compile. The name tables are unnamed arrays
 * of static storage (file-scope compound literals).
 */
#ifndef STACKSCOPE_RUNTIME_COUNTERS_H
#define STACKSCOPE_RUNTIME_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "interp/interp.h"

/* How many own counters a runtime's state type holds: its stats[] array's length. */
#define INTERP_STAT_CNT(state_type) (sizeof(((state_type *)0)->stats) / sizeof(uint64_t))

/* In a runtime's descriptor, for example:
 *   INTERP_RUNTIME_COUNTERS(PY_COUNTERS, PY_COUNTER_CNT, PY_STATS, struct python),
 * sets bpf_counter_names, bpf_counter_cnt, stat_names, stat_cnt, state_sz and stats_off.
 */
#define INTERP_RUNTIME_COUNTERS(bpf_list, bpf_cnt, stat_list, state_type)                        \
	.bpf_counter_names = (const char *const[bpf_cnt]){ bpf_list(SS_COUNTER_NAME) },          \
	.bpf_counter_cnt = (bpf_cnt),                                                            \
	.stat_names =                                                                            \
		(const char *const[INTERP_STAT_CNT(state_type)]){ stat_list(INTERP_LIST_TEXT) }, \
	.stat_cnt = INTERP_STAT_CNT(state_type), .state_sz = sizeof(state_type),                 \
	.stats_off = offsetof(state_type, stats)

#endif
