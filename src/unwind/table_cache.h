/* On-disk cache of unwind tables, keyed by file_id, so a restart does not re-parse CFI.
 *
 * One file per table, DIR/<file_id as 16 hex digits>.unwind: a header (magic, format
 * version, file_id, row count, CRC-32 of the rows) then the rows. Entries are written to a
 * temporary name and renamed, so a reader never sees half a file; a file that fails any
 * check (size, magic, version, id, CRC, row order) is deleted and counted, never used.
 * The folder is kept under max_bytes by deleting the least recently used entries (reads
 * refresh an entry's mtime): walked after a store that takes what we know of it (its entries
 * at the last walk plus our stores since) past the cap, else every 16 stores, so what another
 * process stores there is counted by then. Nothing here is required: every failure degrades
 * to a rebuild.
 *
 * The folder is trusted only when no one else can write into it (created 0700; an existing
 * one must be ours, not a symlink, not writable by group or others: output_file__open_dir())
 * and every entry is opened, written (base/output_file.h: O_EXCL temporaries, renamed) and
 * deleted relative to its descriptor, never through a symlink.
 */
#ifndef STACKSCOPE_TABLE_CACHE_H
#define STACKSCOPE_TABLE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

struct unwind_table;

struct table_cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t corrupt;  /* entries rejected and deleted */
	uint64_t outdated; /* entries of another format version, deleted (rebuilt) */
	uint64_t stores;
	uint64_t evicted;
	uint64_t store_failures;
};

struct table_cache;

/* NULL with errno when dir cannot be created or written, is a symlink (ELOOP), or is not
 * ours alone (EACCES): the caller warns and goes on without a cache.
 */
struct table_cache *table_cache__new(const char *dir, uint64_t max_bytes);
void table_cache__free(struct table_cache *c);

/* 0 and *out (caller frees), -ENOENT on a miss, -EBADMSG for a corrupt entry (deleted). The
 * entry is checked (CRC, order, kinds) a window of rows at a time and *out keeps it open and
 * reads its rows from it again (unwind_table__from_file()): never whole in memory.
 */
int table_cache__load(struct table_cache *c, uint64_t file_id, struct unwind_table **out);
/* Whether an entry for file_id exists (not checked: table_cache__load() may still reject it). */
bool table_cache__has(const struct table_cache *c, uint64_t file_id);
/* Store t for file_id (best effort), read a window of rows at a time; 0 or -errno. */
int table_cache__store(struct table_cache *c, uint64_t file_id, const struct unwind_table *t);
const struct table_cache_stats *table_cache__stats(const struct table_cache *c);

#endif
