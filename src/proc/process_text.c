/* A process's command line and environment from /proc. See process_text.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/safe_open.h"
#include "proc/process_text.h"

/* /proc/PID/<name>, at most PROCESS_TEXT_MAX bytes and a NUL after them; NULL if unreadable
 * or empty.
 */
static char *read_text(pid_t pid, const char *name, size_t *len)
{
	char path[64], *buf = NULL;
	ssize_t n;
	int fd;

	*len = 0;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = safe_open(path);
	if (fd < 0)
		return NULL;
	buf = malloc(PROCESS_TEXT_MAX + 1);
	while (buf && *len < PROCESS_TEXT_MAX) {
		n = read(fd, buf + *len, PROCESS_TEXT_MAX - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	if (!buf || !*len) {
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

char *process_text__cmdline(pid_t pid)
{
	size_t len, i;
	char *text = read_text(pid, "cmdline", &len);

	for (i = 0; text && i + 1 < len; i++)
		if (!text[i])
			text[i] = ' ';
	return text;
}

char *process_text__environ(pid_t pid, size_t *len)
{
	return read_text(pid, "environ", len);
}

bool process_text__next_var(const char *env, size_t len, size_t *pos, const char **name,
			    size_t *name_len, const char **value)
{
	while (*pos < len) {
		const char *var = env + *pos, *eq = strchr(var, '=');

		*pos += strlen(var) + 1;
		if (!eq || eq == var)
			continue;
		*name = var;
		*name_len = (size_t)(eq - var);
		*value = eq + 1;
		return true;
	}
	return false;
}
