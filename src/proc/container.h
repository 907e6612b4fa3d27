/* Container identity of a process, from its cgroup path (/proc/PID/cgroup).
 *
 * Recognized forms (cgroup v1 and v2, cgroupfs and systemd drivers):
 *   docker      .../docker/<id>            .../docker-<id>.scope
 *   containerd  .../cri-containerd-<id>.scope   .../<id> under kubepods
 *   cri-o       .../crio-<id>.scope        .../crio/<id>
 *   podman      .../libpod-<id>.scope      .../libpod-conmon-<id>.scope is NOT a container
 *   kubernetes  .../kubepods.../pod<uid>/... or ...-pod<uid_with_underscores>.slice
 * where <id> is 64 lowercase hex digits.
 */
#ifndef STACKSCOPE_CONTAINER_H
#define STACKSCOPE_CONTAINER_H

#include <stddef.h>
#include <sys/types.h>

#define CONTAINER_ID_LEN 64
#define POD_UID_LEN 36

struct container_info {
	char id[CONTAINER_ID_LEN + 1]; /* "" if none */
	char pod_uid[POD_UID_LEN + 1]; /* "" if none; dashes, lowercase */
};

/* Parse the text of /proc/PID/cgroup (all lines); fills what it recognizes. Never fails. */
void container__parse_cgroup(const char *text, struct container_info *out);
/* Read and parse /proc/PID/cgroup; 0, or -errno when it cannot be read. */
int container__read(pid_t pid, struct container_info *out);

#endif
