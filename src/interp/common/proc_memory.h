/* Reading another process's memory, for the runtimes: raw bytes, words, and the names a runtime
 * keeps there (a counted string, a NUL-terminated one), made printable by one scrub.
 *
 * The memory is the process's, live: it may change between two reads, be unmapped, or belong
 * to a process that has exited. Every read is bounded by its caller's cap; a failure is an
 * error to return, never a reason to log.
 */
#ifndef STACKSCOPE_PROC_MEMORY_H
#define STACKSCOPE_PROC_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* size bytes of process pid's memory at addr. 0 or -errno (-EFAULT: partly unreadable). */
int interp__read_mem(pid_t pid, uint64_t addr, void *buf, size_t size);

/* One 64-bit word of process pid's memory at addr (native byte order). 0 or -errno. */
static inline int interp__read_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return interp__read_mem(pid, addr, out, sizeof(*out));
}

/* Make s[0..len) printable: each control byte (below 0x20, and 0x7f) becomes '?'; then
 * s[len] = '\0' (s has room for len + 1 bytes). Bytes of multi-byte UTF-8 are kept.
 */
void interp__scrub(char *s, size_t len);

/* The len bytes at addr as a new scrubbed C string (the caller frees it), or NULL when
 * unreadable or out of memory. The caller caps len.
 */
char *interp__read_text(pid_t pid, uint64_t addr, size_t len);

/* The NUL-terminated string at addr, at most max bytes of it, as a new scrubbed C string (the
 * caller frees it), or NULL when unreadable. Read in chunks that stay within 64-byte blocks:
 * the string's end may be followed by unmapped memory.
 */
char *interp__read_cstr(pid_t pid, uint64_t addr, size_t max);

#endif
