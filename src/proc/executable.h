/* The executable registry: every distinct mapped file (binary, shared library, the vDSO)
 * that any sampled process has executable mappings of, known by its file_id (proc/file_id.h:
 * from the file's device, inode, size, mtime and ctime, so two distinct files never share an
 * executable).
 *
 * Invariants:
 *  - one struct executable per file_id, shared by every process mapping the file; a (dev, ino)
 *    resolves to the same executable while its size, mtime and ctime stay the same (a file
 *    rewritten in place is identified again).
 *  - an executable keeps an open fd on its file from the moment it is first seen, so it can
 *    be read (symbols, unwind tables) after the process exited or the file was deleted.
 *  - executables are never freed before the registry (a recording symbolizes at its end),
 *    except by exe_registry__evict() for an owner that asks (ops->forget runs first);
 *    `live_maps` counts the live processes mapping the file: the first reference loads its
 *    unwind table (ops->load), and a file unreferenced for longer than the grace period
 *    given to exe_registry__collect() has it unloaded (ops->unload).
 *  - an executable is the file's identity, not what is read from it: its symbols and source
 *    lines are symbolize/file_symbols.h's, its unwind table's state unwind/unwind_maps.h's,
 *    each kept by file_id.
 * Pointers returned are owned by the registry and valid until exe_registry__free().
 */
#ifndef STACKSCOPE_EXECUTABLE_H
#define STACKSCOPE_EXECUTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>
#include <time.h>

#include "proc/maps.h"
#include "proc/proc_root.h"

struct elf_file;
struct debuginfo;

enum executable_kind {
	EXECUTABLE_FILE = 0,
	EXECUTABLE_VDSO,
};

/* What the file_id was computed from (fstat of the open fd). */
struct file_version {
	off_t size;
	struct timespec mtime, ctime;
};

struct executable {
	uint64_t file_id; /* proc/file_id.h: from device, inode, size, mtime, ctime */
	struct file_version version;
	enum executable_kind kind;
	char *path;         /* as mapped ("/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso]") */
	uint32_t dev_major; /* the inode as /proc/PID/maps names it when first seen (0: vDSO) */
	uint32_t dev_minor;
	uint64_t ino;
	char build_id[129];    /* lowercase hex, "" if none */
	char go_build_id[129]; /* a Go executable's build id (go/go_build_id.h), "" if none */
	char file_hash[33];    /* OTLP htlhash of the content (hex), "" if not computed */
	int fd;                /* -1 for the vDSO (image in memory) */
	struct proc_root root; /* the root of the process it was first seen in (containers) */
	uint64_t text_start;   /* lowest and highest ELF vaddr of executable PT_LOAD segments */
	uint64_t text_end;
	uint64_t text_offset; /* file offset of text_start */
	struct elf_file *elf; /* open for the executable's lifetime */
	uint32_t live_maps;
	uint64_t idle_since_ns;   /* when live_maps dropped to 0 (0: in use, or never used) */
	uint64_t unused_since_ns; /* the same, not cleared by an unload (for eviction) */
	bool loaded;              /* ops->load ran and ops->unload has not since */
};

struct exe_registry;

struct exe_registry_stats {
	uint64_t identified;       /* files opened and given their file_id */
	uint64_t changed_in_place; /* a known (dev, ino) whose content changed: identified again */
};

/* What to do when a file starts or stops being used by live processes (e.g. load and unload
 * its unwind table), and when the registry is about to free it (exe_registry__evict(): drop
 * what other layers keep under its file_id, symbols and lines). Any may be NULL. Not called by
 * exe_registry__free(): the owners of such state free it before the registry.
 */
struct exe_registry_ops {
	void (*load)(struct executable *exe, void *ctx);
	void (*unload)(struct executable *exe, void *ctx);
	void (*forget)(struct executable *exe, void *ctx);
	void *ctx;
};

struct exe_registry *exe_registry__new(const struct exe_registry_ops *ops);
void exe_registry__free(struct exe_registry *reg);

/* The executable mapped by `m` in process `pid` (opened through /proc/PID/map_files/, or
 * /proc/PID/root/PATH), registering it on first sight. NULL with errno: ESRCH (process or
 * mapping gone), ENOEXEC (not an ELF we can read), ENOMEM.
 * For "[vdso]" mappings, the vDSO image is read once from stackscope's own address space.
 */
struct executable *exe_registry__get(struct exe_registry *reg, pid_t pid, const struct proc_map *m);
struct executable *exe_registry__find(const struct exe_registry *reg, uint64_t file_id);
/* A live process maps exe / stopped mapping it. The first reference loads. */
void exe_registry__ref(struct exe_registry *reg, struct executable *exe);
void exe_registry__unref(struct exe_registry *reg, struct executable *exe, uint64_t now_ns);
/* Unload every executable idle for at least grace_ns; returns how many. */
size_t exe_registry__collect(struct exe_registry *reg, uint64_t now_ns, uint64_t grace_ns);
/* Forget (close, free) executables no live process has mapped for evict_ns, so a host that
 * keeps creating new binaries does not grow the registry forever. Only for owners that hold
 * no pointer to such an executable any more (process mappings reaped, profiles exported):
 * the agent, with evict_ns well above those lifetimes; `record` never evicts.
 */
size_t exe_registry__evict(struct exe_registry *reg, uint64_t now_ns, uint64_t evict_ns);
/* Give back the resident pages of every executable's file mapping (elf_file__drop_pages): the
 * tables and symbol indexes built from them are kept; what was read to build them no longer
 * counts in the resident set. A host running many large binaries (toolchains, Go programs)
 * grew the agent by the pages of each (e.g. 6.6 MiB of Go's `compile`).
 */
void exe_registry__drop_pages(struct exe_registry *reg);
size_t exe_registry__cnt(const struct exe_registry *reg);
void exe_registry__stats(const struct exe_registry *reg, struct exe_registry_stats *out);

/* ELF vaddr of file offset `offset` in exe (for load-bias computation); 0 or -ENOENT. */
int executable__offset_to_vaddr(const struct executable *exe, uint64_t offset, uint64_t *vaddr);
/* debuginfo__find_fd() for exe, as the process that mapped it sees the file system (its
 * container root while it runs, else the host). Same returns.
 */
struct debuginfo_result;
int executable__find_debuginfo(const struct executable *exe, struct debuginfo *di,
			       struct debuginfo_result *res);

#endif
