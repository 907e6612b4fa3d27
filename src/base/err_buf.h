/* A formatted error message into a caller's buffer (err, err_sz): nothing when err is NULL or
 * err_sz 0. For functions that report one clear line to a caller that prints it.
 */
#ifndef STACKSCOPE_ERR_BUF_H
#define STACKSCOPE_ERR_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void err_buf__set(char *err, size_t err_sz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void err_buf__set(char *err, size_t err_sz, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_sz)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_sz, fmt, ap);
	va_end(ap);
}

#endif
