/* `stackscope agent --config FILE`: the agent's flags written in a file, one per line.
 *
 * Format (docs: agent --help, README "Fleet"):
 *   # a comment, and blank lines, are skipped
 *   otlp-endpoint = https://collector:4317      a flag's long name, "=", its value (the rest of
 *   otlp-header = authorization=Bearer x        the line, trimmed; no quoting, '#' is kept)
 *   off-cpu                                     a flag without a value (or "= true"; "= false"
 *                                               leaves the default)
 * Every flag of `stackscope agent` is a key (freq, interval, otlp-*, store, ...); a repeatable
 * one (otlp-header) may repeat. The file is applied first and the command line after it, so
 * flags override the file. An unknown key, a bad value or a bad line is an error naming
 * FILE:LINE. The file is read at start and again on SIGHUP (cli/agent_reload.h: what changes
 * live, what needs a restart; a file with errors keeps the running configuration).
 */
#ifndef STACKSCOPE_AGENT_CONFIG_H
#define STACKSCOPE_AGENT_CONFIG_H

#include <stddef.h>

/* One setting of the file as a command-line word ("--key" or "--key=value") and its line. */
struct agent_config_entry {
	char *arg;
	unsigned line;
};

/* Reads path into entries (*out, *cnt), kept for the process's life (the options point into
 * them). 0, or -errno / -EINVAL after one error line naming path (and the line) on stderr.
 */
int agent_config__load(const char *path, const struct agent_config_entry **out, size_t *cnt);

/* The value of --config FILE or --config=FILE in argv (before any "--"), or NULL. */
const char *agent_config__path(int argc, char **argv);

#endif
