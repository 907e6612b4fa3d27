/* Kubernetes identity of a process from what its node tells, without an API call.
 *
 * The pod uid and the container id come from the process's cgroup path as the kubelet and
 * the CRI runtimes name it (cgroup v1 or v2, the systemd or the cgroupfs driver):
 *   systemd   .../kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<u_i_d>.slice/
 *             cri-containerd-<id>.scope | crio-<id>.scope | docker-<id>.scope
 *             (guaranteed pods: kubepods-pod<u_i_d>.slice right under kubepods.slice; kind and
 *             nested kubelets: kubelet-kubepods-...; CRI-O's crio-conmon-<id>.scope is the
 *             pod's monitor, not a container)
 *   cgroupfs  .../kubepods/[burstable|besteffort/]pod<u-i-d>/<id>   (crio-<id> with CRI-O)
 * where <id> is 64 lowercase hex digits and the uid a dashed uuid (underscores under systemd)
 * or, for static pods, the 32 hex digits of the pod's config hash. Paths seen from inside a
 * cgroup namespace ("/../../kubepods-besteffort-pod<uid>.slice/...") parse the same way.
 *
 * The pod's namespace and name come from the kubelet's log directory, the one place the node
 * keeps them in the open:  ROOT/var/log/pods/<namespace>_<pod-name>_<pod-uid>/<container>/
 * (names are DNS labels and subdomains: no '_', so the split is exact). The container's name,
 * in this order: the OCI spec the runtime keeps for the running container
 * (containerd: ROOT/run/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/config.json,
 * annotation io.kubernetes.cri.container-name; CRI-O: .../overlay-containers/<id>/userdata/
 * config.json under ROOT/run/containers/storage or ROOT/var/lib/containers/storage,
 * annotation io.kubernetes.container.name); a log file of the pod's log directory linking to
 * the id (docker through cri-dockerd); else the pod's only container (one directory under its
 * log directory, or under ROOT/var/lib/kubelet/pods/<uid>/containers/). ROOT is the node's /
 * as the agent sees it: "/" on the host, the host's / mounted read-only (e.g. /host) in a
 * DaemonSet.
 *
 * Invariants: the table holds at most pod_cap pods (least recently looked up evicted) and
 * K8S_POD_CONTAINER_CAP container names per pod; a pod or a container name the node does not
 * show is looked for again at most every K8S_POD_RETRY_NS (a pod that appears later is found
 * then); lookups read files only on a miss; nothing here logs.
 */
#ifndef STACKSCOPE_K8S_POD_H
#define STACKSCOPE_K8S_POD_H

#include <stdbool.h>
#include <stdint.h>

#define K8S_POD_UID_MAX 36        /* a dashed uuid; a static pod's hash is 32 */
#define K8S_CONTAINER_ID_LEN 64   /* hex digits */
#define K8S_NAMESPACE_MAX 63      /* DNS label */
#define K8S_POD_NAME_MAX 253      /* DNS subdomain */
#define K8S_CONTAINER_NAME_MAX 63 /* DNS label */
#define K8S_POD_CONTAINER_CAP 16
#define K8S_POD_RETRY_NS 2000000000ull

enum k8s_qos {
	K8S_QOS_NONE,       /* not in a pod */
	K8S_QOS_GUARANTEED, /* the pod's cgroup right under kubepods */
	K8S_QOS_BURSTABLE,
	K8S_QOS_BESTEFFORT,
};

/* What a cgroup path says. */
struct k8s_cgroup_ref {
	char pod_uid[K8S_POD_UID_MAX + 1];           /* lowercase, dashes; "" not a pod's */
	char container_id[K8S_CONTAINER_ID_LEN + 1]; /* "" the pod's own cgroup, a monitor */
	enum k8s_qos qos;
};

/* The Kubernetes identity of a process; "" for what the node does not tell. */
struct k8s_identity {
	char pod_uid[K8S_POD_UID_MAX + 1];
	char container_id[K8S_CONTAINER_ID_LEN + 1];
	char namespace_name[K8S_NAMESPACE_MAX + 1];
	char pod_name[K8S_POD_NAME_MAX + 1];
	char container_name[K8S_CONTAINER_NAME_MAX + 1];
};

/* Parses one cgroup path (the third field of a /proc/PID/cgroup line; a whole
 * "0::/path" line is taken too). true when it names a pod (out->pod_uid set); out is zeroed
 * first. Pure: no I/O.
 */
bool k8s_cgroup__parse(const char *path, struct k8s_cgroup_ref *out);

struct k8s_pod_stats {
	uint64_t lookups;
	uint64_t pod_scans;     /* reads of ROOT/var/log/pods for a pod not cached */
	uint64_t pods_unknown;  /* of those, pods the node did not show */
	uint64_t names_unknown; /* container names not found */
	uint64_t evicted;       /* pods dropped to stay within pod_cap */
};

struct k8s_pod_table;

/* host_root: the node's / ("/" or NULL for this machine's; copied). pod_cap >= 1. NULL with
 * errno set on failure.
 */
struct k8s_pod_table *k8s_pod_table__new(const char *host_root, unsigned int pod_cap);
void k8s_pod_table__free(struct k8s_pod_table *t);

/* The identity of container container_id ("" or NULL: unknown) of pod pod_uid, filled into
 * *out (zeroed first; uid and id copied even when nothing else is known). 0 when the node
 * shows the pod (namespace and pod name set; the container name when found), -ENOENT when it
 * does not, -EINVAL for a malformed uid. now_ns: CLOCK_MONOTONIC, for the retry of misses.
 */
int k8s_pod_table__lookup(struct k8s_pod_table *t, const char *pod_uid, const char *container_id,
			  uint64_t now_ns, struct k8s_identity *out);

/* The same for a cgroup path (k8s_cgroup__parse); -ENOENT also when the path is no pod's. */
int k8s_pod_table__lookup_cgroup(struct k8s_pod_table *t, const char *cgroup_path, uint64_t now_ns,
				 struct k8s_identity *out);

void k8s_pod_table__stats(const struct k8s_pod_table *t, struct k8s_pod_stats *out);

#endif
