/* Finding the DWARF (or at least the symbols) of an executable, the way debuggers do.
 *
 * Order, first hit wins:
 *  1. the file itself, if it has .debug_info;
 *  2. <root>/usr/lib/debug/.build-id/xx/yyyy.debug, then DIR/.build-id/xx/yyyy.debug for every
 *     extra debug dir (root is "" for the host, "/proc/PID/root" for a process in a container);
 *  3. the .gnu_debuglink name in the executable's folder, its .debug/ subfolder,
 *     <root>/usr/lib/debug/<folder>/ and every extra debug dir (DIR/name, DIR/<folder>/name),
 *     accepted only with the right CRC32;
 *  4. debuginfod (elfutils' libdebuginfod; servers from DEBUGINFOD_URLS, its own cache);
 *  5. MiniDebugInfo: the xz-compressed ELF in .gnu_debugdata (symbols only).
 * A candidate whose GNU build id differs from the executable's is rejected and counted.
 *
 * debuginfod never runs on the caller's thread: a lookup that needs it queues the build id for
 * one worker thread and returns -EAGAIN ("pending": the frame goes out as module+offset and is
 * asked for again later). Results, including misses (a negative cache with a TTL), are kept in
 * a table of cache_cap entries fixed at creation; the oldest settled entry is evicted. The
 * worker aborts a fetch that runs past debuginfod_timeout_s.
 *
 * Thread-safety: debuginfo__find() and debuginfo__wait() may be called from any one thread at
 * a time; the worker is internal.
 */
#ifndef STACKSCOPE_DEBUGINFO_H
#define STACKSCOPE_DEBUGINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfo;

struct debuginfo_opts {
	const char *const
		*debug_dirs; /* extra folders (--debug-dir), searched after /usr/lib/debug */
	size_t debug_dir_cnt;
	bool no_system_dirs;      /* skip <root>/usr/lib/debug (tests) */
	bool debuginfod;          /* ask debuginfod (when DEBUGINFOD_URLS is set) */
	int debuginfod_timeout_s; /* whole fetch; 0 = 30 */
	int negative_ttl_s;       /* how long a miss is remembered; 0 = 600 */
	size_t cache_cap;         /* debuginfod entries kept (pending, found, missing); 0 = 1024 */
};

enum debuginfo_source {
	DEBUGINFO_SELF = 1,
	DEBUGINFO_BUILD_ID,
	DEBUGINFO_DEBUGLINK,
	DEBUGINFO_DEBUGINFOD,
	DEBUGINFO_MINIDEBUGINFO,
};

struct debuginfo_result {
	enum debuginfo_source source;
	char path[PATH_MAX]; /* where it was found, for messages (MINIDEBUGINFO: the executable) */
	int fd;              /* the file, open (owned by the result); -1 for MINIDEBUGINFO */
	void *image;         /* MINIDEBUGINFO only: the decompressed ELF, owned by the result */
	size_t image_sz;
};

struct debuginfo_stats {
	uint64_t found[DEBUGINFO_MINIDEBUGINFO + 1]; /* by source */
	uint64_t not_found;
	uint64_t build_id_mismatch; /* candidates rejected: another build */
	uint64_t crc_mismatch;      /* debuglink candidates rejected: wrong CRC */
	uint64_t pending;           /* lookups answered -EAGAIN */
	uint64_t debuginfod_queries, debuginfod_found, debuginfod_failed;
	uint64_t negative_hits; /* misses answered from the negative cache */
	uint64_t evictions;
	uint64_t corrupt; /* unreadable executables or .gnu_debugdata */
};

/* NULL with errno (ENOMEM, or the error starting the worker). opts may be NULL. */
struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts);
/* Stops the worker (aborting a running fetch) and frees everything. Accepts NULL. */
void debuginfo__free(struct debuginfo *di);

/* Where the debug info of the executable at path lives. root: "" or NULL for the host, else
 * the prefix under which the process sees its files: every candidate under it is resolved
 * inside it (base/safe_open.h), and only regular files are ever opened. The result holds the
 * debug file open (out->fd), so what was checked (build id, CRC) is what is read. Returns 0 (out filled; release it with
 * debuginfo_result__release()), -ENOENT (nothing anywhere), -EAGAIN (a debuginfod fetch is
 * running: ask again later), -ENOEXEC (path is not a readable ELF), -ENOMEM.
 */
int debuginfo__find(struct debuginfo *di, const char *path, const char *root,
		    struct debuginfo_result *out);
/* The same for the executable already open at exe_fd (not taken); path is where it is, as
 * root + the path the process sees (used for its folder: .gnu_debuglink candidates).
 */
int debuginfo__find_fd(struct debuginfo *di, int exe_fd, const char *path, const char *root,
		       struct debuginfo_result *out);

/* The same for a build id alone (lowercase hex), when the executable is not at hand: the
 * .build-id trees (DIR/.build-id/xx/yyyy.debug, then DIR/.build-id/xx/yyyy, the binary
 * itself) and debuginfod. Same returns as debuginfo__find().
 */
int debuginfo__find_build_id(struct debuginfo *di, const char *build_id, const char *root,
			     struct debuginfo_result *out);

/* Waits until no debuginfod fetch is queued or running, or timeout_ms passed. 0 or -ETIMEDOUT. */
int debuginfo__wait(struct debuginfo *di, int timeout_ms);

void debuginfo_result__release(struct debuginfo_result *res);
void debuginfo__stats(struct debuginfo *di, struct debuginfo_stats *out);

struct elf_file;
/* ef's MiniDebugInfo: .gnu_debugdata xz-decompressed into *image (malloc'ed, the caller frees;
 * at most 256 MiB). 0, -ENOENT (no such section), -ENOEXEC (corrupt), -EFBIG, -ENOMEM.
 */
int debuginfo__minidebuginfo_image(struct elf_file *ef, void **image, size_t *image_sz);

/* CRC32 (the .gnu_debuglink one, zlib's) of a whole file; 0 or -errno. */
int debuginfo__file_crc(const char *path, uint32_t *crc);

#endif
