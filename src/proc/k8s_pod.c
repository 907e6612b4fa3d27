/* Kubernetes pod identity from the cgroup path and the node's files. See k8s_pod.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/k8s_pod.h"

#define OCI_SPEC_MAX_SZ (512 * 1024)

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool all_hex(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

/* A pod uid at s[0, len) exactly: dashed (or, sep '_', systemd's escaping) or 32 hex. */
static bool parse_uid(const char *s, size_t len, char sep, char out[K8S_POD_UID_MAX + 1])
{
	size_t i;

	if (len == 32 && all_hex(s, len)) {
		memcpy(out, s, len);
		out[len] = '\0';
		return true;
	}
	if (len != K8S_POD_UID_MAX)
		return false;
	for (i = 0; i < len; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !is_lower_hex(s[i]))
			return false;
		out[i] = dash ? '-' : s[i];
	}
	out[len] = '\0';
	return true;
}

static bool has_prefix(const char *s, size_t len, const char *pre, size_t *pre_len)
{
	size_t n = strlen(pre);

	*pre_len = n;
	return len >= n && !memcmp(s, pre, n);
}

static bool has_suffix(const char *s, size_t len, const char *suf)
{
	size_t n = strlen(suf);

	return len >= n && !memcmp(s + len - n, suf, n);
}

static bool contains(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(s + i, needle, n))
			return true;
	return false;
}

/* The pod component: cgroupfs "pod<uid>", systemd "<parent>-pod<u_i_d>.slice". */
static bool component_pod(const char *s, size_t len, char out[K8S_POD_UID_MAX + 1])
{
	const char *p;
	size_t n;

	if (has_prefix(s, len, "pod", &n) && parse_uid(s + n, len - n, '-', out))
		return true;
	if (!has_suffix(s, len, ".slice"))
		return false;
	len -= strlen(".slice");
	for (p = s + len; p > s + 4; p--) {
		if (!memcmp(p - 4, "-pod", 4))
			return parse_uid(p, (size_t)(s + len - p), '_', out);
	}
	return false;
}

/* The container component below a pod: "<prefix><id>[.scope]" or the id alone. */
static bool component_container(const char *s, size_t len, char out[K8S_CONTAINER_ID_LEN + 1])
{
	static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-",
						"containerd-", "" };
	size_t i, n;

	if (has_suffix(s, len, ".scope"))
		len -= strlen(".scope");
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (has_prefix(s, len, prefixes[i], &n) && len - n == K8S_CONTAINER_ID_LEN &&
		    all_hex(s + n, K8S_CONTAINER_ID_LEN)) {
			memcpy(out, s + n, K8S_CONTAINER_ID_LEN);
			out[K8S_CONTAINER_ID_LEN] = '\0';
			return true;
		}
	}
	return false;
}

static enum k8s_qos component_qos(const char *s, size_t len)
{
	if ((len == 9 && !memcmp(s, "burstable", 9)) || has_suffix(s, len, "-burstable.slice"))
		return K8S_QOS_BURSTABLE;
	if ((len == 10 && !memcmp(s, "besteffort", 10)) || has_suffix(s, len, "-besteffort.slice"))
		return K8S_QOS_BESTEFFORT;
	return K8S_QOS_NONE;
}

bool k8s_cgroup__parse(const char *path, struct k8s_cgroup_ref *out)
{
	const char *c, *end, *colon;
	enum k8s_qos qos = K8S_QOS_NONE;
	bool in_pod = false;

	memset(out, 0, sizeof(*out));
	if (!path)
		return false;
	end = path + strcspn(path, "\n");
	/* "hierarchy:controllers:/path" taken as well */
	if (*path != '/' && (colon = memchr(path, ':', (size_t)(end - path))) &&
	    (colon = memchr(colon + 1, ':', (size_t)(end - colon - 1))))
		path = colon + 1;
	for (c = path; c < end;) {
		const char *slash = memchr(c, '/', (size_t)(end - c));
		const char *stop = slash ? slash : end;
		size_t len = (size_t)(stop - c);

		if (!in_pod) {
			if (component_qos(c, len) != K8S_QOS_NONE)
				qos = component_qos(c, len);
			if (component_pod(c, len, out->pod_uid)) {
				in_pod = true;
				/* systemd names the QoS class in the pod's own slice too */
				if (qos == K8S_QOS_NONE && contains(c, len, "-burstable-pod"))
					qos = K8S_QOS_BURSTABLE;
				else if (qos == K8S_QOS_NONE && contains(c, len, "-besteffort-pod"))
					qos = K8S_QOS_BESTEFFORT;
			}
		} else {
			/* the component right below the pod's, nothing deeper */
			component_container(c, len, out->container_id);
			break;
		}
		c = stop + 1;
	}
	if (!in_pod)
		return false;
	out->qos = qos == K8S_QOS_NONE ? K8S_QOS_GUARANTEED : qos;
	return true;
}

/* ---- the node's files ---- */

struct pod_container {
	char id[K8S_CONTAINER_ID_LEN + 1];
	char name[K8S_CONTAINER_NAME_MAX + 1]; /* "" not found (retry at retry_ns) */
	uint64_t retry_ns;
	uint64_t used;
};

struct pod_entry {
	char uid[K8S_POD_UID_MAX + 1]; /* "" a free slot */
	bool known;                    /* its log directory was found */
	uint64_t retry_ns;             /* unknown: look again after */
	uint64_t used;                 /* the table's clock at the last lookup */
	char namespace_name[K8S_NAMESPACE_MAX + 1];
	char pod_name[K8S_POD_NAME_MAX + 1];
	struct pod_container containers[K8S_POD_CONTAINER_CAP];
};

struct k8s_pod_table {
	char root[PATH_MAX];
	struct pod_entry *pods;
	unsigned int cap;
	uint64_t clock;
	struct k8s_pod_stats stats;
};

struct k8s_pod_table *k8s_pod_table__new(const char *host_root, unsigned int pod_cap)
{
	struct k8s_pod_table *t;
	size_t len;

	if (!host_root || !*host_root)
		host_root = "/";
	len = strlen(host_root);
	while (len > 1 && host_root[len - 1] == '/')
		len--;
	if (!pod_cap || len >= sizeof(t->root) - 64) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pods = calloc(pod_cap, sizeof(*t->pods));
	if (!t->pods) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	/* "/" is kept as "" so paths join as ROOT + "/var/..." */
	if (!(len == 1 && host_root[0] == '/'))
		memcpy(t->root, host_root, len);
	t->cap = pod_cap;
	return t;
}

void k8s_pod_table__free(struct k8s_pod_table *t)
{
	if (!t)
		return;
	free(t->pods);
	free(t);
}

void k8s_pod_table__stats(const struct k8s_pod_table *t, struct k8s_pod_stats *out)
{
	*out = t->stats;
}

static bool join(char *buf, size_t sz, const struct k8s_pod_table *t, const char *fmt1,
		 const char *a, const char *fmt2, const char *b)
{
	int n = snprintf(buf, sz, "%s%s%s%s%s", t->root, fmt1, a ? a : "", fmt2 ? fmt2 : "",
			 b ? b : "");

	return n > 0 && (size_t)n < sz;
}

static bool copy_name(char *dst, size_t cap, const char *s, size_t len)
{
	if (!len || len >= cap)
		return false;
	memcpy(dst, s, len);
	dst[len] = '\0';
	return true;
}

/* "<namespace>_<pod-name>_<uid>" for uid: namespace and name into e. */
static bool log_dir_matches(const char *d, const char *uid, struct pod_entry *e)
{
	const char *u1 = strchr(d, '_'), *u2 = u1 ? strchr(u1 + 1, '_') : NULL;

	if (!u2 || strchr(u2 + 1, '_') || strcmp(u2 + 1, uid))
		return false;
	return copy_name(e->namespace_name, sizeof(e->namespace_name), d, (size_t)(u1 - d)) &&
	       copy_name(e->pod_name, sizeof(e->pod_name), u1 + 1, (size_t)(u2 - u1 - 1));
}

/* Finds the pod's log directory: the entry's namespace and name set from its name. */
static bool find_pod_log_dir(struct k8s_pod_table *t, struct pod_entry *e)
{
	char path[PATH_MAX];
	struct dirent *d;
	bool found = false;
	DIR *dp;

	t->stats.pod_scans++;
	if (!join(path, sizeof(path), t, "/var/log/pods", NULL, NULL, NULL))
		return false;
	dp = opendir(path);
	if (!dp)
		return false;
	while (!found && (d = readdir(dp))) {
		if (d->d_name[0] != '.')
			found = log_dir_matches(d->d_name, e->uid, e);
	}
	closedir(dp);
	return found;
}

/* Reads a whole small file (at most max bytes) into a NUL-ended buffer (free it); NULL if
 * it cannot be read.
 */
static char *read_small(const char *path, size_t max, size_t *len)
{
	char *buf = NULL;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	buf = malloc(max + 1);
	if (!buf)
		goto cleanup;
	while (got < max && (n = read(fd, buf + got, max - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	*len = got;
cleanup:
	close(fd);
	return buf;
}

/* A DNS-label value of "key": "value" in an OCI spec's JSON text. */
static bool json_label(const char *text, const char *key, char *out, size_t cap)
{
	char quoted[96];
	const char *p, *v;
	size_t len;

	if (snprintf(quoted, sizeof(quoted), "\"%s\"", key) >= (int)sizeof(quoted))
		return false;
	for (p = strstr(text, quoted); p; p = strstr(p + 1, quoted)) {
		v = p + strlen(quoted);
		v += strspn(v, " \t\r\n");
		if (*v++ != ':')
			continue;
		v += strspn(v, " \t\r\n");
		if (*v++ != '"')
			continue;
		len = strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-.");
		if (v[len] != '"')
			continue;
		return copy_name(out, cap, v, len);
	}
	return false;
}

/* The container's name from the OCI spec its runtime keeps (containerd, CRI-O): 1 found, 0
 * no spec of this pod's, -1 a spec without a container name (the pod's sandbox: no name).
 */
static int name_from_runtime(const struct k8s_pod_table *t, const char *uid, const char *id,
			     char *out, size_t cap)
{
	static const struct {
		const char *dir, *tail, *name_key, *uid_key;
	} specs[] = {
		{ "/run/containerd/io.containerd.runtime.v2.task/k8s.io/", "/config.json",
		  "io.kubernetes.cri.container-name", "io.kubernetes.cri.sandbox-uid" },
		{ "/run/containers/storage/overlay-containers/", "/userdata/config.json",
		  "io.kubernetes.container.name", "io.kubernetes.pod.uid" },
		{ "/var/lib/containers/storage/overlay-containers/", "/userdata/config.json",
		  "io.kubernetes.container.name", "io.kubernetes.pod.uid" },
	};
	char path[PATH_MAX], spec_uid[K8S_POD_UID_MAX + 1];
	size_t i, len;
	int found = 0;

	for (i = 0; !found && i < sizeof(specs) / sizeof(specs[0]); i++) {
		char *text;

		if (!join(path, sizeof(path), t, specs[i].dir, id, specs[i].tail, NULL))
			continue;
		text = read_small(path, OCI_SPEC_MAX_SZ, &len);
		if (!text)
			continue;
		/* another pod's container under the same id is no answer */
		if (!json_label(text, specs[i].uid_key, spec_uid, sizeof(spec_uid)) ||
		    !strcmp(spec_uid, uid))
			found = json_label(text, specs[i].name_key, out, cap) ? 1 : -1;
		free(text);
	}
	return found;
}

/* Directory entries of path that are directories (not "."): their count, the first into
 * out. With id: the first whose files link to a path holding id instead (docker's logs).
 */
static int subdirs(const char *path, const char *id, char *out, size_t cap)
{
	struct dirent *d, *f;
	int cnt = 0;
	DIR *dp = opendir(path), *fp;

	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		char sub[PATH_MAX], file[PATH_MAX], link[PATH_MAX];
		ssize_t n;

		if (d->d_name[0] == '.' || (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
			continue;
		if (!id) {
			if (!cnt++)
				copy_name(out, cap, d->d_name, strlen(d->d_name));
			continue;
		}
		if (snprintf(sub, sizeof(sub), "%s/%s", path, d->d_name) >= (int)sizeof(sub) ||
		    !(fp = opendir(sub)))
			continue;
		while ((f = readdir(fp))) {
			if (f->d_name[0] == '.' || snprintf(file, sizeof(file), "%s/%s", sub,
							    f->d_name) >= (int)sizeof(file))
				continue;
			n = readlink(file, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strstr(link, id) && copy_name(out, cap, d->d_name, strlen(d->d_name))) {
				cnt = 1;
				break;
			}
		}
		closedir(fp);
		if (cnt)
			break;
	}
	closedir(dp);
	return cnt;
}

static bool find_container_name(struct k8s_pod_table *t, const struct pod_entry *e, const char *id,
				char *out, size_t cap)
{
	char path[PATH_MAX], log_dir[NAME_MAX + 1];
	int by_runtime = name_from_runtime(t, e->uid, id, out, cap);

	if (by_runtime)
		return by_runtime > 0;
	if (snprintf(log_dir, sizeof(log_dir), "%s_%s_%s", e->namespace_name, e->pod_name, e->uid) <
		    (int)sizeof(log_dir) &&
	    join(path, sizeof(path), t, "/var/log/pods/", log_dir, NULL, NULL)) {
		if (subdirs(path, id, out, cap) == 1)
			return true;
		if (subdirs(path, NULL, out, cap) == 1)
			return true;
	}
	return join(path, sizeof(path), t, "/var/lib/kubelet/pods/", e->uid, "/containers", NULL) &&
	       subdirs(path, NULL, out, cap) == 1;
}

static struct pod_entry *pod_slot(struct k8s_pod_table *t, const char *uid)
{
	struct pod_entry *victim = &t->pods[0];
	unsigned int i;

	for (i = 0; i < t->cap; i++) {
		if (!strcmp(t->pods[i].uid, uid))
			return &t->pods[i];
		if (!t->pods[i].uid[0] || (victim->uid[0] && t->pods[i].used < victim->used))
			victim = &t->pods[i];
	}
	if (victim->uid[0])
		t->stats.evicted++;
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->uid, uid, strlen(uid) + 1);
	victim->retry_ns = 0;
	return victim;
}

static struct pod_container *container_slot(struct pod_entry *e, const char *id, uint64_t clock)
{
	struct pod_container *victim = &e->containers[0];
	size_t i;

	for (i = 0; i < K8S_POD_CONTAINER_CAP; i++) {
		if (!strcmp(e->containers[i].id, id))
			return &e->containers[i];
		if (!e->containers[i].id[0] ||
		    (victim->id[0] && e->containers[i].used < victim->used))
			victim = &e->containers[i];
	}
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->id, id, strlen(id) + 1);
	victim->used = clock;
	return victim;
}

int k8s_pod_table__lookup(struct k8s_pod_table *t, const char *pod_uid, const char *container_id,
			  uint64_t now_ns, struct k8s_identity *out)
{
	char uid[K8S_POD_UID_MAX + 1];
	struct pod_container *c;
	struct pod_entry *e;
	size_t len = pod_uid ? strlen(pod_uid) : 0;

	memset(out, 0, sizeof(*out));
	t->stats.lookups++;
	if (!parse_uid(pod_uid ? pod_uid : "", len, '-', uid))
		return -EINVAL;
	if (container_id && (strlen(container_id) != K8S_CONTAINER_ID_LEN ||
			     !all_hex(container_id, K8S_CONTAINER_ID_LEN)))
		container_id = NULL;
	memcpy(out->pod_uid, uid, sizeof(uid));
	if (container_id)
		memcpy(out->container_id, container_id, K8S_CONTAINER_ID_LEN + 1);
	e = pod_slot(t, uid);
	e->used = ++t->clock;
	if (!e->known && now_ns >= e->retry_ns) {
		e->known = find_pod_log_dir(t, e);
		if (!e->known) {
			t->stats.pods_unknown++;
			e->retry_ns = now_ns + K8S_POD_RETRY_NS;
		}
	}
	if (!e->known)
		return -ENOENT;
	memcpy(out->namespace_name, e->namespace_name, sizeof(out->namespace_name));
	memcpy(out->pod_name, e->pod_name, sizeof(out->pod_name));
	if (!container_id)
		return 0;
	c = container_slot(e, container_id, t->clock);
	c->used = t->clock;
	if (!c->name[0] && now_ns >= c->retry_ns) {
		if (!find_container_name(t, e, container_id, c->name, sizeof(c->name))) {
			c->name[0] = '\0';
			c->retry_ns = now_ns + K8S_POD_RETRY_NS;
			t->stats.names_unknown++;
		}
	}
	memcpy(out->container_name, c->name, sizeof(out->container_name));
	return 0;
}

int k8s_pod_table__lookup_cgroup(struct k8s_pod_table *t, const char *cgroup_path, uint64_t now_ns,
				 struct k8s_identity *out)
{
	struct k8s_cgroup_ref ref;

	if (!k8s_cgroup__parse(cgroup_path, &ref)) {
		memset(out, 0, sizeof(*out));
		return -ENOENT;
	}
	return k8s_pod_table__lookup(t, ref.pod_uid, ref.container_id[0] ? ref.container_id : NULL,
				     now_ns, out);
}
