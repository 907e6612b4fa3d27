/* Read-only mappings of files that someone else may shrink while we read them.
 *
 * The profiler maps executables, libraries and debug files that any user or container can
 * truncate or rewrite at any time. Touching a page of a MAP_PRIVATE file mapping that now lies
 * past the end of the file raises SIGBUS, which would kill the whole process (and lose the
 * profile). Mappings made here are registered; a SIGBUS inside one replaces the faulting page
 * by a page of zeros and marks the mapping as changed, so the access completes, the parser sees
 * zeros (just another corrupt input) and the caller can ask file_map__changed() and treat the
 * file as gone. A SIGBUS anywhere else keeps its previous disposition (default: the process
 * dies; under ASan: its report).
 *
 * Invariants:
 *  - at most FILE_MAP_CAP mappings are registered at once; past that file_map__open() fails
 *    with EMFILE rather than hand out an unguarded mapping;
 *  - the handler is async-signal-safe: it reads the registry lock-free and calls only mmap();
 *  - a mapping must be released with file_map__close() (never a bare munmap()).
 * Thread-safe: any thread may open, close and query.
 */
#ifndef STACKSCOPE_FILE_MAP_H
#define STACKSCOPE_FILE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILE_MAP_CAP 16384

/* Map size bytes of fd read-only, guarded. NULL with errno (mmap's, EMFILE when the registry is
 * full, EINVAL for size 0).
 */
const void *file_map__open(int fd, size_t size);
/* The same, optionally writable: a private copy-on-write view whose writes never reach the file
 * (for libelf, which decompresses sections in place).
 */
void *file_map__open_private(int fd, size_t size, bool writable);
/* Unregister and unmap. Accepts NULL. */
void file_map__close(const void *image, size_t size);
/* Whether a page of the mapping at image faulted past the end of its file (the file shrank)
 * since it was mapped.
 */
bool file_map__changed(const void *image);
/* How many pages were replaced by zeros in all, since the process started. */
uint64_t file_map__fault_cnt(void);
/* Guarded mappings currently open. */
size_t file_map__open_cnt(void);

#endif
