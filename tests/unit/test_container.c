/* cgroup paths of the container runtimes -> container id and pod uid. */
#include "proc/container.h"
#include "test.h"

#include <unistd.h>

#define ID "3f4e1c5d6b7a8990aabbccddeeff00112233445566778899aabbccddeeff0011"

static struct container_info parse(const char *text)
{
	struct container_info ci;

	container__parse_cgroup(text, &ci);
	return ci;
}

TEST(docker_cgroupfs_v1)
{
	struct container_info ci = parse("12:memory:/docker/" ID "\n11:cpu:/docker/" ID "\n");

	CHECK_STR(ci.id, ID);
	CHECK_STR(ci.pod_uid, "");
}

TEST(docker_systemd_v2)
{
	CHECK_STR(parse("0::/system.slice/docker-" ID ".scope\n").id, ID);
}

TEST(containerd_and_crio_in_kubernetes)
{
	struct container_info ci =
		parse("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		      "1a2b3c4d_0000_1111_2222_333344445555.slice/cri-containerd-" ID ".scope\n");

	CHECK_STR(ci.id, ID);
	CHECK_STR(ci.pod_uid, "1a2b3c4d-0000-1111-2222-333344445555");
	ci = parse("0::/kubepods/besteffort/pod1a2b3c4d-0000-1111-2222-333344445555/" ID "\n");
	CHECK_STR(ci.id, ID);
	CHECK_STR(ci.pod_uid, "1a2b3c4d-0000-1111-2222-333344445555");
	CHECK_STR(parse("0::/kubepods.slice/crio-" ID ".scope\n").id, ID);
}

TEST(podman)
{
	CHECK_STR(parse("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID
			".scope/container\n")
			  .id,
		  ID);
	CHECK_STR(parse("0::/machine.slice/libpod-conmon-" ID ".scope\n").id, "");
}

TEST(not_a_container)
{
	CHECK_STR(parse("0::/user.slice/user-0.slice/session-1.scope\n").id, "");
	CHECK_STR(parse("0::/system.slice/docker-"
			"3f4e1c5d"
			".scope\n")
			  .id,
		  ""); /* short */
	CHECK_STR(parse("").id, "");
	CHECK_STR(parse("garbage without colons").id, "");
	CHECK_STR(parse("0::/docker/" ID "zz\n").id, ""); /* 64 hex then junk: not an id */
}

TEST(this_process)
{
	struct container_info ci;

	CHECK_EQ_INT(container__read(getpid(), &ci), 0);
	CHECK(container__read(-1, &ci) < 0);
}

int main(void)
{
	RUN(docker_cgroupfs_v1);
	RUN(docker_systemd_v2);
	RUN(containerd_and_crio_in_kubernetes);
	RUN(podman);
	RUN(not_a_container);
	RUN(this_process);
	return test_summary();
}
