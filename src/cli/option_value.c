/* Values of command-line options: see option_value.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/option_value.h"

int option_value__ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out < min || *out > max ? -EINVAL : 0;
}

int option_value__double(const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*out) || *out < min || *out > max ? -EINVAL
											: 0;
}

int option_value__pid_list(const char *s, pid_t *pids, size_t cap, size_t *cnt)
{
	char buf[1024], *save = NULL, *item;
	size_t len = strlen(s);
	unsigned long v;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len + 1);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		if (option_value__ulong(item, 1, INT_MAX, &v) || *cnt >= cap)
			return -EINVAL;
		pids[(*cnt)++] = (pid_t)v;
	}
	return *cnt ? 0 : -EINVAL;
}

int option_value__directory(const char *s)
{
	struct stat st;

	if (stat(s, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int option_error_getopt(const char *command, int c, const char *option)
{
	if (c == ':')
		return option_error(command, "option '%s' needs a value", option);
	return option_error(command, "unknown option '%s' (see --help)", option);
}

int option_error(const char *command, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "stackscope %s: ", command);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}
