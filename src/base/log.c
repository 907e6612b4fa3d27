/* Logging sink: level filter, "stackscope: " prefix, stderr. */
#include <stdarg.h>
#include <stdio.h>

#include "base/log.h"

static enum log_level current_level = LOG_INFO;

void log__set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log__level(void)
{
	return current_level;
}

void log__printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log__vprintf(level, fmt, ap);
	va_end(ap);
}

void log__vprintf(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {
		[LOG_ERROR] = "error: ",
		[LOG_WARN] = "warning: ",
		[LOG_INFO] = "",
		[LOG_DEBUG] = "debug: ",
	};
	if (level > current_level)
		return;
	fprintf(stderr, "stackscope: %s", prefix[level]);
	vfprintf(stderr, fmt, ap);
}
