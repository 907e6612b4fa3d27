/* A source file read for the web UI's source view (serve/source_view.h), as a sampled process
 * sees it, from a path that came from that process (a script's file name, a DWARF path): every
 * byte of the path is untrusted.
 *
 * Invariants: the path is resolved inside the given root only (openat2 RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS: ".." and absolute symlinks stay inside; a kernel without openat2 is
 * refused, never a weaker open); what is found is first opened O_PATH and looked at, so a FIFO,
 * a device or a socket is never opened for reading; only a regular file of a disk file system
 * (not /proc, /sys and their kind) of at most SOURCE_FILE_MAX_SZ bytes and
 * SOURCE_FILE_MAX_LINES lines, with no NUL byte, readable by every user or owned by the
 * process's user, is read. Every refusal comes with a one-line reason for the UI.
 */
#ifndef STACKSCOPE_SOURCE_FILE_H
#define STACKSCOPE_SOURCE_FILE_H

#include <stddef.h>
#include <sys/types.h>

#define SOURCE_FILE_MAX_SZ ((size_t)2 << 20)
#define SOURCE_FILE_MAX_LINES 100000u

/* A file's text: buf (NUL-terminated, len bytes) and its lines' count. */
struct source_text {
	char *buf;
	size_t len;
	size_t line_cnt;
};

/* Reads path (absolute, as the process sees it) inside root_fd (an O_PATH directory: the
 * process's /proc/PID/root, or "/"). A file not readable by every user is read only when
 * owner_uid (the process's user; (uid_t)-1: none) owns it, root excepted (a root process owns
 * /etc/shadow: its files are shown only when every user may read them). 0 with *out filled (free it with
 * source_text__free()), or -errno with *why the reason (a static string): -ENOENT missing,
 * -EXDEV leading out of the root, -EINVAL not a regular file or not a source file (a pseudo
 * file system, a NUL byte, not an absolute path), -EFBIG too big, -EACCES not readable,
 * -ENOSYS no openat2, -ENOMEM.
 */
int source_file__read(int root_fd, const char *path, uid_t owner_uid, struct source_text *out,
		      const char **why);
void source_text__free(struct source_text *t);

#endif
