/* Collecting the store's dictionaries: after intervals are dropped, the stacks, frames,
 * mappings, processes, threads, label sets and strings no remaining sample reaches are
 * deleted, so the file's size follows what it holds. References inside blobs (a stack's
 * frames, a frame's function and file names, a label set's strings) are gathered in C into
 * temporary tables; the rest is SQL. Runs inside the writer's transaction. Called by store.c
 * only; uses the database layer (store_db.h) and nothing of store.c.
 */
#include <errno.h>

#include "store/store_db.h"
#include "store/store_gc.h"

/* Adds every varint of column 0 of sql's rows to temp table `into` (every value when
 * stride is 1; values 0 and 1 of each triple when stride is 3; all of each pair when 2).
 */
static int gather_blob_ids(struct store *st, const char *sql, const char *insert_sql, int stride)
{
	sqlite3_stmt *q = NULL, *ins = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(st->db, insert_sql, -1, &ins, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const uint8_t *b = sqlite3_column_blob(q, 0);
		size_t len = (size_t)sqlite3_column_bytes(q, 0), pos = 0, k = 0;
		uint64_t v;

		rc = SQLITE_OK;
		while (rc == SQLITE_OK && store_db__blob_get(b, len, &pos, &v)) {
			bool take = stride != 3 || k % 3 != 2;

			k++;
			if (!take || !v)
				continue;
			sqlite3_reset(ins);
			sqlite3_bind_int64(ins, 1, (int64_t)v);
			rc = sqlite3_step(ins);
			if (rc == SQLITE_DONE)
				rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(q);
	sqlite3_finalize(ins);
	return rc == SQLITE_DONE ? 0 : store_db__error(st, rc) ?: -EIO;
}

int store_gc__collect(struct store *st)
{
	int err;

	err = store_db__exec(st,
			     "DELETE FROM stacks WHERE id NOT IN (SELECT stack FROM samples);"
			     "DELETE FROM processes WHERE id NOT IN (SELECT process FROM samples);"
			     "DELETE FROM threads WHERE id NOT IN (SELECT thread FROM samples);"
			     "DELETE FROM label_sets WHERE id NOT IN (SELECT labels FROM samples);"
			     "CREATE TEMP TABLE IF NOT EXISTS used_frames(id INTEGER PRIMARY KEY);"
			     "CREATE TEMP TABLE IF NOT EXISTS used_strings(id INTEGER PRIMARY KEY);"
			     "DELETE FROM used_frames; DELETE FROM used_strings;");
	err = err
		      ?: gather_blob_ids(st, "SELECT frames FROM stacks",
					 "INSERT OR IGNORE INTO used_frames(id) VALUES(?1)", 1);
	err = err
		      ?: store_db__exec(st,
					"DELETE FROM frames WHERE id NOT IN (SELECT id FROM "
					"used_frames);"
					"DELETE FROM mappings WHERE id NOT IN (SELECT mapping FROM "
					"frames);");
	err = err
		      ?: gather_blob_ids(st, "SELECT lines FROM frames",
					 "INSERT OR IGNORE INTO used_strings(id) VALUES(?1)", 3);
	err = err
		      ?: gather_blob_ids(st, "SELECT labels FROM label_sets",
					 "INSERT OR IGNORE INTO used_strings(id) VALUES(?1)", 2);
	err = err
		      ?: store_db__exec(
				 st,
				 "INSERT OR IGNORE INTO used_strings(id) SELECT runtime FROM frames "
				 "UNION SELECT path FROM mappings UNION SELECT build_id FROM mappings "
				 "UNION SELECT file_hash FROM mappings UNION SELECT go_build_id FROM "
				 "mappings UNION SELECT comm FROM processes UNION SELECT exe FROM "
				 "processes UNION SELECT container FROM processes UNION SELECT name FROM "
				 "threads;"
				 "DELETE FROM strings WHERE id NOT IN (SELECT id FROM used_strings);"
				 "DELETE FROM used_frames; DELETE FROM used_strings;");
	return err;
}
