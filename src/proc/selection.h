/* Selection: which processes are profiled, by rules on their identity, and probabilistic
 * profiling (whole intervals on or off at random), both decided in eBPF (bpf/selection.h) from
 * what this module writes there.
 *
 * Rules (flags of record and agent, the same keys in agent --config):
 *   --select-pid / --exclude-pid PID[,PID]   the process (its forks inherit the verdict)
 *   --select-name / --exclude-name REGEX     POSIX extended regex, unanchored, matched against
 *                                            the process name (comm, 15 characters) OR the
 *                                            executable's file name (basename of
 *                                            /proc/PID/exe): either matching is a match
 *   --select-cgroup / --exclude-cgroup GLOB  fnmatch() glob ('*' crosses '/') on the cgroup v2
 *                                            path, matched against the path and each of its
 *                                            ancestors: /system.slice/x.service takes its
 *                                            subtree
 *   --select-container / --exclude-container ID  a container id (12..64 hex digits, a prefix
 *                                            of the id container.h reads from the cgroup path)
 *   --select-pod / --exclude-pod NAMESPACE[/POD]  a Kubernetes pod by its namespace and name,
 *                                            fnmatch() globs each ('*' stops at the '/';
 *                                            NAMESPACE alone: its every pod), known from the
 *                                            cgroup path's pod uid and the node's log folder
 *                                            (proc/k8s_pod.h, under --host-root)
 * A process is kept when no select rule exists or one matches, and no exclude rule matches:
 * exclude wins. Rules of one kind and of different kinds combine the same way (any match).
 *
 * One function decides from one identity (selection_rules__keep(), struct proc_identity).
 * Cgroup, container and pod rules depend on the cgroup alone, so they are also decided per
 * cgroup (selection_rules__cgroup()) and eBPF applies them before anything else a sample
 * costs. A pod's names are on the node before its containers run (the kubelet makes the pod's
 * log folder before it asks the runtime for the sandbox); a process whose pod the node does
 * not show is decided as one in no pod, and its cgroup's verdict is not kept, so the next
 * process there asks again.
 *
 * Engine (struct selection): keeps a userspace verdict per process (authoritative: a sample
 * of a process eBPF could not classify is dropped here when its verdict is no), mirrors the
 * verdicts and every cgroup's into eBPF, and draws the probabilistic intervals. Single-
 * threaded: the session's loop calls it.
 */
#ifndef STACKSCOPE_SELECTION_H
#define STACKSCOPE_SELECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SELECTION_MAX_RULES 64

enum selection_kind {
	SELECTION_PID = 0,
	SELECTION_NAME,
	SELECTION_CGROUP,
	SELECTION_CONTAINER,
	SELECTION_POD,
	SELECTION_KIND_CNT,
};

/* The rules as written (the strings are borrowed: argv or the config file's entries). */
struct selection_spec {
	struct {
		enum selection_kind kind;
		bool exclude;
		const char *text;
	} rule[SELECTION_MAX_RULES];
	size_t cnt;
};

/* Append one rule after checking it; 0, or -EINVAL with why in err (one line, no prefix). */
int selection_spec__add(struct selection_spec *sp, enum selection_kind kind, bool exclude,
			const char *text, char *err, size_t err_sz);
/* The flag of a kind: "select-name", "exclude-cgroup"... */
const char *selection_kind__flag(enum selection_kind kind, bool exclude);
/* Do two specs hold the same rules in the same order? */
bool selection_spec__equal(const struct selection_spec *a, const struct selection_spec *b);

/* Who a process is, as the rules see it. NULL or "" fields are unknown (match nothing). */
struct proc_identity {
	pid_t pid;
	const char *comm;          /* the process name */
	const char *exe;           /* the executable's path or file name */
	const char *cgroup_path;   /* cgroup v2 path, "/..." */
	const char *container_id;  /* 64 hex digits */
	const char *k8s_namespace; /* the pod's namespace and name (proc/k8s_pod.h) */
	const char *k8s_pod;
};

struct selection_rules;

/* Compiled rules; NULL with errno (EINVAL: err says which rule; ENOMEM). An empty spec gives
 * rules that keep everything (selection_rules__active() false).
 */
struct selection_rules *selection_rules__new(const struct selection_spec *sp, char *err,
					     size_t err_sz);
void selection_rules__free(struct selection_rules *r);
bool selection_rules__active(const struct selection_rules *r);
/* The verdict for one process. */
bool selection_rules__keep(const struct selection_rules *r, const struct proc_identity *id);
/* Do the rules need a process's pod names (a pod rule)? */
bool selection_rules__need_pods(const struct selection_rules *r);
/* What the rules that depend on the cgroup alone (cgroup, container, pod) say of processes in
 * id's cgroup (its cgroup_path, container_id, k8s_namespace, k8s_pod; the rest unused): an
 * enum sel_cgroup (bpf/abi.h).
 */
int selection_rules__cgroup(const struct selection_rules *r, const struct proc_identity *id);

struct selection;
struct selection_state;

struct selection_stats {
	uint64_t classified;        /* verdicts made (processes, again after an exec) */
	uint64_t kept, dropped;     /* of those */
	uint64_t user_dropped;      /* samples eBPF sent unclassified, dropped here */
	uint64_t cgroups;           /* cgroup verdicts written to eBPF */
	uint64_t bpf_failures;      /* map updates refused (full): those decided here */
	uint64_t prob_on, prob_off; /* probabilistic intervals drawn on / off */
};

/* The maps and switches of bpf/selection.h (sampler.h gives them); -1, -1, NULL for tests:
 * nothing written to eBPF. host_root: the node's / for pod names (NULL: "/"; copied). Starts
 * with no rules, probabilistic off.
 */
struct selection *selection__new(int procs_fd, int cgroups_fd, volatile struct selection_state *st,
				 const char *host_root);
void selection__free(struct selection *sel);
/* Put rules in force (owned from now on; NULL: none): every verdict is made again (a /proc and
 * /sys/fs/cgroup scan). 0 or -ENOMEM.
 */
int selection__set_rules(struct selection *sel, struct selection_rules *rules);
const struct selection_rules *selection__rules(const struct selection *sel);
/* Keep a sample of pid? comm: the sample's process name (used when /proc no longer has it). */
bool selection__sample(struct selection *sel, pid_t pid, const char *comm);
/* fn for every process kept so far. */
void selection__each_kept(const struct selection *sel, void (*fn)(pid_t pid, void *ctx), void *ctx);
/* exec record (the name changed: classified again at once) and exit record. */
void selection__exec(struct selection *sel, pid_t pid, const char *comm);
void selection__exit(struct selection *sel, pid_t pid);

/* Probabilistic profiling as the reference profiler's -probabilistic-threshold/-interval:
 * every interval_ns, profile with probability threshold/100 (a draw in [0, 100) below the
 * threshold), for the whole host. threshold 100 (or 0 interval): off, always profiling.
 * A new setting draws at once.
 */
void selection__set_probabilistic(struct selection *sel, unsigned int threshold,
				  uint64_t interval_ns, uint64_t now_ns);
/* Draw when the interval is over. Returns 1 when a new interval began (on or off), else 0. */
int selection__tick(struct selection *sel, uint64_t now_ns);
/* Is this interval profiled (always true without probabilistic profiling)? */
bool selection__profiling(const struct selection *sel);
void selection__stats(const struct selection *sel, struct selection_stats *out);

/* One log line (info) of what selection did: c, the sampler's counters (COUNTER_CNT). Nothing
 * when it did nothing.
 */
void selection__print_summary(const struct selection *sel, const uint64_t *c);

/* A uniform draw in [0, 100) (getrandom()). */
unsigned int selection__draw(void);

#endif
