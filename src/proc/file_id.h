/* The identity of a mapped file: `file_id`, the 64-bit key under which the BPF maps, the sample
 * records, the executable registry and the on-disk table cache know a file.
 *
 * A file's id is derived from what the kernel says of the open file, not from its bytes: the
 * first 8 bytes of the SHA-256 of (device, inode, size, mtime, ctime). Two distinct files (two
 * inodes) never share an id, so never a table or a cache entry, whatever their bytes (the
 * earlier hash of size + first and last 4 KiB gave two binaries differing inside .eh_frame one
 * id); a file rewritten in place gets a new id (its ctime changes, and users cannot set
 * ctime). The same file has the same id in every process and container that maps it (by any
 * path, bind mount or hard link) and across runs while it is unchanged, so one table serves
 * them all and the on-disk cache finds it. Computing it reads no content: a new process's
 * mappings reach eBPF without waiting for its libraries to be read. Never 0.
 */
#ifndef STACKSCOPE_FILE_ID_H
#define STACKSCOPE_FILE_ID_H

#include <stddef.h>
#include <stdint.h>

/* The id of the file open at fd (fstat): 0 or -errno. */
int file_id__of_fd(int fd, uint64_t *id);
/* The id of an in-memory image that is no file (the vDSO): a hash of its bytes. */
uint64_t file_id__of_mem(const void *image, size_t size);

/* The OTLP htlhash of the open regular file at fd (the reference agent's file id: SHA-256 of
 * its first and last 4 KiB and big-endian size, first 16 bytes): 32 lowercase hex chars + NUL
 * into out. 0 or -errno (-EIO on a short read). Only an export label: it does not tell all
 * distinct files apart (file_id does).
 */
int file_id__htlhash(int fd, char out[33]);

#endif
