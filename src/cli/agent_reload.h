/* `stackscope agent` on SIGHUP: the configuration read again (--config FILE, then the command
 * line over it, as at start) and applied where it can change live.
 *
 * Live: the selection rules (--select-*, --exclude-*), probabilistic profiling, the OTLP
 * endpoint, protocol, headers and TLS files (the exporter is rebuilt: its queue is flushed for
 * up to 2 s first, what is left of it dropped and counted), --interval, --log-interval and -v.
 * Not live (one line per key that changed, the running value kept): -F (the perf events would
 * be reopened: samples lost), the table cache, the store, the pprof folder, the metrics and UI
 * addresses, the unwind pool, symbolizing, off-CPU and the resource attributes' options. A file
 * that does not parse keeps the whole running configuration, after its error line and one
 * line saying so.
 *
 * Memory: each reload's file entries stay allocated (kept values may point into them): the
 * file's size per SIGHUP.
 */
#ifndef STACKSCOPE_AGENT_RELOAD_H
#define STACKSCOPE_AGENT_RELOAD_H

struct agent_options;
struct agent_export;
struct session;

/* Re-read and apply. *o (malloc'ed) is replaced by a new one when the exporter, which borrows
 * (*o)->export, is rebuilt (*ex replaced too; the old ones freed). 0: applied; -EINVAL: the
 * file has errors, nothing changed; -ENOMEM.
 */
int agent_reload(int argc, char **argv, struct agent_options **o, struct agent_export **ex,
		 struct session *s);

/* Probabilistic profiling of o into the session's selection (at start and after a reload). */
void agent_reload__probabilistic(const struct agent_options *o, struct session *s);

#endif
