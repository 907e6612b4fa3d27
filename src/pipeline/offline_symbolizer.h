/* The offline symbolizer: reads a pprof profile, fills in the native frames written as
 * addresses from the debug files found here (by build id, file name, --debug-dir, debuginfod),
 * and writes it back; what it touches and where it looks: offline_symbolizer.c's opening
 * comment.
 */
#ifndef STACKSCOPE_OFFLINE_SYMBOLIZER_H
#define STACKSCOPE_OFFLINE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>

#define SYM_MAX_DEBUG_DIRS 16
#define SYM_DEFAULT_TIMEOUT_S 30

struct offline_symbolizer_opts {
	const char *in;
	const char *out;
	const char *debug_dirs[SYM_MAX_DEBUG_DIRS];
	size_t debug_dir_cnt;
	bool debuginfod;
	int debuginfod_timeout_s;
	bool verbose; /* print where each file's debug info came from (stderr) */
};

/* Symbolizes o->in into o->out, and prints a summary on stderr. The exit status: 0, or 1
 * after printing the problem ("stackscope symbolize: ...").
 */
int offline_symbolizer__run(const struct offline_symbolizer_opts *o);

#endif
