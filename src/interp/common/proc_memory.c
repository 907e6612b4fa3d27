/* Reading another process's memory, for the runtimes (see proc_memory.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "interp/common/proc_memory.h"

int interp__read_mem(pid_t pid, uint64_t addr, void *buf, size_t size)
{
	struct iovec local = { buf, size }, remote = { (void *)(uintptr_t)addr, size };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)size)
		return 0;
	return n < 0 ? -errno : -EFAULT;
}

void interp__scrub(char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	s[len] = '\0';
}

char *interp__read_text(pid_t pid, uint64_t addr, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		return NULL;
	if (len && interp__read_mem(pid, addr, s, len)) {
		free(s);
		return NULL;
	}
	interp__scrub(s, len);
	return s;
}

char *interp__read_cstr(pid_t pid, uint64_t addr, size_t max)
{
	char *buf = addr ? malloc(max + 1) : NULL, *shrunk;
	size_t len = 0, chunk;

	if (!buf)
		return NULL;
	while (len < max) {
		chunk = 64 - ((addr + len) & 63);
		if (chunk > max - len)
			chunk = max - len;
		if (interp__read_mem(pid, addr + len, buf + len, chunk)) {
			free(buf);
			return NULL;
		}
		if (memchr(buf + len, '\0', chunk)) {
			len = strnlen(buf, max);
			break;
		}
		len += chunk;
	}
	interp__scrub(buf, len);
	shrunk = realloc(buf, len + 1);
	return shrunk ? shrunk : buf;
}
