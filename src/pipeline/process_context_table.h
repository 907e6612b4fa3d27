/* What each process published as its OpenTelemetry process context (OTEP 4719), kept up to
 * date: found by the tracker's /proc scans (proc/maps.c notes the mapping) and by probes of a
 * new process's maps for its first minute (an SDK publishes at its start, maybe after our
 * first scan), read with proc/process_context.h, decoded with export/process_context_pb.h.
 *
 * When it reads (cost: see docs/ARCHITECTURE.md):
 *  - a process seen by a /proc scan with the mapping: at once;
 *  - a process discovered after the start (exec, or first seen) without one: its maps probed
 *    PCTX_PROBE_FIRST_NS after, then at doubling intervals up to PCTX_PROBE_LAST_NS; then
 *    only the tracker's own scans find it. A probe is made only when the process had a
 *    sample since its discovery or its last probe (pctx_table__service() notes them): a
 *    context only ever labels samples, and a process that does not run (a sleeper, under
 *    churn a hundred of them) cannot have published since, so it costs no /proc read
 *    (counted: "probes skipped: no sample"). Processes already there at the start are not
 *    probed (their SDK published long ago: the start's scan saw it);
 *  - a process with a context: its 32-byte header every PCTX_RECHECK_NS; the payload again
 *    only when the publish time changed (republished).
 * A context that could not be read (torn, too big, bad pointer, malformed) is not kept: the
 * process then has none (never a stale or partial one) and the reason is counted; a torn one
 * keeps the previous values and is tried again at the next check.
 * Exited processes keep their context for PCTX_EXITED_KEEP_NS (their last samples' export);
 * one with neither a context nor a refusal to report is forgotten at its exit.
 * At most PCTX_TABLE_CAP processes are tracked; more are counted, not read.
 * Not thread-safe (the session's thread).
 */
#ifndef STACKSCOPE_PROCESS_CONTEXT_TABLE_H
#define STACKSCOPE_PROCESS_CONTEXT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "export/process_context_pb.h"

#define PCTX_PROBE_FIRST_NS 250000000ULL    /* 250 ms */
#define PCTX_PROBE_LAST_NS 64000000000ULL   /* 64 s */
#define PCTX_RECHECK_NS 1000000000ULL       /* 1 s */
#define PCTX_EXITED_KEEP_NS 600000000000ULL /* 10 min */
#define PCTX_TABLE_CAP 65536

struct process;

#define PCTX_STATS(X)                                            \
	X(PCTX_STAT_PUBLISHED, "published")                      \
	X(PCTX_STAT_READ, "read")                                \
	X(PCTX_STAT_REPUBLISHED, "republished")                  \
	X(PCTX_STAT_CHECKS, "checked")                           \
	X(PCTX_STAT_PROBES, "maps probes")                       \
	X(PCTX_STAT_PROBES_SKIPPED, "probes skipped: no sample") \
	X(PCTX_STAT_TORN, "torn")                                \
	X(PCTX_STAT_GONE, "gone")                                \
	X(PCTX_STAT_BAD_HEADER, "bad header")                    \
	X(PCTX_STAT_TOO_BIG, "payload too big")                  \
	X(PCTX_STAT_BAD_PAYLOAD, "payload unreadable")           \
	X(PCTX_STAT_MALFORMED, "payload malformed")              \
	X(PCTX_STAT_ATTRS_SKIPPED, "attributes skipped")         \
	X(PCTX_STAT_TABLE_FULL, "processes not tracked")

#define PCTX_STAT_ENUM(id, name) id,
enum pctx_stat { PCTX_STATS(PCTX_STAT_ENUM) PCTX_STAT_CNT };

/* The stat's name ("torn"), for summaries and /metrics. */
const char *pctx_stat__name(enum pctx_stat s);

struct pctx_stats {
	uint64_t v[PCTX_STAT_CNT];
	uint64_t read_ns; /* time spent reading (probes, headers, payloads, decoding) */
};

struct pctx_table;

struct pctx_table *pctx_table__new(void);
void pctx_table__free(struct pctx_table *t);

/* The processes scanned from now on are new (probed); before: there at the start. */
void pctx_table__started(struct pctx_table *t);
/* A /proc scan or eBPF view of p (alive). */
void pctx_table__scanned(struct pctx_table *t, const struct process *p, uint64_t now_ns);
/* pid exec'd: its context is gone with the old image. */
void pctx_table__exec(struct pctx_table *t, pid_t pid, uint64_t now_ns);
void pctx_table__exited(struct pctx_table *t, pid_t pid, uint64_t now_ns);
/* Due probes and checks. Cheap when nothing is due. */
void pctx_table__tick(struct pctx_table *t, uint64_t now_ns);

/* pid's context, or NULL (none, or not readable). Borrowed until the next call of any other
 * function of t.
 */
const struct pctx_attrs *pctx_table__get(const struct pctx_table *t, pid_t pid);
/* The service.name of pid's context (of its resource, else of its extra attributes), or NULL;
 * borrowed as pctx_table__get()'s. When it is NULL because pid's published context is refused,
 * *refused says why (pctx_table__refused()), else it is NULL. One lookup: called per sample,
 * and notes that pid had one (its next probe is made).
 */
const char *pctx_table__service(struct pctx_table *t, pid_t pid, const char **refused);
/* The names pid published for its thread context's attribute key indexes (PCTX_KEY_MAP of
 * OTEP 4947): *cnt of them in index order (a NULL one: that index unnamed), or NULL (no map).
 * Borrowed as pctx_table__get()'s. One lookup: called per sample with attributes.
 */
const char *const *pctx_table__key_map(const struct pctx_table *t, pid_t pid, size_t *cnt);
/* Why pid's published context is not used ("payload too big"), or NULL. Static string. */
const char *pctx_table__refused(const struct pctx_table *t, pid_t pid);

const struct pctx_stats *pctx_table__stats(const struct pctx_table *t);

/* The summary line's text ("published 2, read 2, ..., 0.3 ms"), NUL-terminated in buf. */
void pctx_stats__format(const struct pctx_stats *s, char *buf, size_t sz);

#endif
