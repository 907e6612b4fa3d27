/* The store's database layer: sqlite result codes as -errno and running plain SQL, for the
 * files above it (store.c, store_query.c, store_gc.c). See store_db.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/* The errno behind an I/O-class result of st's connection that says more than -EIO, or 0. */
static int system_errno(struct store *st, int rc)
{
	int e;

	switch (rc & 0xff) {
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_FULL:
	case SQLITE_PERM:
		break;
	default:
		return 0;
	}
	e = st->db ? sqlite3_system_errno(st->db) : 0;
	switch (e) {
	case ENOSPC:
	case EDQUOT:
	case EROFS:
	case EACCES:
	case EPERM:
	case ENOMEM:
	case EFBIG:
		return e;
	default:
		return 0;
	}
}

int store_db__error(struct store *st, int rc)
{
	int e = system_errno(st, rc);

	return e ? -e : store_db__errno(rc);
}

void store_db__describe(struct store *st, int rc, const char *what, char *err, size_t err_sz)
{
	int e = system_errno(st, rc);

	if (!e && (rc & 0xff) == SQLITE_FULL) /* no max_page_count is set: the disk is full */
		e = ENOSPC;
	if (e)
		snprintf(err, err_sz, "%s: %s", what, strerror(e));
	else
		snprintf(err, err_sz, "%s: %s", what,
			 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
}

int store_db__exec(struct store *st, const char *sql)
{
	return store_db__error(st, sqlite3_exec(st->db, sql, NULL, NULL, NULL));
}
