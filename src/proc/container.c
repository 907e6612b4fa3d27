/* cgroup path -> container id and Kubernetes pod uid. See container.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/container.h"

static bool is_hex64(const char *s, size_t len)
{
	size_t i;

	if (len < CONTAINER_ID_LEN)
		return false;
	for (i = 0; i < CONTAINER_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return len == CONTAINER_ID_LEN || s[CONTAINER_ID_LEN] == '.' || s[CONTAINER_ID_LEN] == '/';
}

/* A container id in one path component [s, s+len), after a known prefix or alone. */
static bool component_container_id(const char *s, size_t len, char out[CONTAINER_ID_LEN + 1])
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-",
						"libpod-", "containerd-",     "" };
	size_t i;

	if (len >= 15 && !strncmp(s, "libpod-conmon-", 14))
		return false;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);

		if (len >= n && !strncmp(s, prefixes[i], n) && is_hex64(s + n, len - n)) {
			memcpy(out, s + n, CONTAINER_ID_LEN);
			out[CONTAINER_ID_LEN] = '\0';
			return true;
		}
	}
	return false;
}

/* "pod" followed by a uid with dashes or (systemd) underscores. */
static bool component_pod_uid(const char *s, size_t len, char out[POD_UID_LEN + 1])
{
	const char *p = NULL;
	size_t i;

	for (i = 0; i + 3 <= len; i++) {
		if (!strncmp(s + i, "pod", 3) && (i == 0 || s[i - 1] == '-') &&
		    len - i - 3 >= POD_UID_LEN) {
			p = s + i + 3;
			break;
		}
	}
	if (!p)
		return false;
	for (i = 0; i < POD_UID_LEN; i++) {
		char c = p[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? (c != '-' && c != '_')
			 : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		out[i] = dash ? '-' : c;
	}
	out[POD_UID_LEN] = '\0';
	return true;
}

void container__parse_cgroup(const char *text, struct container_info *out)
{
	const char *line = text;

	out->id[0] = '\0';
	out->pod_uid[0] = '\0';
	while (line && *line) {
		const char *eol = strchr(line, '\n'), *path, *c;

		if (!eol)
			eol = line + strlen(line);
		/* "hierarchy:controllers:path" */
		path = memchr(line, ':', (size_t)(eol - line));
		path = path ? memchr(path + 1, ':', (size_t)(eol - path - 1)) : NULL;
		for (c = path ? path + 1 : eol; c < eol;) {
			const char *slash = memchr(c, '/', (size_t)(eol - c));
			const char *end = slash ? slash : eol;
			size_t len = (size_t)(end - c);

			if (!out->id[0])
				component_container_id(c, len, out->id);
			if (!out->pod_uid[0])
				component_pod_uid(c, len, out->pod_uid);
			c = end + 1;
		}
		line = *eol ? eol + 1 : eol;
	}
}

int container__read(pid_t pid, struct container_info *out)
{
	char path[64], buf[8192];
	ssize_t n;
	int fd;

	out->id[0] = out->pod_uid[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	container__parse_cgroup(buf, out);
	return 0;
}
