/* Logging sink: level filter, "stackscope: " prefix, stderr.
 *
 * Messages carry names other users chose (file paths, process names, debug links): control
 * characters in them (ESC sequences that would drive the terminal, CR that would hide a line,
 * newlines that would forge one) are written as \xNN. One message is one line: only its final
 * newline is kept. Messages longer than LOG_LINE_MAX are cut with "...".
 */
#include <stdarg.h>
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

void log__vprintf(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {
		[LOG_ERROR] = "error: ",
		[LOG_WARN] = "warning: ",
		[LOG_INFO] = "",
		[LOG_DEBUG] = "debug: ",
	};
	char msg[LOG_LINE_MAX], out[4 * LOG_LINE_MAX + 8];
	size_t len, o = 0, i;
	int n;

	if (level > current_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	len = strlen(msg);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)msg[i];

		if (c == '\n' && i == len - 1)
			break;
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
			continue;
		}
		out[o++] = (char)c;
	}
	if ((size_t)n >= sizeof(msg)) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	fprintf(stderr, "stackscope: %s%s%s", prefix[level], out, i < len || (size_t)n >= sizeof(msg) ? "\n" : "");
}
