/* Writing a whole buffer to a descriptor: write(2) may take fewer bytes than asked (a pipe, a
 * terminal, a signal) and is retried on EINTR. Async-signal-safe: terminal.c restores the
 * terminal with it from a signal handler.
 */
#ifndef STACKSCOPE_FD_WRITE_H
#define STACKSCOPE_FD_WRITE_H

#include <stddef.h>

/* Writes all n bytes of buf to fd. 0 or -errno; -EIO when write() takes none. */
int fd__write_all(int fd, const void *buf, size_t n);

#endif
