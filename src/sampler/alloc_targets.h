/* Allocator discovery for `--alloc`: which files serve a process's allocations, and which of
 * the allocator functions each one defines.
 *
 * A candidate is any ELF file a process runs with: its executable (a static binary, or one
 * linking its own malloc; python with a static libpython) and every library it maps (-p, or
 * stackscope's own for a COMMAND) or will map (a COMMAND: the dynamic loader's list of its
 * executable, with the LD_PRELOAD and LD_LIBRARY_PATH it will run with, `env VAR=...` and `#!`
 * interpreters followed one level). Each candidate is read for the defined function symbols
 * (.dynsym and .symtab) of the malloc family (glibc, jemalloc's mallocx/rallocx/sdallocx,
 * tcmalloc's operator new/delete) and of pymalloc (PyObject_Malloc..., PyMem_Malloc...); a file
 * defining none is dropped. Every file kept is probed: the one the dynamic linker binds first
 * (an LD_PRELOADed allocator before libc) is the one called, the others cost nothing.
 * Aliases (two names at one address, as tcmalloc's) are probed once.
 *
 * The set is bounded (ALLOC_TARGETS_CAP files; more are counted in dropped) and deduplicated
 * by device and inode (one libc for every process of a container).
 */
#ifndef STACKSCOPE_SAMPLER_ALLOC_TARGETS_H
#define STACKSCOPE_SAMPLER_ALLOC_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ALLOC_TARGETS_CAP 64 /* a process's targets are a 64-bit mask of a set */
#define ALLOC_TARGET_PATH_SZ (4096 + 64)

/* One function to probe: the program it goes to and the function it stands for. */
enum alloc_probe_prog {
	ALLOC_PROG_MALLOC = 0, /* (size) */
	ALLOC_PROG_CALLOC,     /* (n, size) */
	ALLOC_PROG_REALLOC,    /* (p, size) */
	ALLOC_PROG_POSIX_MEMALIGN,
	ALLOC_PROG_ALIGNED, /* (align, size) */
	ALLOC_PROG_FREE,    /* (p) */
};

struct alloc_probe {
	const char *name;
	enum alloc_probe_prog prog;
	uint32_t fn;      /* enum alloc_fn: the frame's name (the attach cookie) */
	bool malloc_only; /* probed in a file that defines malloc only (not libstdc++'s new) */
};

/* The probes known, in a fixed order (a target's mask indexes it). */
extern const struct alloc_probe alloc_probes[];
extern const size_t alloc_probe_cnt;

struct alloc_target {
	char path[ALLOC_TARGET_PATH_SZ]; /* through /proc/PID/root for another process's file */
	dev_t dev;
	ino_t ino;
	uint64_t mask; /* the probes it defines (aliases: the first name only) */
};

#define ALLOC_TARGETS_MISSES 64

struct alloc_targets {
	struct alloc_target t[ALLOC_TARGETS_CAP];
	size_t cnt;
	struct { /* the last files read that define no allocator function: not read again */
		dev_t dev;
		ino_t ino;
	} misses[ALLOC_TARGETS_MISSES];
	size_t miss_cnt;   /* entries written in all (the next: miss_cnt % ALLOC_TARGETS_MISSES) */
	size_t dropped;    /* past ALLOC_TARGETS_CAP */
	size_t unreadable; /* candidates whose symbols could not be read */
	bool any_malloc_seen; /* a candidate of the last process or command added defines malloc
			       * (else: no symbols for its allocator) */
};

/* The allocator files of process pid (0: stackscope itself): its executable and what it maps.
 * all_files false: the executable, libc and the files whose names say allocator (jemalloc,
 * tcmalloc, mimalloc, libpython) only (system-wide: cheaper). mapped (or NULL): the bits of
 * the targets pid maps, new or already in ts, are set in it (ALLOC_TARGETS_CAP is 64). Returns
 * how many targets were added (>= 0) or -errno (the process is gone).
 */
int alloc_targets__add_pid(struct alloc_targets *ts, pid_t pid, bool all_files, uint64_t *mapped);

/* The allocator files COMMAND (argv, as execvp runs it) will run with. Returns how many targets
 * were added (>= 0) or -errno (logged at debug: the command cannot be resolved).
 */
int alloc_targets__add_command(struct alloc_targets *ts, char *const argv[]);

/* One file: 1 (added: it defines allocator functions), 0 (nothing to probe, already known,
 * unreadable: counted, or the set is full: counted).
 */
int alloc_targets__add_file(struct alloc_targets *ts, const char *path);

/* The target serving malloc first in the order added (NULL: none). Borrowed from ts. */
const struct alloc_target *alloc_targets__malloc_owner(const struct alloc_targets *ts);

#endif
