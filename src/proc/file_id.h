/* The identity of a mapped file's content: `file_id`, the 64-bit key under which the BPF maps,
 * the sample records, the executable registry and the on-disk table cache know a file.
 *
 * Two files share a file_id only if their contents are equal: it is the first 8 bytes of the
 * SHA-256 of the file's size and every byte of it (a forged file would need a second preimage
 * of 64 bits). Equal files get the same id in every process, container and run, so one unwind
 * table serves them all. Computing it reads the whole file (through the page cache, ~1.7 GB/s
 * here), which the executable registry does once per (dev, ino, size, mtime, ctime).
 * Never 0 (0 means "no file" in the BPF records).
 */
#ifndef STACKSCOPE_FILE_ID_H
#define STACKSCOPE_FILE_ID_H

#include <stddef.h>
#include <stdint.h>

/* The id of the file open at fd, read from offset 0 to its end with pread (the fd's offset is
 * not moved): 0 or -errno. A file that changes while being read gets the id of the bytes read.
 */
int file_id__of_fd(int fd, uint64_t *id);
/* The id of an in-memory image (the vDSO, tests): equal to file_id__of_fd() of a file holding
 * the same bytes.
 */
uint64_t file_id__of_mem(const void *image, size_t size);

/* The OTLP htlhash of the open regular file at fd (the reference agent's file id: SHA-256 of
 * its first and last 4 KiB and big-endian size, first 16 bytes): 32 lowercase hex chars + NUL
 * into out. 0 or -errno (-EIO on a short read). Only an export label: it does not tell all
 * distinct files apart (file_id does).
 */
int file_id__htlhash(int fd, char out[33]);

#endif
