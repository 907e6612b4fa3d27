/* Kubernetes pod identity: cgroup paths as the kubelet and the CRI runtimes name them, and the
 * node's files (a fake node layout in a temporary folder).
 */
#include "proc/k8s_pod.h"
#include "test.h"

#include <fcntl.h>
#include <sys/stat.h>

#define ID "3f4e1c5d6b7a8990aabbccddeeff00112233445566778899aabbccddeeff0011"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1a2b3c4d-0000-1111-2222-333344445555"
#define UID_ "1a2b3c4d_0000_1111_2222_333344445555"
#define STATIC_UID "6d8ec0e9d3c2b0b5f9d1f1e2b3c4d5e6"

static struct k8s_cgroup_ref ref;

static bool parse(const char *path)
{
	return k8s_cgroup__parse(path, &ref);
}

TEST(systemd_driver)
{
	/* containerd, burstable */
	REQUIRE(parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		      ".slice/cri-containerd-" ID ".scope"));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_BURSTABLE);
	/* CRI-O, besteffort */
	REQUIRE(parse("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
		      ".slice/crio-" ID ".scope"));
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_BESTEFFORT);
	/* guaranteed: the pod's slice right under kubepods.slice; docker via cri-dockerd */
	REQUIRE(parse("/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope"));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_GUARANTEED);
	/* kind / a kubelet in a container: kubelet-kubepods-... */
	REQUIRE(parse("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		      "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope"));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_BESTEFFORT);
}

TEST(cgroupfs_driver)
{
	REQUIRE(parse("/kubepods/burstable/pod" UID "/" ID));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_BURSTABLE);
	REQUIRE(parse("/kubepods/besteffort/pod" UID "/" ID));
	CHECK_EQ_INT(ref.qos, K8S_QOS_BESTEFFORT);
	REQUIRE(parse("/kubepods/pod" UID "/" ID));
	CHECK_EQ_INT(ref.qos, K8S_QOS_GUARANTEED);
	CHECK_STR(ref.container_id, ID);
	/* CRI-O with cgroupfs */
	REQUIRE(parse("/kubepods/burstable/pod" UID "/crio-" ID));
	CHECK_STR(ref.container_id, ID);
	/* a node in a docker container (kind with cgroup v1) */
	REQUIRE(parse("/docker/" ID2 "/kubepods/besteffort/pod" UID "/" ID));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
}

TEST(whole_lines_and_v1)
{
	REQUIRE(parse("0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID
		      ".scope\n"));
	CHECK_STR(ref.container_id, ID);
	REQUIRE(parse("11:memory:/kubepods/burstable/pod" UID "/" ID));
	CHECK_STR(ref.pod_uid, UID);
	REQUIRE(parse("4:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/"
		      "kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope"));
	CHECK_STR(ref.container_id, ID);
}

TEST(static_pods_and_cgroup_namespaces)
{
	/* a static pod's uid is its config hash */
	REQUIRE(parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID
		      ".slice/cri-containerd-" ID ".scope"));
	CHECK_STR(ref.pod_uid, STATIC_UID);
	REQUIRE(parse("/kubepods/burstable/pod" STATIC_UID "/" ID));
	CHECK_STR(ref.pod_uid, STATIC_UID);
	/* seen from a DaemonSet's own cgroup namespace */
	REQUIRE(parse("/../../kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
		      ".slice/cri-containerd-" ID ".scope"));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, ID);
	CHECK_EQ_INT(ref.qos, K8S_QOS_BESTEFFORT);
	REQUIRE(parse("/../../../besteffort/pod" UID "/" ID));
	CHECK_STR(ref.container_id, ID);
}

TEST(pod_without_container)
{
	/* the pod's own cgroup, CRI-O's monitor, a process deeper in the container */
	REQUIRE(parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		      ".slice"));
	CHECK_STR(ref.pod_uid, UID);
	CHECK_STR(ref.container_id, "");
	REQUIRE(parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		      ".slice/crio-conmon-" ID ".scope"));
	CHECK_STR(ref.container_id, "");
	REQUIRE(parse("/kubepods/pod" UID "/" ID "/nested/deeper"));
	CHECK_STR(ref.container_id, ID);
	REQUIRE(parse("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID
		      ".scope/init.scope"));
	CHECK_STR(ref.container_id, ID);
}

TEST(not_a_pod)
{
	CHECK(!parse("/user.slice/user-1000.slice/session-2.scope"));
	CHECK(!parse("/system.slice/docker-" ID ".scope"));
	CHECK(!parse("/system.slice/containerd.service"));
	CHECK(!parse("/"));
	CHECK(!parse(""));
	CHECK(!parse(NULL));
	CHECK(!parse("/kubepods.slice/kubepods-burstable.slice"));
	/* near misses: a short uid, upper case, wrong separators, a pod prefix in a word */
	CHECK(!parse("/kubepods/burstable/pod1a2b3c4d-0000-1111-2222-33334444555/" ID));
	CHECK(!parse("/kubepods/burstable/pod1A2B3C4D-0000-1111-2222-333344445555/" ID));
	CHECK(!parse("/kubepods/burstable/pod" UID_ "/" ID));
	CHECK(!parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID
		     ".slice"));
	CHECK(!parse("/kubepods/burstable/ipod" UID "/" ID));
	CHECK_STR(ref.pod_uid, "");
	/* a short container id is none */
	REQUIRE(parse("/kubepods/pod" UID "/3f4e1c5d"));
	CHECK_STR(ref.container_id, "");
}

/* ---- the node's files ---- */

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	REQUIRE(system(cmd) == 0);
	if (!text)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static void remove_root(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
}

TEST(node_files)
{
	struct k8s_pod_table *t;
	struct k8s_identity id;
	struct k8s_pod_stats st;
	char link[512];

	snprintf(root, sizeof(root), "/tmp/test_k8s_pod.XXXXXX");
	REQUIRE(mkdtemp(root));
	/* pod 1: two containers, containerd's specs name them */
	put("var/log/pods/shop_web-7d4b9c-x2x7k_" UID "/nginx/0.log", "");
	put("var/log/pods/shop_web-7d4b9c-x2x7k_" UID "/sidecar/0.log", "");
	put("run/containerd/io.containerd.runtime.v2.task/k8s.io/" ID "/config.json",
	    "{\"annotations\": {\"io.kubernetes.cri.container-type\": \"container\",\n"
	    "  \"io.kubernetes.cri.container-name\" : \"sidecar\",\n"
	    "  \"io.kubernetes.cri.sandbox-uid\": \"" UID "\"}}");
	/* pod 2 (static): one container, no runtime spec; its sandbox has one saying so */
	put("var/log/pods/kube-system_etcd-node1_" STATIC_UID "/etcd/0.log", "");
	put("run/containerd/io.containerd.runtime.v2.task/k8s.io/" ID2 "/config.json",
	    "{\"annotations\": {\"io.kubernetes.cri.container-type\": \"sandbox\","
	    "\"io.kubernetes.cri.sandbox-uid\": \"" STATIC_UID "\"}}");

	t = k8s_pod_table__new(root, 2);
	REQUIRE(t);
	CHECK_EQ_INT(k8s_pod_table__lookup(t, UID, ID, 0, &id), 0);
	CHECK_STR(id.namespace_name, "shop");
	CHECK_STR(id.pod_name, "web-7d4b9c-x2x7k");
	CHECK_STR(id.container_name, "sidecar");
	CHECK_STR(id.pod_uid, UID);
	CHECK_STR(id.container_id, ID);
	/* a container of pod 1 without a spec: two candidates, no name */
	CHECK_EQ_INT(k8s_pod_table__lookup(t, UID, ID2, 0, &id), 0);
	CHECK_STR(id.pod_name, "web-7d4b9c-x2x7k");
	CHECK_STR(id.container_name, "");
	/* the static pod by its cgroup path: the sole container */
	CHECK_EQ_INT(k8s_pod_table__lookup_cgroup(t, "/kubepods/burstable/pod" STATIC_UID "/" ID, 0,
						  &id),
		     0);
	CHECK_STR(id.namespace_name, "kube-system");
	CHECK_STR(id.pod_name, "etcd-node1");
	CHECK_STR(id.container_name, "etcd");
	/* its sandbox: no name (not the sole container's) */
	CHECK_EQ_INT(k8s_pod_table__lookup(t, STATIC_UID, ID2, 0, &id), 0);
	CHECK_STR(id.container_name, "");

	/* a pod that appears later: unknown, not looked for again before the retry time */
	CHECK_EQ_INT(k8s_pod_table__lookup(t, "99999999-0000-1111-2222-333344445555", NULL, 10,
					   &id),
		     -ENOENT);
	CHECK_STR(id.pod_uid, "99999999-0000-1111-2222-333344445555");
	put("var/log/pods/batch_job-1-abcde_99999999-0000-1111-2222-333344445555/main/0.log", "");
	/* docker's log files link to the container's own log */
	snprintf(link, sizeof(link),
		 "%s/var/log/pods/batch_job-1-abcde_99999999-0000-1111-2222-333344445555/main/"
		 "1.log",
		 root);
	CHECK(symlink("/var/lib/docker/containers/" ID "/" ID "-json.log", link) == 0);
	put("var/log/pods/batch_job-1-abcde_99999999-0000-1111-2222-333344445555/init/0.log", "");
	k8s_pod_table__stats(t, &st);
	CHECK_EQ_INT(k8s_pod_table__lookup(t, "99999999-0000-1111-2222-333344445555", NULL, 11,
					   &id),
		     -ENOENT);
	k8s_pod_table__stats(t, &st);
	CHECK_EQ_U64(st.pod_scans, 3);
	CHECK_EQ_INT(k8s_pod_table__lookup(t, "99999999-0000-1111-2222-333344445555", ID,
					   10 + K8S_POD_RETRY_NS, &id),
		     0);
	CHECK_STR(id.namespace_name, "batch");
	CHECK_STR(id.container_name, "main");
	/* two pods at most: the least recently used went */
	k8s_pod_table__stats(t, &st);
	CHECK_EQ_U64(st.evicted, 1);
	CHECK_EQ_INT(k8s_pod_table__lookup(t, "bad", NULL, 0, &id), -EINVAL);
	CHECK_EQ_INT(k8s_pod_table__lookup_cgroup(t, "/user.slice", 0, &id), -ENOENT);
	k8s_pod_table__free(t);
	k8s_pod_table__free(NULL);
	remove_root();
}

int main(void)
{
	RUN(systemd_driver);
	RUN(cgroupfs_driver);
	RUN(whole_lines_and_v1);
	RUN(static_pods_and_cgroup_namespaces);
	RUN(pod_without_container);
	RUN(not_a_pod);
	RUN(node_files);
	return test_summary();
}
