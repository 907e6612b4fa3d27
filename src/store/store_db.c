/* The store's database layer: sqlite result codes as -errno and running plain SQL, for the
 * files above it (store.c, store_query.c, store_gc.c). See store_db.h.
 */
#include <errno.h>

#include "store/store_db.h"

int store_db__errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_FORMAT:
		return -EBADMSG;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}

int store_db__exec(struct store *st, const char *sql)
{
	return store_db__errno(sqlite3_exec(st->db, sql, NULL, NULL, NULL));
}
