/* Logging sink: level filter, "stackscope: " prefix, stderr.
 *
 * Messages carry names other users chose (file paths, process names, debug links): control
 * characters in them (ESC sequences that would drive the terminal, CR that would hide a line,
 * newlines that would forge one) are written as \xNN. One message is one line: only its final
 * newline is kept. Messages longer than LOG_LINE_MAX are cut with "...".
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

#define LOG_LINE_MAX 2048

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

const char *log__escape(const char *s, char *out, size_t cap)
{
	size_t o = 0;

	for (; *s && o + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = '\0';
	return out;
}

void log__vprintf(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {
		[LOG_ERROR] = "error: ",
		[LOG_WARN] = "warning: ",
		[LOG_INFO] = "",
		[LOG_DEBUG] = "debug: ",
	};
	char msg[LOG_LINE_MAX], out[4 * LOG_LINE_MAX + 8];
	bool newline = false;
	size_t len;
	int n;

	if (level > current_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	len = strlen(msg);
	if (len && msg[len - 1] == '\n') {
		msg[--len] = '\0'; /* the one newline a message may end with */
		newline = true;
	}
	log__escape(msg, out, sizeof(out));
	fprintf(stderr, "stackscope: %s%s%s%s", prefix[level], out,
		(size_t)n >= sizeof(msg) ? "..." : "",
		newline || (size_t)n >= sizeof(msg) ? "\n" : "");
}
