/* Selection and probabilistic profiling, the eBPF half: whether a process's samples are taken
 * at all, decided before anything else a sample costs (no stack read, no walk, no record).
 * Included by sampler.bpf.c after its "counters" map and count().
 *
 * Userspace (src/proc/selection.c) classifies processes by the rules (pid, name, cgroup,
 * container, Kubernetes pod; include and exclude) and writes the verdicts here:
 *   "sel_procs"   tgid -> the verdict and the cgroup it was given in (a process moved to another
 *                 cgroup is unclassified again); LRU: an evicted process is classified again.
 *   "sel_cgroups" cgroup id (the cgroup v2 directory's inode) -> what the cgroup rules (cgroup,
 *                 container and pod: each a function of the cgroup path) say of processes in
 *                 it; every cgroup userspace saw has an entry, SEL_CG_NONE when no rule names
 *                 it (a pod's cgroup whose names the node does not show yet has none).
 * A process with no verdict yet (new since the last scan, or exec'd under name rules, which
 * drop its verdict here: the name changed) is decided here from its cgroup when the cgroup
 * rules alone can decide it (an exclude rule names its cgroup, or the rules are cgroup rules
 * only); otherwise it is "unclassified": sampled and walked as before selection existed, and
 * userspace, which classifies it when the exec record or its first sample arrives, drops what
 * it walked if the verdict is no (COUNTER_SEL_UNCLASSIFIED counts those samples). So a new
 * process a name rule selects is profiled from its first sample, and a rejected one costs at
 * most the reader's one poll of walks.
 *
 * sel_state (a global userspace writes through the skeleton's mapped .bss) switches it all
 * live: rules on or off, and the probabilistic interval's verdict for the whole host.
 */
#ifndef STACKSCOPE_SELECTION_H
#define STACKSCOPE_SELECTION_H

#include "abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SEL_PROCS_CAP);
	__type(key, __u32); /* tgid */
	__type(value, struct sel_verdict);
} sel_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SEL_CGROUPS_CAP);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);   /* cgroup id */
	__type(value, __u32); /* enum sel_cgroup */
} sel_cgroups SEC(".maps");

volatile struct selection_state sel_state;

/* Keep tgid's samples? counted: a CPU sample's drop (by the rules, or by a probabilistic interval
 * that is off) is counted here, not as a loss; t0: when the sample's program started (the
 * cost of a rejected sample, COUNTER_SEL_NS).
 */
static __always_inline bool sel_wanted(__u32 tgid, bool counted, __u64 t0)
{
	struct sel_verdict *v;
	__u32 *cg, verdict;
	__u64 cgid;

	if (sel_state.prob_enabled && !sel_state.prob_on) {
		if (counted)
			count(COUNTER_PROB_OFF, 1);
		return false;
	}
	if (!sel_state.active)
		return true;
	cgid = bpf_get_current_cgroup_id();
	v = bpf_map_lookup_elem(&sel_procs, &tgid);
	if (v && v->cgroup_id == cgid) {
		verdict = v->verdict;
	} else {
		cg = bpf_map_lookup_elem(&sel_cgroups, &cgid);
		if (cg && *cg == SEL_CG_EXCLUDE)
			verdict = SEL_DROP;
		else if (cg && !sel_state.user_rules)
			verdict = *cg == SEL_CG_INCLUDE || !sel_state.has_include ? SEL_KEEP
										  : SEL_DROP;
		else
			verdict = SEL_UNCLASSIFIED;
	}
	if (verdict == SEL_KEEP)
		return true;
	if (verdict == SEL_UNCLASSIFIED) {
		if (counted)
			count(COUNTER_SEL_UNCLASSIFIED, 1);
		return true;
	}
	if (counted) {
		count(COUNTER_SEL_DROPPED, 1);
		count(COUNTER_SEL_NS, bpf_ktime_get_ns() - t0);
	}
	return false;
}

/* fork: the child inherits its parent's verdict (same name, same executable, same cgroup:
 * decided at once). exec under name rules: the verdict goes (a new name).
 */
static __always_inline void sel_fork(__u32 ptgid, __u32 ctgid)
{
	struct sel_verdict *v;

	if (!sel_state.active)
		return;
	v = bpf_map_lookup_elem(&sel_procs, &ptgid);
	if (v)
		bpf_map_update_elem(&sel_procs, &ctgid, v, BPF_ANY);
}

static __always_inline void sel_exec(__u32 tgid)
{
	if (sel_state.active && sel_state.name_rules)
		bpf_map_delete_elem(&sel_procs, &tgid);
}

#endif
