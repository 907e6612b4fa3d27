/* The one logging sink. Messages go to stderr with a level prefix; libbpf's own output is
 * routed here too (log__libbpf_print). Parsers and encoders log at debug at most; their
 * caller decides what the user sees.
 */
#ifndef STACKSCOPE_LOG_H
#define STACKSCOPE_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log__set_level(enum log_level level);
enum log_level log__level(void);
void log__printf(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log__vprintf(enum log_level level, const char *fmt, va_list ap);

/* s with control characters written as \xNN, into out (cap bytes, cut if longer); returns
 * out. For names other users chose that are printed outside the log (summaries).
 */
const char *log__escape(const char *s, char *out, size_t cap);

#define pr_err(...) log__printf(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...) log__printf(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log__printf(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log__printf(LOG_DEBUG, __VA_ARGS__)

#endif
