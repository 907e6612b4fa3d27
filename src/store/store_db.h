/* The store's database layer, below its other files (store.c writes, store_query.c reads,
 * store_gc.c collects; store.c alone calls store_gc.c): the open database, sqlite result codes
 * as -errno, and the varint blobs the frames, stacks and label sets are stored as. Not part of
 * the store's interface: its names carry the store_db__ prefix, the store's own store__.
 */
#ifndef STACKSCOPE_STORE_DB_H
#define STACKSCOPE_STORE_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "formats/varint.h"
#include "store/store.h"
#include "store/store_dict_cache.h"

/* Largest blob (frames of a stack, lines of a frame) a row may hold: 10 bytes per varint. */
#define STORE_BLOB_CAP (4096 * VARINT_MAX_SZ)

/* A growing varint blob of at most STORE_BLOB_CAP bytes. */
struct store_blob {
	uint8_t buf[STORE_BLOB_CAP];
	size_t len;
	bool overflow;
};

struct store {
	sqlite3 *db;
	struct store_opts opts;
	char *path;
	struct store_stats stats;
	uint64_t drops_since_gc;
	/* writer caches, for one write: profile pointers / ids -> store ids */
	struct u64_map string_ids;
	struct u64_map mapping_ids;
	struct u64_map frame_ids;
	struct store_blob blob_lines; /* a frame's lines being encoded */
	struct store_blob blob_key;   /* a stack's frames or a label set being encoded */
	/* writer cache across writes: dictionary rows by content (store_dict_cache.h), valid
	 * while no other connection has committed since data_version was read
	 */
	struct store_dict_cache dict_cache;
	int64_t data_version;
	uint8_t dict_key[STORE_DICT_KEY_MAX]; /* a row's key being encoded */
};

/* Appends v to b; a value that would not fit sets b->overflow instead. */
static inline void store_db__blob_put(struct store_blob *b, uint64_t v)
{
	if (b->len + VARINT_MAX_SZ > sizeof(b->buf)) {
		b->overflow = true;
		return;
	}
	b->len += varint__put(b->buf + b->len, v);
}

/* Reads one varint at *pos of buf[0..len); false at the end or on a malformed (cut or
 * overlong) one.
 */
static inline bool store_db__blob_get(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	return varint__get(buf, len, pos, v) == 0;
}

/* sqlite result code -> -errno: corrupt or not-a-database files are -EBADMSG. */
int store_db__errno(int rc);

/* The same for a result of st's connection, made precise by the system's errno behind an I/O
 * error: a full disk (-ENOSPC, -EDQUOT), a read-only file system (-EROFS), no permission
 * (-EACCES), no memory (-ENOMEM), rather than -EIO.
 */
int store_db__error(struct store *st, int rc);

/* "what: why" into err: the system's reason (strerror) behind an I/O error, else sqlite's. */
void store_db__describe(struct store *st, int rc, const char *what, char *err, size_t err_sz);

/* Runs sql (no results). 0 or -errno (store_db__error()). */
int store_db__exec(struct store *st, const char *sql);

#endif
