/* OBI's shared map traces_ctx_v1 (OpenTelemetry eBPF Instrumentation; specification pull
 * request 4855; layout in bpf/interp/otel/bpf_abi.h): while a map of that layout is pinned at
 * the path given, eBPF looks the sampled thread up in it at each sample
 * (bpf/interp/otel/obi_map.h) and a sample whose thread published no thread context of its own
 * carries OBI's span.
 *
 * The pin is checked at creation and then every OBI_MAP_RECHECK_NS: a map that appears (OBI
 * started after stackscope), changes (OBI restarted and pinned a new one) or goes is followed.
 * A map of another type, key or value size or flags is refused with one warning (per map) and
 * counted; it is never read.
 */
#ifndef STACKSCOPE_OBI_MAP_H
#define STACKSCOPE_OBI_MAP_H

#include <stdint.h>

#define OBI_MAP_DEFAULT_PATH "/sys/fs/bpf/otel/traces_ctx_v1"
#define OBI_MAP_RECHECK_NS (2 * 1000000000ull)

enum obi_map_state {
	OBI_MAP_ABSENT = 0, /* nothing pinned there (or unreadable) */
	OBI_MAP_READ,       /* in eBPF's slot: read at each sample */
	OBI_MAP_REFUSED,    /* pinned, but not of the layout */
};

struct obi_map_stats {
	enum obi_map_state state;
	uint32_t map_id;   /* the map read or refused (0: none) */
	uint64_t attached; /* maps put in the slot */
	uint64_t refused;  /* maps refused (each once) */
	uint64_t gone;     /* maps taken out: unpinned or replaced */
};

struct obi_map;

/* path: the pin (NULL or "": none, nothing is checked); slot_fd: the BPF array of maps
 * "obi_maps" (borrowed, alive as long as the object). Checks the pin once. NULL with errno
 * (ENOMEM).
 */
struct obi_map *obi_map__new(const char *path, int slot_fd, uint64_t now_ns);
/* Re-checks the pin when OBI_MAP_RECHECK_NS passed since the last check. */
void obi_map__tick(struct obi_map *m, uint64_t now_ns);
void obi_map__stats(const struct obi_map *m, struct obi_map_stats *out);
/* The pin's path ("" for none); borrowed, alive as long as m. */
const char *obi_map__path(const struct obi_map *m);
void obi_map__free(struct obi_map *m);

#endif
