/* The agent's Prometheus text: the session's, the sinks' and the metrics server's counters. */
#ifndef STACKSCOPE_AGENT_METRICS_H
#define STACKSCOPE_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct agent_export;
struct metrics_server;
struct session;

/* Writes the text exposition into buf (cut at cap - 1 bytes, NUL-terminated); its length. */
size_t agent_metrics__format(struct session *s, const struct agent_export *ex,
			     struct metrics_server *ms, uint64_t rss_bytes, char *buf, size_t cap);

#endif
