/* Values of command-line options, shared by the commands' option parsers (record, agent,
 * top, symbolize): numbers in a range, lists of pids, directories, and the one error line
 * a bad option gets.
 *
 * Every parser takes the whole argument: nothing may follow the value, a sign is refused
 * where the value is unsigned, and the result is written only when it is returned with 0
 * (else -EINVAL, *out unspecified).
 */
#ifndef STACKSCOPE_OPTION_VALUE_H
#define STACKSCOPE_OPTION_VALUE_H

#include <stddef.h>
#include <sys/types.h>

/* A decimal integer in [min, max]. */
int option_value__ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);
/* A finite decimal number in [min, max] ("1e3" too). */
int option_value__double(const char *s, double min, double max, double *out);
/* "PID[,PID...]": between 1 and cap pids, each in [1, INT_MAX], appended to pids[*cnt...]
 * (at most 1023 characters). Empty items between commas are skipped; none at all is an
 * error.
 */
int option_value__pid_list(const char *s, pid_t *pids, size_t cap, size_t *cnt);

/* 0 when s names a directory (through symlinks); else -errno of stat(), or -ENOTDIR. */
int option_value__directory(const char *s);

/* Prints "stackscope COMMAND: MESSAGE\n" to stderr; returns -EINVAL. */
int option_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error line of what getopt_long() returned for option (argv[optind - 1]) when its
 * optstring starts with ':': ':' a value missing, anything else an unknown option. -EINVAL.
 */
int option_error_getopt(const char *command, int c, const char *option);

#endif
