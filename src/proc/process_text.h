/* What a process was started with, as /proc shows it while the process lives: its command
 * line and its environment, both NUL-separated strings.
 *
 * Read through base/safe_open.h (a regular file only, never blocking), at most
 * PROCESS_TEXT_MAX bytes (the rest is cut); nothing for a process that exited or whose files
 * we may not read. Both may hold secrets: read them only when asked to.
 */
#ifndef STACKSCOPE_PROCESS_TEXT_H
#define STACKSCOPE_PROCESS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROCESS_TEXT_MAX (16 * 1024)

/* The command line, its arguments separated by spaces: a malloc'ed string the caller frees;
 * NULL when unreadable or empty (a kernel thread).
 */
char *process_text__cmdline(pid_t pid);

/* The environment: a malloc'ed buffer the caller frees, *len bytes of "NAME=value" strings,
 * each ending in a NUL, with one more NUL after the last; NULL when unreadable or empty.
 */
char *process_text__environ(pid_t pid, size_t *len);

/* The next variable of an environment buffer from *pos on (start at 0): true with its name
 * (name_len bytes, not NUL-terminated) and its NUL-terminated value; false at the end.
 * Strings without '=' or with an empty name are skipped.
 */
bool process_text__next_var(const char *env, size_t len, size_t *pos, const char **name,
			    size_t *name_len, const char **value);

#endif
