/* A tiny Prometheus text endpoint: GET /metrics on a loopback (or given) address, served by
 * its own thread from a snapshot the owner replaces with metrics_server__publish().
 * Anything else gets 404. One connection at a time, bounded request size, 2 s timeouts.
 */
#ifndef STACKSCOPE_METRICS_SERVER_H
#define STACKSCOPE_METRICS_SERVER_H

struct metrics_server;

/* addr: "HOST:PORT" (IPv4, e.g. 127.0.0.1:9464). NULL with errno (EINVAL for a bad address,
 * EADDRINUSE...).
 */
struct metrics_server *metrics_server__start(const char *addr);
/* Replace the text served (copied). */
void metrics_server__publish(struct metrics_server *m, const char *text, size_t len);
void metrics_server__stop(struct metrics_server *m);

#endif
