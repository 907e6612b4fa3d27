/* The BPF map "known_files": files userspace has identified, keyed as the kernel names them
 * ((dev, ino) of the inode), so eBPF can enter a new mapping of one at exec or mmap without
 * asking userspace (bpf/abi.h struct known_file, struct new_mappings).
 *
 * An executable is entered while it is loaded (mapped by a live process, plus the registry's
 * grace period) and removed when it is unloaded. The vDSO, not a file, is entered as (0, 0).
 */
#ifndef STACKSCOPE_KNOWN_FILES_H
#define STACKSCOPE_KNOWN_FILES_H

struct executable;

/* 0, -ENOENT (nothing to enter: no executable segment) or -errno from the map. flags: enum
 * known_file_flag.
 */
int known_files__add(int fd, const struct executable *exe, unsigned int flags);
void known_files__remove(int fd, const struct executable *exe);

#endif
