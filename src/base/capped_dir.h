/* A folder of our own files kept under a byte cap (the agent's pprof folder, the unwind-table
 * cache): the oldest files go first.
 *
 * Only regular files whose names start with `prefix` and end with `suffix` count; symlinks and
 * everything else are never touched. Oldest means least recently modified (then by name).
 */
#ifndef STACKSCOPE_CAPPED_DIR_H
#define STACKSCOPE_CAPPED_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Delete the oldest matching files of the folder open at dir_fd until those left total at most
 * max_bytes; with keep_newest, never the newest one (even alone over the cap). Returns how many
 * were deleted. prefix may be "" (any).
 */
size_t capped_dir__trim(int dir_fd, const char *prefix, const char *suffix, uint64_t max_bytes,
			bool keep_newest);
/* capped_dir__trim(), and the bytes of the matching files left in *left_bytes. */
size_t capped_dir__trim_left(int dir_fd, const char *prefix, const char *suffix, uint64_t max_bytes,
			     bool keep_newest, uint64_t *left_bytes);

#endif
