/* Whole writes to a descriptor (fd_write.h). */
#include <errno.h>
#include <unistd.h>

#include "base/fd_write.h"

int fd__write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}
