/* Selection rules and their engine. See selection.h. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "abi.h"
#include "base/log.h"
#include "base/u64_map.h"
#include "proc/container.h"
#include "proc/k8s_pod.h"
#include "proc/selection.h"

/* Where cgroup v2 is mounted: /sys/fs/cgroup (unified), /sys/fs/cgroup/unified (hybrid). */
static char cgroup_root[PATH_MAX] = "/sys/fs/cgroup";
/* cgroup directories scanned at most: a host's tree beyond it is classified per process. */
#define CGROUP_SCAN_MAX (SEL_CGROUPS_CAP - 1024)
#define CGROUP_SCAN_DEPTH 16
/* pods whose names are kept (a node runs 110 by default, 250 at most as advised) */
#define SELECTION_PODS 512

const char *selection_kind__flag(enum selection_kind kind, bool exclude)
{
	static const char *const flags[2][SELECTION_KIND_CNT] = {
		{ "select-pid", "select-name", "select-cgroup", "select-container", "select-pod" },
		{ "exclude-pid", "exclude-name", "exclude-cgroup", "exclude-container",
		  "exclude-pod" },
	};

	return kind < SELECTION_KIND_CNT ? flags[exclude][kind] : "?";
}

/* "123,456": 0 and the pids, or -EINVAL. */
static int parse_pids(const char *text, pid_t *pids, size_t cap, size_t *cnt)
{
	const char *p = text;
	char *end;
	long v;

	*cnt = 0;
	for (;;) {
		errno = 0;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = strtol(p, &end, 10);
		if (errno || v <= 0 || v > INT_MAX || *cnt == cap)
			return -EINVAL;
		pids[(*cnt)++] = (pid_t)v;
		if (!*end)
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

static bool is_hex_id(const char *text)
{
	size_t n = strlen(text);

	return n >= 12 && n <= CONTAINER_ID_LEN && strspn(text, "0123456789abcdef") == n;
}

/* "NAMESPACE" or "NAMESPACE/POD", neither part empty. */
static bool is_pod_ref(const char *text)
{
	const char *slash = strchr(text, '/');

	if (!*text || *text == '/')
		return false;
	return !slash || (slash[1] && !strchr(slash + 1, '/'));
}

int selection_spec__add(struct selection_spec *sp, enum selection_kind kind, bool exclude,
			const char *text, char *err, size_t err_sz)
{
	const char *flag = selection_kind__flag(kind, exclude);
	pid_t pids[SELECTION_MAX_RULES];
	size_t n;
	regex_t re;
	int rc;

	if (sp->cnt == SELECTION_MAX_RULES) {
		snprintf(err, err_sz, "at most %d selection rules", SELECTION_MAX_RULES);
		return -EINVAL;
	}
	switch (kind) {
	case SELECTION_PID:
		if (parse_pids(text, pids, SELECTION_MAX_RULES, &n)) {
			snprintf(err, err_sz, "--%s takes PID[,PID...], not '%s'", flag, text);
			return -EINVAL;
		}
		break;
	case SELECTION_NAME:
		rc = *text ? regcomp(&re, text, REG_EXTENDED | REG_NOSUB) : REG_BADPAT;
		if (rc) {
			char why[128] = "empty";

			if (*text)
				regerror(rc, &re, why, sizeof(why));
			snprintf(err, err_sz, "--%s: bad regular expression '%s': %s", flag, text,
				 why);
			return -EINVAL;
		}
		regfree(&re);
		break;
	case SELECTION_CGROUP:
		if (text[0] != '/') {
			snprintf(err, err_sz,
				 "--%s takes a cgroup v2 path or glob from the root ('/...'), not "
				 "'%s'",
				 flag, text);
			return -EINVAL;
		}
		break;
	case SELECTION_CONTAINER:
		if (!is_hex_id(text)) {
			snprintf(err, err_sz,
				 "--%s takes a container id (12 to 64 lowercase hex digits), not "
				 "'%s'",
				 flag, text);
			return -EINVAL;
		}
		break;
	case SELECTION_POD:
		if (!is_pod_ref(text)) {
			snprintf(err, err_sz,
				 "--%s takes a Kubernetes NAMESPACE or NAMESPACE/POD (globs), not "
				 "'%s'",
				 flag, text);
			return -EINVAL;
		}
		break;
	default:
		snprintf(err, err_sz, "unknown selection rule");
		return -EINVAL;
	}
	sp->rule[sp->cnt].kind = kind;
	sp->rule[sp->cnt].exclude = exclude;
	sp->rule[sp->cnt].text = text;
	sp->cnt++;
	return 0;
}

bool selection_spec__equal(const struct selection_spec *a, const struct selection_spec *b)
{
	size_t i;

	if (a->cnt != b->cnt)
		return false;
	for (i = 0; i < a->cnt; i++)
		if (a->rule[i].kind != b->rule[i].kind ||
		    a->rule[i].exclude != b->rule[i].exclude ||
		    strcmp(a->rule[i].text, b->rule[i].text))
			return false;
	return true;
}

/* ---- compiled rules ---- */

struct compiled_rule {
	enum selection_kind kind;
	bool exclude;
	char *text; /* SELECTION_POD: always NAMESPACE/POD, a namespace alone with POD "*" */
	regex_t re; /* SELECTION_NAME */
	pid_t pids[SELECTION_MAX_RULES];
	size_t pid_cnt;
};

struct selection_rules {
	struct compiled_rule rule[SELECTION_MAX_RULES];
	size_t cnt;
	bool has_include;
	bool has_kind[SELECTION_KIND_CNT];
};

struct selection_rules *selection_rules__new(const struct selection_spec *sp, char *err,
					     size_t err_sz)
{
	struct selection_rules *r = calloc(1, sizeof(*r));
	struct selection_spec check = { .cnt = 0 };
	size_t i;

	if (!r)
		return NULL;
	for (i = 0; i < sp->cnt; i++) {
		struct compiled_rule *c = &r->rule[i];

		if (selection_spec__add(&check, sp->rule[i].kind, sp->rule[i].exclude,
					sp->rule[i].text, err, err_sz))
			goto fail_inval;
		c->kind = sp->rule[i].kind;
		c->exclude = sp->rule[i].exclude;
		if (c->kind == SELECTION_POD && !strchr(sp->rule[i].text, '/')) {
			if (asprintf(&c->text, "%s/*", sp->rule[i].text) < 0)
				c->text = NULL;
		} else {
			c->text = strdup(sp->rule[i].text);
		}
		if (!c->text)
			goto fail_nomem;
		r->cnt = i + 1; /* from here on, freed as a built rule */
		if (c->kind == SELECTION_NAME &&
		    regcomp(&c->re, c->text, REG_EXTENDED | REG_NOSUB)) {
			free(c->text);
			c->text = NULL;
			r->cnt = i;
			goto fail_nomem;
		}
		if (c->kind == SELECTION_PID)
			parse_pids(c->text, c->pids, SELECTION_MAX_RULES, &c->pid_cnt);
		if (!c->exclude)
			r->has_include = true;
		r->has_kind[c->kind] = true;
	}
	return r;
fail_inval:
	selection_rules__free(r);
	errno = EINVAL;
	return NULL;
fail_nomem:
	selection_rules__free(r);
	errno = ENOMEM;
	return NULL;
}

void selection_rules__free(struct selection_rules *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->cnt; i++) {
		if (r->rule[i].kind == SELECTION_NAME)
			regfree(&r->rule[i].re);
		free(r->rule[i].text);
	}
	free(r);
}

bool selection_rules__active(const struct selection_rules *r)
{
	return r && r->cnt > 0;
}

bool selection_rules__need_pods(const struct selection_rules *r)
{
	return r && r->has_kind[SELECTION_POD];
}

/* glob matches path or one of its ancestors ("/a/b" for "/a/b/c"; not "/a/b" for "/a/bc"). */
static bool cgroup_glob_match(const char *glob, const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	char *slash;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, path, len + 1);
	for (;;) {
		if (!fnmatch(glob, buf, 0))
			return true;
		slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return !fnmatch(glob, "/", 0) && buf[0] == '/';
		*slash = '\0';
	}
}

static bool rule_matches(const struct compiled_rule *c, const struct proc_identity *id)
{
	const char *base;
	size_t i;

	switch (c->kind) {
	case SELECTION_PID:
		for (i = 0; i < c->pid_cnt; i++)
			if (c->pids[i] == id->pid)
				return true;
		return false;
	case SELECTION_NAME:
		if (id->comm && *id->comm && !regexec(&c->re, id->comm, 0, NULL, 0))
			return true;
		if (!id->exe || !*id->exe)
			return false;
		base = strrchr(id->exe, '/');
		base = base ? base + 1 : id->exe;
		return *base && !regexec(&c->re, base, 0, NULL, 0);
	case SELECTION_CGROUP:
		return id->cgroup_path && *id->cgroup_path &&
		       cgroup_glob_match(c->text, id->cgroup_path);
	case SELECTION_CONTAINER:
		return id->container_id && *id->container_id &&
		       !strncmp(id->container_id, c->text, strlen(c->text));
	case SELECTION_POD: {
		char pod[K8S_NAMESPACE_MAX + K8S_POD_NAME_MAX + 2];

		if (!id->k8s_namespace || !*id->k8s_namespace || !id->k8s_pod || !*id->k8s_pod ||
		    (size_t)snprintf(pod, sizeof(pod), "%s/%s", id->k8s_namespace, id->k8s_pod) >=
			    sizeof(pod))
			return false;
		return !fnmatch(c->text, pod, FNM_PATHNAME);
	}
	default:
		return false;
	}
}

bool selection_rules__keep(const struct selection_rules *r, const struct proc_identity *id)
{
	bool included;
	size_t i;

	if (!selection_rules__active(r))
		return true;
	included = !r->has_include;
	for (i = 0; i < r->cnt; i++) {
		if (!rule_matches(&r->rule[i], id))
			continue;
		if (r->rule[i].exclude)
			return false;
		included = true;
	}
	return included;
}

int selection_rules__cgroup(const struct selection_rules *r, const struct proc_identity *id)
{
	int verdict = SEL_CG_NONE;
	size_t i;

	if (!selection_rules__active(r))
		return SEL_CG_NONE;
	for (i = 0; i < r->cnt; i++) {
		const struct compiled_rule *c = &r->rule[i];

		if ((c->kind != SELECTION_CGROUP && c->kind != SELECTION_CONTAINER &&
		     c->kind != SELECTION_POD) ||
		    !rule_matches(c, id))
			continue;
		if (c->exclude)
			return SEL_CG_EXCLUDE;
		verdict = SEL_CG_INCLUDE;
	}
	return verdict;
}

/* ---- the engine ---- */

struct selection {
	struct selection_rules *rules;
	int procs_fd, cgroups_fd; /* -1 without a sampler */
	volatile struct selection_state *st;
	char *host_root;            /* the node's / for pod names */
	struct k8s_pod_table *pods; /* made when a pod rule first needs it */
	struct u64_map verdicts;    /* pid -> (void *)SEL_KEEP / SEL_DROP */
	struct u64_map cgroups;     /* cgroup id -> (void *)(1 + enum sel_cgroup) */
	struct selection_stats stats;
	unsigned int prob_threshold;
	uint64_t prob_interval_ns, prob_next_ns;
	bool prob_on;
};

static void find_cgroup_root(void);

struct selection *selection__new(int procs_fd, int cgroups_fd, volatile struct selection_state *st,
				 const char *host_root)
{
	struct selection *sel = calloc(1, sizeof(*sel));

	if (!sel)
		return NULL;
	sel->host_root = strdup(host_root && *host_root ? host_root : "/");
	if (!sel->host_root) {
		free(sel);
		return NULL;
	}
	sel->procs_fd = procs_fd;
	sel->cgroups_fd = cgroups_fd;
	sel->st = st;
	sel->prob_threshold = 100;
	sel->prob_on = true;
	find_cgroup_root();
	return sel;
}

void selection__free(struct selection *sel)
{
	if (!sel)
		return;
	selection_rules__free(sel->rules);
	k8s_pod_table__free(sel->pods);
	free(sel->host_root);
	u64_map__free(&sel->verdicts);
	u64_map__free(&sel->cgroups);
	free(sel);
}

const struct selection_rules *selection__rules(const struct selection *sel)
{
	return sel->rules;
}

/* Every entry of a map (keys of at most 8 bytes) deleted. */
static void clear_bpf_map(int fd)
{
	uint64_t first = 0;

	if (fd < 0)
		return;
	while (!bpf_map_get_next_key(fd, NULL, &first))
		if (bpf_map_delete_elem(fd, &first))
			break;
}

/* The cgroup v2 path of pid ("/..."), from /proc/PID/cgroup's "0::" line; 0 or -errno. */
static int read_cgroup_path(pid_t pid, char *out, size_t cap)
{
	char path[64], line[PATH_MAX + 8];
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) < cap) {
			memcpy(out, line + 3, strlen(line + 3) + 1);
			err = 0;
		}
		break;
	}
	fclose(f);
	return err;
}

/* The cgroup2 mount point from /proc/self/mounts into cgroup_root (kept when there is none). */
static void find_cgroup_root(void)
{
	char dev[64], dir[PATH_MAX], type[32], line[PATH_MAX + 256];
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %4095s %31s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			memcpy(cgroup_root, dir, strlen(dir) + 1);
			break;
		}
	}
	fclose(f);
}

static uint64_t cgroup_id_of(const char *cgroup_path)
{
	char path[PATH_MAX + 32];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", cgroup_root, cgroup_path);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

/* What the cgroup path tells of a process: id's cgroup_path, container_id and, when the rules
 * need them, k8s_namespace and k8s_pod (pointing into ci and pod). false when the path is a
 * pod's whose names the node does not show (yet).
 */
static bool cgroup_identity(struct selection *sel, const char *cgroup_path,
			    struct proc_identity *id, struct container_info *ci,
			    struct k8s_identity *pod)
{
	char text[PATH_MAX + 8];
	struct timespec ts;
	int err;

	id->cgroup_path = cgroup_path;
	snprintf(text, sizeof(text), "0::%s\n", cgroup_path);
	container__parse_cgroup(text, ci);
	id->container_id = ci->id;
	if (!selection_rules__need_pods(sel->rules))
		return true;
	if (!sel->pods)
		sel->pods = k8s_pod_table__new(sel->host_root, SELECTION_PODS);
	if (!sel->pods)
		return true; /* no memory: pod rules match nothing */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	err = k8s_pod_table__lookup_cgroup(
		sel->pods, cgroup_path, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
		pod);
	if (!err) {
		id->k8s_namespace = pod->namespace_name;
		id->k8s_pod = pod->pod_name;
		return true;
	}
	return !pod->pod_uid[0]; /* -ENOENT for a pod's path: not shown */
}

/* The cgroup's verdict into eBPF (once per cgroup id; a pod the node does not show yet: not
 * kept, asked again with its next process).
 */
static void note_cgroup(struct selection *sel, uint64_t id, const char *cgroup_path)
{
	struct container_info ci = { .id = "" };
	struct proc_identity pid_less = { .pid = 0 };
	struct k8s_identity pod;
	uint32_t v;

	if (!id || u64_map__get(&sel->cgroups, id))
		return;
	if (!cgroup_identity(sel, cgroup_path, &pid_less, &ci, &pod))
		return;
	v = (uint32_t)selection_rules__cgroup(sel->rules, &pid_less);
	if (u64_map__set(&sel->cgroups, id, (void *)(uintptr_t)(1 + v)))
		return;
	if (sel->cgroups_fd >= 0 && bpf_map_update_elem(sel->cgroups_fd, &id, &v, BPF_ANY))
		sel->stats.bpf_failures++;
	else
		sel->stats.cgroups++;
}

static void scan_cgroups(struct selection *sel, const char *rel, int depth, size_t *budget)
{
	char path[PATH_MAX], child[PATH_MAX];
	struct dirent *de;
	DIR *d;

	note_cgroup(sel, cgroup_id_of(*rel ? rel : "/"), *rel ? rel : "/");
	if (depth >= CGROUP_SCAN_DEPTH)
		return;
	snprintf(path, sizeof(path), "%s%s", cgroup_root, rel);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && *budget) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", rel, de->d_name) >=
		    sizeof(child))
			continue;
		(*budget)--;
		scan_cgroups(sel, child, depth + 1, budget);
	}
	closedir(d);
}

/* Classify pid now (comm: a name to use when /proc does not have it), into both verdicts. */
static bool classify(struct selection *sel, pid_t pid, const char *comm)
{
	char path[64], comm_buf[32] = "", exe[PATH_MAX] = "", cg[PATH_MAX] = "";
	struct container_info ci = { .id = "" };
	struct proc_identity id = { .pid = pid };
	struct k8s_identity pod;
	struct sel_verdict v = { 0 };
	uint32_t key = (uint32_t)pid;
	ssize_t n;
	FILE *f;
	bool keep;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm_buf, sizeof(comm_buf), f))
			comm_buf[strcspn(comm_buf, "\n")] = '\0';
		fclose(f);
	}
	id.comm = *comm_buf ? comm_buf : comm;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	id.exe = exe;
	if (!read_cgroup_path(pid, cg, sizeof(cg))) {
		cgroup_identity(sel, cg, &id, &ci, &pod);
		v.cgroup_id = cgroup_id_of(cg);
		note_cgroup(sel, v.cgroup_id, cg);
	}
	keep = selection_rules__keep(sel->rules, &id);
	sel->stats.classified++;
	if (keep)
		sel->stats.kept++;
	else
		sel->stats.dropped++;
	u64_map__set(&sel->verdicts, (uint64_t)pid,
		     (void *)(uintptr_t)(keep ? SEL_KEEP : SEL_DROP));
	v.verdict = keep ? SEL_KEEP : SEL_DROP;
	if (sel->procs_fd >= 0 && v.cgroup_id &&
	    bpf_map_update_elem(sel->procs_fd, &key, &v, BPF_ANY))
		sel->stats.bpf_failures++;
	pr_debug("selection: %d (%s, %s, %s): %s\n", (int)pid, id.comm ? id.comm : "?", exe, cg,
		 keep ? "kept" : "not selected");
	return keep;
}

static void write_state(struct selection *sel)
{
	const struct selection_rules *r = sel->rules;
	bool active = selection_rules__active(r);

	if (!sel->st)
		return;
	sel->st->has_include = active && r->has_include;
	sel->st->user_rules = active && (r->has_kind[SELECTION_PID] || r->has_kind[SELECTION_NAME]);
	sel->st->name_rules = active && r->has_kind[SELECTION_NAME];
	__sync_synchronize();
	sel->st->active = active;
}

/* The entries of "sel_procs" whose process this side has no verdict for, deleted. */
static void drop_stale_verdicts(struct selection *sel)
{
	uint32_t key, next, stale[256];
	size_t n, i;
	bool more;

	if (sel->procs_fd < 0)
		return;
	do { /* in rounds: deleting while iterating would restart the walk */
		n = 0;
		more = !bpf_map_get_next_key(sel->procs_fd, NULL, &next);
		while (more && n < sizeof(stale) / sizeof(stale[0])) {
			key = next;
			if (!u64_map__get(&sel->verdicts, key))
				stale[n++] = key;
			more = !bpf_map_get_next_key(sel->procs_fd, &key, &next);
		}
		for (i = 0; i < n; i++)
			bpf_map_delete_elem(sel->procs_fd, &stale[i]);
	} while (n == sizeof(stale) / sizeof(stale[0]));
}

int selection__set_rules(struct selection *sel, struct selection_rules *rules)
{
	size_t budget = CGROUP_SCAN_MAX;
	struct dirent *de;
	DIR *d;

	selection_rules__free(sel->rules);
	sel->rules = rules;
	u64_map__free(&sel->verdicts);
	u64_map__free(&sel->cgroups);
	if (!selection_rules__active(rules)) {
		if (sel->st)
			sel->st->active = 0;
		clear_bpf_map(sel->procs_fd);
		clear_bpf_map(sel->cgroups_fd);
		return 0;
	}
	/* eBPF keeps the old verdicts while the new ones overwrite them (this side, already
	 * under the new rules, drops what they let through meanwhile)
	 */
	scan_cgroups(sel, "", 0, &budget);
	d = opendir("/proc");
	if (d) {
		while ((de = readdir(d))) {
			char *end;
			long pid = strtol(de->d_name, &end, 10);

			if (*end || pid <= 0)
				continue;
			classify(sel, (pid_t)pid, NULL);
		}
		closedir(d);
	}
	drop_stale_verdicts(sel);
	write_state(sel);
	return 0;
}

bool selection__sample(struct selection *sel, pid_t pid, const char *comm)
{
	void *v;

	if (!sel || !selection_rules__active(sel->rules))
		return true;
	v = u64_map__get(&sel->verdicts, (uint64_t)pid);
	if (v ? (uintptr_t)v == SEL_KEEP : classify(sel, pid, comm))
		return true;
	sel->stats.user_dropped++;
	return false;
}

void selection__each_kept(const struct selection *sel, void (*fn)(pid_t pid, void *ctx), void *ctx)
{
	size_t iter = 0;
	uint64_t pid;
	void *v;

	while (u64_map__next(&sel->verdicts, &iter, &pid, &v))
		if ((uintptr_t)v == SEL_KEEP)
			fn((pid_t)pid, ctx);
}

void selection__exec(struct selection *sel, pid_t pid, const char *comm)
{
	if (!sel || !selection_rules__active(sel->rules))
		return;
	u64_map__del(&sel->verdicts, (uint64_t)pid);
	classify(sel, pid, comm);
}

void selection__exit(struct selection *sel, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (!sel || !selection_rules__active(sel->rules))
		return;
	u64_map__del(&sel->verdicts, (uint64_t)pid);
	if (sel->procs_fd >= 0)
		bpf_map_delete_elem(sel->procs_fd, &key);
}

/* ---- probabilistic profiling ---- */

unsigned int selection__draw(void)
{
	uint32_t x;

	/* below the largest multiple of 100 that fits: uniform */
	do {
		if (getrandom(&x, sizeof(x), 0) != sizeof(x))
			x = (uint32_t)rand();
	} while (x >= 4294967200u);
	return x % 100;
}

static void prob_draw(struct selection *sel, uint64_t now_ns)
{
	sel->prob_on = selection__draw() < sel->prob_threshold;
	sel->prob_next_ns = now_ns + sel->prob_interval_ns;
	if (sel->prob_on)
		sel->stats.prob_on++;
	else
		sel->stats.prob_off++;
	if (sel->st)
		sel->st->prob_on = sel->prob_on;
	pr_info("probabilistic profiling: the next %.1f s %s\n",
		(double)sel->prob_interval_ns / 1e9,
		sel->prob_on ? "are profiled" : "are not profiled");
}

void selection__set_probabilistic(struct selection *sel, unsigned int threshold,
				  uint64_t interval_ns, uint64_t now_ns)
{
	bool enabled = threshold < 100 && interval_ns > 0;

	sel->prob_threshold = threshold;
	sel->prob_interval_ns = interval_ns;
	if (!enabled) {
		sel->prob_on = true;
		if (sel->st) {
			sel->st->prob_enabled = 0;
			sel->st->prob_on = 1;
		}
		return;
	}
	prob_draw(sel, now_ns);
	if (sel->st) {
		__sync_synchronize();
		sel->st->prob_enabled = 1;
	}
}

int selection__tick(struct selection *sel, uint64_t now_ns)
{
	if (!sel || sel->prob_threshold >= 100 || !sel->prob_interval_ns ||
	    now_ns < sel->prob_next_ns)
		return 0;
	prob_draw(sel, now_ns);
	return 1;
}

bool selection__profiling(const struct selection *sel)
{
	return !sel || sel->prob_on;
}

void selection__stats(const struct selection *sel, struct selection_stats *out)
{
	*out = sel->stats;
}

void selection__print_summary(const struct selection *sel, const uint64_t *c)
{
	const struct selection_stats *st = &sel->stats;

	if (!c[COUNTER_SEL_DROPPED] && !c[COUNTER_SEL_UNCLASSIFIED] && !st->user_dropped &&
	    !c[COUNTER_PROB_OFF] && !st->classified)
		return;
	pr_info("selection: %llu samples not selected in eBPF (%.0f ns each, no walk; %.0f ns per "
		"walked sample), %llu of processes not classified yet (%llu of them dropped "
		"after the walk); %llu processes classified (%llu kept, %llu not), %llu cgroups; "
		"%llu not sampled: probabilistic interval off (%llu intervals on, %llu off)\n",
		(unsigned long long)c[COUNTER_SEL_DROPPED],
		c[COUNTER_SEL_DROPPED] ? (double)c[COUNTER_SEL_NS] / (double)c[COUNTER_SEL_DROPPED]
				       : 0.0,
		c[COUNTER_SAMPLES] ? (double)c[COUNTER_SAMPLE_NS] / (double)c[COUNTER_SAMPLES]
				   : 0.0,
		(unsigned long long)c[COUNTER_SEL_UNCLASSIFIED],
		(unsigned long long)st->user_dropped, (unsigned long long)st->classified,
		(unsigned long long)st->kept, (unsigned long long)st->dropped,
		(unsigned long long)st->cgroups, (unsigned long long)c[COUNTER_PROB_OFF],
		(unsigned long long)st->prob_on, (unsigned long long)st->prob_off);
}
