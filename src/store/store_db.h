/* Internals shared by the store's files (store.c writes, store_query.c reads, store_gc.c
 * collects): the open database, its prepared statements, and the varint blobs the frames,
 * stacks and label sets are stored as. Not part of the store's interface.
 */
#ifndef STACKSCOPE_STORE_DB_H
#define STACKSCOPE_STORE_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "store/store.h"

/* Largest blob (frames of a stack, lines of a frame) a row may hold: 10 bytes per varint. */
#define STORE_BLOB_CAP (4096 * 10)

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
};

static inline void store_blob__put(struct store_blob *b, uint64_t v)
{
	if (b->len + 10 > sizeof(b->buf)) {
		b->overflow = true;
		return;
	}
	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		b->buf[b->len++] = byte | (v ? 0x80 : 0);
	} while (v);
}

/* Reads one varint at *pos of buf[0..len); false at the end or on a malformed one. */
static inline bool store_blob__get(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*pos < len && shift < 64) {
		uint8_t byte = buf[(*pos)++];

		*v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/* sqlite result code -> -errno: corrupt or not-a-database files are -EBADMSG. */
int store__errno(int rc);

/* Runs sql (no results). 0 or -errno. */
int store__exec(struct store *st, const char *sql);

/* Deletes dictionary rows no sample refers to any more. 0 or -errno. */
int store__collect(struct store *st);

#endif
