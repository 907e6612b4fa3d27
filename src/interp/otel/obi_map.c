/* OBI's shared map traces_ctx_v1 followed through its pin (obi_map.h).
 *
 * Invariants: slot 0 of "obi_maps" holds a map only while it passed check_layout(); the map id
 * in the slot is m->id (0: empty). A pinned map is opened, checked and closed at each re-check:
 * the slot keeps its own reference, so an unpinned map stays readable until the next check
 * takes it out.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "interp/otel/obi_map.h"

struct obi_map {
	char *path;          /* "" : none */
	int slot_fd;         /* borrowed */
	uint32_t id;         /* the map in the slot, 0: none */
	uint32_t refused_id; /* the last map refused (warned about once; ~0u: not a map) */
	uint64_t next_check_ns;
	struct obi_map_stats stats;
};

/* Why a map is not of the layout, into why[cap]: 0 (it is) or -EINVAL. */
static int check_layout(const struct bpf_map_info *info, char *why, size_t cap)
{
	if (info->type != BPF_MAP_TYPE_LRU_HASH)
		snprintf(why, cap, "map type %u, not an LRU hash (%u)", info->type,
			 BPF_MAP_TYPE_LRU_HASH);
	else if (info->key_size != OBI_MAP_KEY_SZ)
		snprintf(why, cap, "key of %u bytes, not %u (pid_tgid)", info->key_size,
			 OBI_MAP_KEY_SZ);
	else if (info->value_size != OBI_MAP_VALUE_SZ)
		snprintf(why, cap, "value of %u bytes, not %u (trace id, span id)",
			 info->value_size, OBI_MAP_VALUE_SZ);
	else if (info->map_flags)
		snprintf(why, cap, "map flags %#x, not 0", info->map_flags);
	else
		return 0;
	return -EINVAL;
}

static void empty_slot(struct obi_map *m, const char *why)
{
	uint32_t zero = 0;

	if (!m->id)
		return;
	if (bpf_map_delete_elem(m->slot_fd, &zero) && errno != ENOENT)
		pr_warn("OBI map %s: cannot stop reading map %u: %s\n", m->path, m->id,
			strerror(errno));
	pr_info("OBI map %s: map %u %s: no longer read\n", m->path, m->id, why);
	m->stats.gone++;
	m->id = 0;
	m->stats.state = OBI_MAP_ABSENT;
	m->stats.map_id = 0;
}

static void refuse(struct obi_map *m, uint32_t id, const char *why)
{
	empty_slot(m, "replaced");
	m->stats.state = OBI_MAP_REFUSED;
	m->stats.map_id = id == ~0u ? 0 : id;
	if (id == m->refused_id)
		return;
	m->refused_id = id;
	m->stats.refused++;
	pr_warn("OBI map %s: %s: not used\n", m->path, why);
}

static void check(struct obi_map *m)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info), zero = 0;
	char why[128];
	int fd;

	fd = bpf_obj_get(m->path);
	if (fd < 0 && errno != ENOENT) {
		/* not a verdict on the map (no right to open it now): what is read stays */
		pr_debug("OBI map %s: %s\n", m->path, strerror(errno));
		return;
	}
	if (fd < 0) {
		empty_slot(m, "unpinned");
		if (m->stats.state == OBI_MAP_REFUSED)
			m->stats.state = OBI_MAP_ABSENT;
		return;
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		refuse(m, ~0u, "not a BPF map");
		goto cleanup;
	}
	if (info.id && info.id == m->id)
		goto cleanup; /* the one read */
	if (check_layout(&info, why, sizeof(why))) {
		refuse(m, info.id, why);
		goto cleanup;
	}
	if (bpf_map_update_elem(m->slot_fd, &zero, &fd, BPF_ANY)) {
		snprintf(why, sizeof(why), "refused by the kernel: %s", strerror(errno));
		refuse(m, info.id, why);
		goto cleanup;
	}
	if (m->id)
		pr_info("OBI map %s: map %u replaced by map %u\n", m->path, m->id, info.id);
	else
		pr_info("OBI map %s: spans read from map %u (OBI's traces_ctx_v1)\n", m->path,
			info.id);
	m->id = info.id;
	m->refused_id = 0;
	m->stats.attached++;
	m->stats.state = OBI_MAP_READ;
	m->stats.map_id = info.id;
cleanup:
	close(fd);
}

struct obi_map *obi_map__new(const char *path, int slot_fd, uint64_t now_ns)
{
	struct obi_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->path = strdup(path ? path : "");
	if (!m->path) {
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->slot_fd = slot_fd;
	if (m->path[0] && slot_fd >= 0)
		check(m);
	m->next_check_ns = now_ns + OBI_MAP_RECHECK_NS;
	return m;
}

void obi_map__tick(struct obi_map *m, uint64_t now_ns)
{
	if (!m || !m->path[0] || m->slot_fd < 0 || now_ns < m->next_check_ns)
		return;
	m->next_check_ns = now_ns + OBI_MAP_RECHECK_NS;
	check(m);
}

void obi_map__stats(const struct obi_map *m, struct obi_map_stats *out)
{
	if (m)
		*out = m->stats;
	else
		memset(out, 0, sizeof(*out));
}

const char *obi_map__path(const struct obi_map *m)
{
	return m ? m->path : "";
}

void obi_map__free(struct obi_map *m)
{
	if (!m)
		return;
	free(m->path);
	free(m);
}
