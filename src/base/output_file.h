/* Output files written as root to places users name: `record -o`, `symbolize -o`, the agent's
 * pprof folder, the unwind-table cache.
 *
 * What a target path may be, and what happens to it:
 *  - nothing, or a regular file: the bytes go to a new temporary next to it, named
 *    "<path>.<16 random hex digits>.tmp" and created with O_CREAT|O_EXCL|O_NOFOLLOW (mode
 *    0644 less the umask; another random name is tried, a bounded number of times, when one
 *    exists), so a file or symlink planted at any name is never opened. Commit renames the
 *    temporary over the path, and only if the path is then still a regular file or nothing:
 *    readers never see half a file, a failed or abandoned write leaves the previous file
 *    intact and no temporary behind. Nothing is fsync'd: after a crash of the system the
 *    file may be the previous one or empty.
 *  - a character device or a FIFO: written in place, never renamed or truncated. A FIFO is
 *    opened only when the output is written, without blocking: its reader must be there by
 *    then (-EPIPE otherwise).
 *  - "-" (output_file__open() only): standard output, written in place.
 *  - a symbolic link: followed only when we own it (a user cannot have planted it; this is
 *    /dev/stdout, and /dev/fd/N of a shell's `>(...)`) and it leads to a character device
 *    or FIFO; any other symlink is refused with -ELOOP. Never is a file written through a
 *    symlink, or renamed over one.
 *  - a directory: -EISDIR; anything else (block device, socket): -EINVAL.
 *
 * Errors are 0 or -errno; output_file__strerror() words this module's own ones.
 */
#ifndef STACKSCOPE_OUTPUT_FILE_H
#define STACKSCOPE_OUTPUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct output_file;

/* Validates path as an output without writing it or waiting: the rules above apply, a
 * FIFO or device must be writable (access check only; a FIFO is not opened), and for a
 * regular file or nothing a temporary is created in its folder and removed again.
 * 0 or -errno.
 */
int output_file__check(const char *path);

/* Opens path for writing under the rules above. 0 and *out, or -errno (nothing created). */
int output_file__open(const char *path, struct output_file **out);

/* The same for name relative to the folder dir_fd (AT_FDCWD allowed), which stays the
 * caller's and must stay open until commit or abort. "-" is a plain name here.
 */
int output_file__openat(int dir_fd, const char *name, struct output_file **out);

/* The descriptor to write to; owned by f. */
int output_file__fd(const struct output_file *f);

/* Writes all n bytes to the descriptor; 0 or -errno (-EIO for a write of 0 bytes). */
int output_file__write(struct output_file *f, const void *buf, size_t n);

/* A stdio stream on the descriptor, owned by f (closed by commit or abort); the same stream
 * on every call. NULL with errno.
 */
FILE *output_file__stream(struct output_file *f);

/* output_file__open() and the stream at once: 0 with *out and *stream, or -errno (nothing
 * created, nothing left open).
 */
int output_file__open_stream(const char *path, struct output_file **out, FILE **stream);

/* Finishes the output: flushes and closes, then renames a temporary over the path. Frees f
 * in every case. 0, or -errno with the temporary removed and the path as it was.
 */
int output_file__commit(struct output_file *f);

/* Commits f when err is 0, else drops it (output_file__abort()). Returns what commit
 * returned, or err: the way to end a write whose outcome is err.
 */
int output_file__finish(struct output_file *f, int err);

/* Drops the output: closes, removes a temporary, frees f. NULL is accepted. What was
 * already written to a device, FIFO or standard output stays written.
 */
void output_file__abort(struct output_file *f);

/* A message for an error returned by this module: -ELOOP "is a symbolic link ...", -EPIPE
 * "no reader ...", -EINVAL "not a regular file, character device or FIFO"; else
 * strerror(). err is negative.
 */
const char *output_file__strerror(int err);

/* Opens the folder path (O_DIRECTORY|O_NOFOLLOW) for files that only we may plant: it must
 * not be a symlink (-ELOOP), and must be owned by our effective uid and writable by neither
 * group nor others (-EACCES), so no other user can put files or links in it. The descriptor
 * (close-on-exec) or -errno.
 */
int output_file__open_dir(const char *path);

/* Tests only: temporary names take their random part from next() (NULL: back to the
 * kernel's random numbers), so that a test can plant files at the names to come.
 */
void output_file__set_tmp_source(uint64_t (*next)(void));

#endif
