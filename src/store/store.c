/* The embedded store: opening, schema, writing intervals, retention. See store.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "profile/mem_types.h"
#include "profile/profile.h"
#include "store/store_db.h"
#include "store/store_gc.h"

/* How long a store waits for another connection's lock (a writer's checkpoint, a co-writer's
 * transaction) unless store_opts.busy_ms says otherwise.
 */
#define STORE_BUSY_MS 5000

static const char SCHEMA[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS strings(id INTEGER PRIMARY KEY, s TEXT NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS mappings(id INTEGER PRIMARY KEY, path INTEGER NOT NULL,"
	" build_id INTEGER NOT NULL, start INTEGER NOT NULL, limit_ INTEGER NOT NULL,"
	" file_offset INTEGER NOT NULL, file_hash INTEGER NOT NULL, go_build_id INTEGER NOT NULL,"
	" UNIQUE(path, build_id, start, limit_, file_offset, file_hash, go_build_id));"
	"CREATE TABLE IF NOT EXISTS frames(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
	" mapping INTEGER NOT NULL, address INTEGER NOT NULL, runtime INTEGER NOT NULL,"
	" call_site INTEGER NOT NULL, lines BLOB NOT NULL,"
	" UNIQUE(kind, mapping, address, runtime, call_site, lines));"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, frames BLOB NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS label_sets(id INTEGER PRIMARY KEY, labels BLOB NOT NULL UNIQUE);"
	"CREATE TABLE IF NOT EXISTS processes(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL,"
	" comm INTEGER NOT NULL, exe INTEGER NOT NULL, container INTEGER NOT NULL,"
	" UNIQUE(pid, comm, exe, container));"
	"CREATE TABLE IF NOT EXISTS threads(id INTEGER PRIMARY KEY, tid INTEGER NOT NULL,"
	" name INTEGER NOT NULL, UNIQUE(tid, name));"
	"CREATE TABLE IF NOT EXISTS sample_types(id INTEGER PRIMARY KEY, type TEXT NOT NULL,"
	" unit TEXT NOT NULL, UNIQUE(type, unit));"
	"CREATE TABLE IF NOT EXISTS intervals(id INTEGER PRIMARY KEY, start_ns INTEGER NOT NULL,"
	" end_ns INTEGER NOT NULL, period_ns INTEGER NOT NULL, total INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS intervals_by_start ON intervals(start_ns);"
	"CREATE TABLE IF NOT EXISTS samples(interval INTEGER NOT NULL, type INTEGER NOT NULL,"
	" stack INTEGER NOT NULL, process INTEGER NOT NULL, thread INTEGER NOT NULL,"
	" labels INTEGER NOT NULL, value INTEGER NOT NULL,"
	" PRIMARY KEY(interval, type, stack, process, thread, labels)) WITHOUT ROWID;";

/* The dictionaries: a row per distinct content, looked up by all its columns. */
enum store_dict {
	DICT_STRING,
	DICT_MAPPING,
	DICT_FRAME,
	DICT_STACK,
	DICT_LABELS,
	DICT_PROCESS,
	DICT_THREAD,
	DICT_SAMPLE_TYPE,
	DICT_CNT,
};

static const struct {
	const char *table;
	const char *cols[7];
} dicts[DICT_CNT] = {
	[DICT_STRING] = { "strings", { "s" } },
	[DICT_MAPPING] = { "mappings",
			   { "path", "build_id", "start", "limit_", "file_offset", "file_hash",
			     "go_build_id" } },
	[DICT_FRAME] = { "frames",
			 { "kind", "mapping", "address", "runtime", "call_site", "lines" } },
	[DICT_STACK] = { "stacks", { "frames" } },
	[DICT_LABELS] = { "label_sets", { "labels" } },
	[DICT_PROCESS] = { "processes", { "pid", "comm", "exe", "container" } },
	[DICT_THREAD] = { "threads", { "tid", "name" } },
	[DICT_SAMPLE_TYPE] = { "sample_types", { "type", "unit" } },
};

/* One column value of a dictionary row. */
struct store_col {
	enum { COL_INT, COL_TEXT, COL_BLOB } type;
	int64_t i;
	const void *p;
	size_t len;
};

struct store_stmts {
	sqlite3_stmt *find[DICT_CNT];
	sqlite3_stmt *add[DICT_CNT];
	sqlite3_stmt *add_interval;
	sqlite3_stmt *add_sample;
};

/* Statements live beside the store (prepared once per writer). */
static struct store_stmts *stmts_of(struct store *st);

/* 0, or -EBADMSG when the file is not an intact SQLite database. */
static int check_integrity(struct store *st, char *err, size_t err_sz)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check(1)", -1, &q, NULL);
	int ret = 0;

	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *res = (const char *)sqlite3_column_text(q, 0);

		if (!res || strcmp(res, "ok")) {
			snprintf(err, err_sz, "the store is corrupt: %s", res ? res : "?");
			ret = -EBADMSG;
		}
	} else {
		store_db__describe(st, rc, "cannot read the store", err, err_sz);
		ret = store_db__error(st, rc) ?: -EIO;
	}
	sqlite3_finalize(q);
	return ret;
}

/* 0 for a store of this schema version; -EPROTO with err for another version or for a
 * database that is not a store (another program's: it is left as it is), or -errno.
 */
static int check_version(struct store *st, char *err, size_t err_sz)
{
	sqlite3_stmt *q = NULL;
	int rc, ret = 0;

	rc = sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key='schema_version'", -1, &q,
				NULL);
	if ((rc & 0xff) == SQLITE_ERROR) { /* no such table (or columns) */
		snprintf(err, err_sz,
			 "not a stackscope store: an SQLite database of another program (%s), left "
			 "as it is",
			 sqlite3_errmsg(st->db));
		return -EPROTO;
	}
	if (rc != SQLITE_OK) {
		store_db__describe(st, rc, "cannot read the store", err, err_sz);
		return store_db__error(st, rc) ?: -EIO;
	}
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && sqlite3_column_int64(q, 0) != STORE_SCHEMA_VERSION) {
		snprintf(err, err_sz, "a store of schema version %lld (this stackscope reads %d)",
			 (long long)sqlite3_column_int64(q, 0), STORE_SCHEMA_VERSION);
		ret = -EPROTO;
	} else if (rc == SQLITE_DONE) {
		snprintf(err, err_sz,
			 "not a stackscope store: an SQLite database of another program (its meta "
			 "table has no schema version), left as it is");
		ret = -EPROTO;
	} else if (rc != SQLITE_ROW) {
		store_db__describe(st, rc, "cannot read the store", err, err_sz);
		ret = store_db__error(st, rc) ?: -EIO;
	}
	sqlite3_finalize(q);
	return ret;
}

/* Whether the database holds no table (a file just made, or one whose making failed, e.g. on
 * a full disk): 1, 0, or -errno with err (-EBADMSG: not a database).
 */
static int is_empty(struct store *st, char *err, size_t err_sz)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_master", -1, &q, NULL);
	int ret;

	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		ret = sqlite3_column_int64(q, 0) == 0;
	} else {
		store_db__describe(st, rc, "cannot read the store", err, err_sz);
		ret = store_db__error(st, rc) ?: -EIO;
	}
	sqlite3_finalize(q);
	return ret;
}

static int create_schema(struct store *st, char *err, size_t err_sz)
{
	char sql[128];
	int err2;

	/* auto_vacuum only takes effect before the first table: the file can shrink after drops */
	err2 = store_db__exec(st, "PRAGMA auto_vacuum=INCREMENTAL");
	err2 = err2 ?: store_db__exec(st, "BEGIN IMMEDIATE");
	err2 = err2 ?: store_db__exec(st, SCHEMA);
	snprintf(sql, sizeof(sql),
		 "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', %d)",
		 STORE_SCHEMA_VERSION);
	err2 = err2 ?: store_db__exec(st, sql);
	err2 = err2 ?: store_db__exec(st, "COMMIT");
	if (err2) {
		store_db__describe(st, sqlite3_errcode(st->db), "cannot create the store's tables",
				   err, err_sz);
		store_db__exec(st, "ROLLBACK");
	}
	return err2;
}

static int prepare_writer(struct store *st)
{
	struct store_stmts *s = stmts_of(st);
	char sql[512];
	int d, rc = SQLITE_OK;

	for (d = 0; d < DICT_CNT && rc == SQLITE_OK; d++) {
		size_t n = 0, m = 0, c;

		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "SELECT id FROM %s WHERE ",
				      dicts[d].table);
		for (c = 0; c < 7 && dicts[d].cols[c]; c++)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s=?%zu",
					      c ? " AND " : "", dicts[d].cols[c], c + 1);
		rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->find[d],
					NULL);
		if (rc != SQLITE_OK)
			break;
		m += (size_t)snprintf(sql + m, sizeof(sql) - m, "INSERT INTO %s(", dicts[d].table);
		for (c = 0; c < 7 && dicts[d].cols[c]; c++)
			m += (size_t)snprintf(sql + m, sizeof(sql) - m, "%s%s", c ? "," : "",
					      dicts[d].cols[c]);
		m += (size_t)snprintf(sql + m, sizeof(sql) - m, ") VALUES(");
		for (c = 0; c < 7 && dicts[d].cols[c]; c++)
			m += (size_t)snprintf(sql + m, sizeof(sql) - m, "%s?%zu", c ? "," : "",
					      c + 1);
		snprintf(sql + m, sizeof(sql) - m, ")");
		rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->add[d],
					NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(st->db,
					"INSERT INTO intervals(start_ns, end_ns, period_ns, total) "
					"VALUES(?1, ?2, ?3, ?4)",
					-1, SQLITE_PREPARE_PERSISTENT, &s->add_interval, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
			st->db,
			"INSERT INTO samples(interval, type, stack, process, thread, labels, value) "
			"VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET value = "
			"CASE WHEN value > 9223372036854775807 - excluded.value "
			"THEN 9223372036854775807 ELSE value + excluded.value END",
			-1, SQLITE_PREPARE_PERSISTENT, &s->add_sample, NULL);
	return store_db__errno(rc);
}

/* The statements follow the store in one allocation. */
struct store_with_stmts {
	struct store st;
	struct store_stmts stmts;
};

static struct store_stmts *stmts_of(struct store *st)
{
	return &((struct store_with_stmts *)st)->stmts;
}

/* Every statement of the writer back to its start (none holds a snapshot any more). */
static void reset_stmts(struct store *st)
{
	struct store_stmts *s = stmts_of(st);
	int d;

	for (d = 0; d < DICT_CNT; d++) {
		sqlite3_reset(s->find[d]);
		sqlite3_reset(s->add[d]);
	}
	sqlite3_reset(s->add_interval);
	sqlite3_reset(s->add_sample);
}

static void finalize_stmts(struct store *st)
{
	struct store_stmts *s = stmts_of(st);
	int d;

	for (d = 0; d < DICT_CNT; d++) {
		sqlite3_finalize(s->find[d]);
		sqlite3_finalize(s->add[d]);
	}
	sqlite3_finalize(s->add_interval);
	sqlite3_finalize(s->add_sample);
	memset(s, 0, sizeof(*s));
}

/* Why a writer's file cannot be written (sqlite opened it read-only, or could not make it):
 * -EROFS, or -EACCES.
 */
static int unwritable(const char *path, char *err, size_t err_sz)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct statvfs fs;

	/* the file, or the folder it would be made in */
	if (access(path, F_OK) && slash &&
	    (size_t)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path) < sizeof(dir))
		path = dir;
	else if (access(path, F_OK) && !slash)
		path = ".";
	if (access(path, F_OK)) {
		snprintf(err, err_sz, "cannot make the store: its folder %s does not exist", path);
		return -ENOENT;
	}
	if (!statvfs(path, &fs) && (fs.f_flag & ST_RDONLY)) {
		snprintf(err, err_sz, "cannot write the store: %s", strerror(EROFS));
		return -EROFS;
	}
	snprintf(err, err_sz, "cannot write the store (or make its -wal and -shm files): %s",
		 strerror(EACCES));
	return -EACCES;
}

/* path as a URI for sqlite ("file:" and every byte but unreserved ones escaped), plus query;
 * NULL on ENOMEM.
 */
static char *uri_of(const char *path, const char *query)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path), i, o = 5;
	char *u = malloc(5 + 3 * n + strlen(query) + 1);

	if (!u)
		return NULL;
	memcpy(u, "file:", 5);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (isalnum(c) || strchr("/-._~", c)) {
			u[o++] = (char)c;
		} else {
			u[o++] = '%';
			u[o++] = hex[c >> 4];
			u[o++] = hex[c & 15];
		}
	}
	strcpy(u + o, query);
	return u;
}

/* A reader of a store on a read-only file system: sqlite cannot make the -shm file a WAL
 * database is read with. With no -wal file beside it (its writer closed it: the main file
 * is whole) and nobody able to write it through this mount, it is read as immutable. 0 when
 * reopened so, else the error as it was.
 */
static int reopen_immutable(struct store *st, int ret)
{
	struct statvfs fs;
	char wal[4200];
	char *uri;
	int rc;

	if (ret == -EBADMSG || ret == -ENOMEM || statvfs(st->path, &fs) ||
	    !(fs.f_flag & ST_RDONLY) ||
	    (size_t)snprintf(wal, sizeof(wal), "%s-wal", st->path) >= sizeof(wal) ||
	    access(wal, F_OK) == 0)
		return ret;
	uri = uri_of(st->path, "?immutable=1");
	if (!uri)
		return ret;
	sqlite3_close_v2(st->db);
	st->db = NULL;
	rc = sqlite3_open_v2(uri, &st->db,
			     SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
				     SQLITE_OPEN_NOFOLLOW,
			     NULL);
	free(uri);
	if (rc != SQLITE_OK)
		return ret;
	sqlite3_extended_result_codes(st->db, 0);
	sqlite3_busy_timeout(st->db, (int)(st->opts.busy_ms ?: STORE_BUSY_MS));
	return 0;
}

struct store *store__open(const struct store_opts *o, char *err, size_t err_sz)
{
	struct store_with_stmts *sw = calloc(1, sizeof(*sw));
	struct store *st;
	int flags = o->read_only ? SQLITE_OPEN_READONLY
				 : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int rc, ret = 0, empty;

	err[0] = '\0';
	if (!sw || !(sw->st.path = strdup(o->path))) {
		free(sw);
		errno = ENOMEM;
		return NULL;
	}
	st = &sw->st;
	st->opts = *o;
	st->opts.path = st->path;
	rc = sqlite3_open_v2(o->path, &st->db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
			     NULL);
	if (rc != SQLITE_OK) {
		store_db__describe(st, rc, "cannot open the store", err, err_sz);
		ret = store_db__error(st, rc) ?: -EIO;
		if (!o->read_only && (rc & 0xff) == SQLITE_CANTOPEN && ret == -ENOENT &&
		    access(o->path, F_OK))
			ret = unwritable(o->path, err, err_sz); /* it could not be made */
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 0);
	/* a reader waits out a writer's checkpoint; the writer waits out a co-writer */
	sqlite3_busy_timeout(st->db, (int)(o->busy_ms ?: STORE_BUSY_MS));
	if (!o->read_only && sqlite3_db_readonly(st->db, "main") == 1) {
		ret = unwritable(o->path, err, err_sz);
		goto fail;
	}
	/* What the file holds, read before anything is written: another program's database is
	 * refused as it is (no WAL switch, no table added), and so is a corrupt one.
	 */
	empty = is_empty(st, err, err_sz);
	if (empty < 0 && o->read_only && !reopen_immutable(st, empty))
		empty = is_empty(st, err, err_sz);
	if (empty < 0) {
		ret = empty;
		goto fail;
	}
	if (empty && o->read_only) {
		snprintf(err, err_sz, "the file is empty: no interval was written into it yet");
		ret = -ENOENT;
		goto fail;
	}
	if (!empty && (ret = check_version(st, err, err_sz)))
		goto fail;
	/* queries scan whole days of pages: map them rather than pread() each (best effort) */
	store_db__exec(st, "PRAGMA mmap_size=1073741824");
	if (!o->read_only) {
		ret = store_db__exec(st, "PRAGMA journal_mode=WAL");
		ret = ret ?: store_db__exec(st, "PRAGMA synchronous=NORMAL");
		ret = ret ?: store_db__exec(st, "PRAGMA journal_size_limit=8388608");
		if (ret) {
			store_db__describe(st, sqlite3_errcode(st->db), "cannot open the store",
					   err, err_sz);
			goto fail;
		}
	}
	/* the writer checks the whole file once (readers meet corruption as -EBADMSG anyway) */
	if (!o->read_only && !empty)
		ret = check_integrity(st, err, err_sz);
	if (!ret && !o->read_only)
		ret = create_schema(st, err, err_sz);
	if (!ret && !o->read_only && empty)
		ret = check_version(st, err, err_sz);
	if (!ret && !o->read_only && (ret = prepare_writer(st)))
		store_db__describe(st, sqlite3_errcode(st->db), "cannot prepare the store", err,
				   err_sz);
	if (ret)
		goto fail;
	return st;
fail:
	store__close(st);
	errno = -ret;
	return NULL;
}

int store__set_busy_timeout(struct store *st, unsigned int ms)
{
	return store_db__errno(sqlite3_busy_timeout(st->db, (int)ms));
}

void store__close(struct store *st)
{
	if (!st)
		return;
	finalize_stmts(st);
	sqlite3_close_v2(st->db);
	u64_map__free(&st->string_ids);
	u64_map__free(&st->mapping_ids);
	u64_map__free(&st->frame_ids);
	store_dict_cache__free(&st->dict_cache);
	free(st->path);
	free(st);
}

int store__quarantine(const char *path, char *moved, size_t moved_sz)
{
	static const char *const tails[] = { "-wal", "-shm", "" };
	char stamp[32], from[4096], to[4096];
	time_t now = time(NULL);
	struct tm tm;
	size_t i;
	int ret = 0;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		if ((size_t)snprintf(from, sizeof(from), "%s%s", path, tails[i]) >= sizeof(from) ||
		    (size_t)snprintf(to, sizeof(to), "%s.corrupt-%s%s", path, stamp, tails[i]) >=
			    sizeof(to))
			return -ENAMETOOLONG;
		if (rename(from, to) && errno != ENOENT && !*tails[i])
			ret = -errno;
	}
	snprintf(moved, moved_sz, "%s.corrupt-%s", path, stamp);
	return ret;
}

/* ---- writing ---- */

static int bind_cols(sqlite3_stmt *q, const struct store_col *cols, int n)
{
	int c, rc = SQLITE_OK;

	sqlite3_reset(q);
	for (c = 0; c < n && rc == SQLITE_OK; c++) {
		if (cols[c].type == COL_INT)
			rc = sqlite3_bind_int64(q, c + 1, cols[c].i);
		else if (cols[c].type == COL_TEXT)
			rc = sqlite3_bind_text(q, c + 1, cols[c].p, (int)cols[c].len,
					       SQLITE_STATIC);
		else
			rc = sqlite3_bind_blob(q, c + 1, cols[c].p, (int)cols[c].len,
					       SQLITE_STATIC);
	}
	return rc;
}

/* SQLite's integers are signed: counts and times past INT64_MAX are stored as INT64_MAX. */
static int64_t store_value(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Steps q once and resets it, whatever the outcome: a statement left on a row keeps its read
 * snapshot after COMMIT, and once another connection commits, that snapshot is stale and every
 * later BEGIN IMMEDIATE of ours fails (SQLITE_BUSY_SNAPSHOT). *id gets column 0 of a row. A
 * sqlite result code.
 */
static int step_reset(sqlite3_stmt *q, int64_t *id)
{
	int rc = sqlite3_step(q);

	if (rc == SQLITE_ROW && id)
		*id = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	return rc;
}

/* The key of a dictionary row in the writer's cache (store_dict_cache.h): the dictionary,
 * then each column's type and value (a text or blob with its length), into st->dict_key. Its
 * length, or 0 when it is longer than the cache keeps.
 */
static size_t dict_key(struct store *st, enum store_dict d, const struct store_col *cols, int n)
{
	uint8_t *k = st->dict_key;
	size_t len = 1;
	uint32_t l;
	int c;

	k[0] = (uint8_t)d;
	for (c = 0; c < n; c++) {
		if (len + 1 + 8 > sizeof(st->dict_key))
			return 0;
		k[len++] = (uint8_t)cols[c].type;
		if (cols[c].type == COL_INT) {
			memcpy(k + len, &cols[c].i, 8);
			len += 8;
			continue;
		}
		if (cols[c].len > sizeof(st->dict_key) - len - 4)
			return 0;
		l = (uint32_t)cols[c].len;
		memcpy(k + len, &l, 4);
		memcpy(k + len + 4, cols[c].p, l);
		len += 4 + l;
	}
	return len;
}

/* The id of the dictionary row with these columns, added if new. > 0 or -errno. */
static int64_t dict_id(struct store *st, enum store_dict d, const struct store_col *cols, int n)
{
	struct store_stmts *s = stmts_of(st);
	size_t key_len = dict_key(st, d, cols, n);
	int64_t id = key_len ? store_dict_cache__find(&st->dict_cache, st->dict_key, key_len) : 0;
	int rc;

	if (id)
		return id;
	rc = bind_cols(s->find[d], cols, n);
	if (rc == SQLITE_OK)
		rc = step_reset(s->find[d], &id);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_db__error(st, rc) ?: -EIO;
	if (rc == SQLITE_DONE) {
		rc = bind_cols(s->add[d], cols, n);
		if (rc == SQLITE_OK)
			rc = step_reset(s->add[d], NULL);
		if (rc != SQLITE_DONE)
			return store_db__error(st, rc) ?: -EIO;
		id = sqlite3_last_insert_rowid(st->db);
	}
	/* not kept (no memory): the next write asks sqlite again */
	if (key_len)
		store_dict_cache__add(&st->dict_cache, st->dict_key, key_len, id);
	return id;
}

/* 0 for NULL, else the string's id (cached by the profile's interned pointer). */
static int64_t string_id(struct store *st, const char *s)
{
	struct store_col col = { COL_TEXT, 0, s, 0 };
	int64_t id;

	if (!s)
		return 0;
	id = (int64_t)(uintptr_t)u64_map__get(&st->string_ids, (uintptr_t)s);
	if (id)
		return id;
	col.len = strlen(s);
	id = dict_id(st, DICT_STRING, &col, 1);
	if (id > 0 && u64_map__set(&st->string_ids, (uintptr_t)s, (void *)(uintptr_t)id))
		return -ENOMEM;
	return id;
}

static int64_t mapping_id(struct store *st, const struct profile *p, uint32_t id)
{
	const struct profile_mapping *m = profile__mapping(p, id);
	struct store_col cols[7];
	int64_t sid;
	int i;

	if (!id || !m)
		return 0;
	sid = (int64_t)(uintptr_t)u64_map__get(&st->mapping_ids, id);
	if (sid)
		return sid;
	for (i = 0; i < 7; i++)
		cols[i] = (struct store_col){ COL_INT };
	cols[0].i = string_id(st, m->path);
	cols[1].i = string_id(st, m->build_id);
	cols[2].i = (int64_t)m->start;
	cols[3].i = (int64_t)m->limit;
	cols[4].i = (int64_t)m->file_offset;
	cols[5].i = string_id(st, m->file_hash);
	cols[6].i = string_id(st, m->go_build_id);
	for (i = 0; i < 7; i++)
		if (cols[i].i < 0 && (i < 2 || i > 4))
			return cols[i].i;
	sid = dict_id(st, DICT_MAPPING, cols, 7);
	if (sid > 0 && u64_map__set(&st->mapping_ids, id, (void *)(uintptr_t)sid))
		return -ENOMEM;
	return sid;
}

static int64_t frame_id(struct store *st, const struct profile *p, uint32_t id)
{
	const struct profile_frame *f = profile__frame(p, id);
	struct store_blob *lines = &st->blob_lines;
	struct store_col cols[6];
	int64_t sid, v;
	uint32_t i;

	if (!f)
		return -EBADMSG;
	sid = (int64_t)(uintptr_t)u64_map__get(&st->frame_ids, id);
	if (sid)
		return sid;
	lines->len = 0;
	lines->overflow = false;
	for (i = 0; i < f->line_cnt; i++) {
		if ((v = string_id(st, f->lines[i].function)) < 0)
			return v;
		store_db__blob_put(lines, (uint64_t)v);
		if ((v = string_id(st, f->lines[i].file)) < 0)
			return v;
		store_db__blob_put(lines, (uint64_t)v);
		/* the column above the line: rows written before columns read as column 0 */
		store_db__blob_put(lines, f->lines[i].line | (uint64_t)f->lines[i].column << 32);
	}
	if (lines->overflow)
		return -E2BIG;
	cols[0] = (struct store_col){ COL_INT, f->kind };
	cols[1] = (struct store_col){ COL_INT, mapping_id(st, p, f->mapping) };
	cols[2] = (struct store_col){ COL_INT, (int64_t)f->address };
	cols[3] = (struct store_col){ COL_INT, string_id(st, f->runtime) };
	cols[4] = (struct store_col){ COL_INT, f->call_site };
	cols[5] = (struct store_col){ COL_BLOB, 0, lines->buf, lines->len };
	if (cols[1].i < 0 || cols[3].i < 0)
		return cols[1].i < 0 ? cols[1].i : cols[3].i;
	sid = dict_id(st, DICT_FRAME, cols, 6);
	if (sid > 0 && u64_map__set(&st->frame_ids, id, (void *)(uintptr_t)sid))
		return -ENOMEM;
	return sid;
}

static int64_t stack_id(struct store *st, const struct profile *p, uint32_t id)
{
	struct store_blob *blob = &st->blob_key;
	struct store_col col = { COL_BLOB };
	const uint32_t *frames;
	uint32_t n, i;
	int64_t v;

	frames = profile__stack(p, id, &n);
	if (!frames && n)
		return -EBADMSG;
	blob->len = 0;
	blob->overflow = false;
	for (i = 0; i < n; i++) {
		if ((v = frame_id(st, p, frames[i])) < 0)
			return v;
		store_db__blob_put(blob, (uint64_t)v);
	}
	if (blob->overflow)
		return -E2BIG;
	col.p = blob->buf;
	col.len = blob->len;
	return dict_id(st, DICT_STACK, &col, 1);
}

static int64_t labels_id(struct store *st, const struct profile *p, uint32_t set)
{
	struct store_blob *blob = &st->blob_key;
	struct store_col col = { COL_BLOB };
	struct profile_label l;
	uint32_t i;
	int64_t k, v;

	if (!set)
		return 0;
	blob->len = 0;
	blob->overflow = false;
	for (i = 0; profile__label(p, set, i, &l); i++) {
		if ((k = string_id(st, l.key)) < 0 || (v = string_id(st, l.value)) < 0)
			return k < 0 ? k : v;
		store_db__blob_put(blob, (uint64_t)k);
		store_db__blob_put(blob, (uint64_t)v);
	}
	if (!blob->len)
		return 0;
	col.p = blob->buf;
	col.len = blob->len;
	return dict_id(st, DICT_LABELS, &col, 1);
}

static int64_t process_id(struct store *st, const struct profile_agg_sample *s,
			  store_process_fn lookup, void *ctx)
{
	struct store_process sp = { 0 };
	struct store_col cols[4];

	if (lookup && lookup(ctx, s->pid, &sp))
		memset(&sp, 0, sizeof(sp));
	cols[0] = (struct store_col){ COL_INT, s->pid };
	cols[1] = (struct store_col){ COL_INT, string_id(st, s->comm) };
	/* exe and container strings are the caller's, not interned: no pointer cache */
	cols[2] = (struct store_col){ COL_INT, 0 };
	cols[3] = (struct store_col){ COL_INT, 0 };
	if (sp.exe && sp.exe[0]) {
		struct store_col c = { COL_TEXT, 0, sp.exe, strlen(sp.exe) };

		cols[2].i = dict_id(st, DICT_STRING, &c, 1);
	}
	if (sp.container && sp.container[0]) {
		struct store_col c = { COL_TEXT, 0, sp.container, strlen(sp.container) };

		cols[3].i = dict_id(st, DICT_STRING, &c, 1);
	}
	if (cols[1].i < 0 || cols[2].i < 0 || cols[3].i < 0)
		return cols[1].i < 0 ? cols[1].i : cols[2].i < 0 ? cols[2].i : cols[3].i;
	return dict_id(st, DICT_PROCESS, cols, 4);
}

static int64_t thread_id(struct store *st, const struct profile_agg_sample *s)
{
	struct store_col cols[2] = { { COL_INT, s->tid }, { COL_INT, 0 } };

	cols[1].i = string_id(st, s->thread_comm);
	if (cols[1].i < 0)
		return cols[1].i;
	return dict_id(st, DICT_THREAD, cols, 2);
}

static int64_t sample_type_id(struct store *st, const char *type, const char *unit)
{
	struct store_col cols[2] = { { COL_TEXT, 0, type, strlen(type) },
				     { COL_TEXT, 0, unit, strlen(unit) } };

	return dict_id(st, DICT_SAMPLE_TYPE, cols, 2);
}

/* One row of a sample: its type's id and value (ids: stack, process, thread, labels). */
static int write_row(struct store *st, int64_t interval, int64_t type, const int64_t ids[4],
		     uint64_t value)
{
	sqlite3_stmt *q = stmts_of(st)->add_sample;
	int k, rc;

	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, interval);
	sqlite3_bind_int64(q, 2, type);
	for (k = 0; k < 4; k++)
		sqlite3_bind_int64(q, 3 + k, ids[k]);
	sqlite3_bind_int64(q, 7, store_value(value));
	rc = step_reset(q, NULL);
	if (rc != SQLITE_DONE)
		return store_db__error(st, rc) ?: -EIO;
	return 0;
}

/* A sample's rows besides "samples": off_cpu/nanoseconds for an off-CPU one; each memory type
 * (profile/mem_types.h) with a value for a memory one, which has no "samples" row: its count
 * is no CPU time. 0 or -errno.
 */
static int write_typed_rows(struct store *st, const struct profile *p, int64_t interval,
			    const struct profile_agg_sample *s, const int64_t ids[4])
{
	const struct mem_type_desc *d;
	int64_t type;
	unsigned int t;
	uint64_t v;
	int err = 0;

	if (s->off_cpu_ns) {
		type = sample_type_id(st, "off_cpu", "nanoseconds");
		err = type < 0 ? (int)type : write_row(st, interval, type, ids, s->off_cpu_ns);
	}
	for (t = 0; t < MEM_TYPE_CNT && !err && s->mem_kind; t++) {
		v = mem_type__in(p, t) ? mem_type__value(s, t) : 0;
		if (!v)
			continue;
		d = mem_type__desc(t);
		type = sample_type_id(st, d->type, d->unit);
		err = type < 0 ? (int)type : write_row(st, interval, type, ids, v);
	}
	return err;
}

static int write_samples(struct store *st, const struct profile *p, int64_t interval,
			 store_process_fn lookup, void *ctx)
{
	sqlite3_stmt *q = stmts_of(st)->add_sample;
	size_t i, n = profile__sample_cnt(p);
	int64_t type = sample_type_id(st, "samples", "count");

	if (type < 0)
		return (int)type;
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);
		int64_t ids[4];
		int k, rc;

		ids[0] = stack_id(st, p, s->stack);
		ids[1] = ids[0] < 0 ? ids[0] : process_id(st, s, lookup, ctx);
		ids[2] = ids[1] < 0 ? ids[1] : thread_id(st, s);
		ids[3] = ids[2] < 0 ? ids[2] : labels_id(st, p, s->labels);
		for (k = 0; k < 4; k++)
			if (ids[k] < 0)
				return (int)ids[k];
		rc = write_typed_rows(st, p, interval, s, ids);
		if (rc)
			return rc;
		if (s->mem_kind) {
			st->stats.samples_written++;
			continue;
		}
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, interval);
		sqlite3_bind_int64(q, 2, type);
		for (k = 0; k < 4; k++)
			sqlite3_bind_int64(q, 3 + k, ids[k]);
		sqlite3_bind_int64(q, 7, store_value(s->count));
		rc = step_reset(q, NULL);
		if (rc != SQLITE_DONE)
			return store_db__error(st, rc) ?: -EIO;
		st->stats.samples_written++;
	}
	return 0;
}

static int64_t query_int(struct store *st, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int64_t v = -EIO;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	else
		v = store_db__error(st, rc) ?: -EIO;
	sqlite3_finalize(q);
	return v;
}

static int64_t live_bytes(struct store *st)
{
	int64_t pages = query_int(st, "PRAGMA page_count");
	int64_t free_pages = query_int(st, "PRAGMA freelist_count");
	int64_t page_sz = query_int(st, "PRAGMA page_size");

	if (pages < 0 || free_pages < 0 || page_sz < 0)
		return -EIO;
	return (pages - free_pages) * page_sz;
}

/* Deletes the n oldest intervals, or those ending before end_ns when n is 0. Returns how many
 * went, or -errno.
 */
static int64_t drop_oldest(struct store *st, int64_t n, uint64_t end_ns)
{
	char sql[256];
	int64_t last, cnt;
	int err;

	if (n)
		snprintf(sql, sizeof(sql),
			 "SELECT coalesce(max(id), 0) FROM (SELECT id FROM intervals ORDER BY "
			 "start_ns, id LIMIT %lld)",
			 (long long)n);
	else
		snprintf(sql, sizeof(sql),
			 "SELECT coalesce(max(id), 0) FROM intervals WHERE end_ns < %lld",
			 (long long)end_ns);
	last = query_int(st, sql);
	if (last <= 0)
		return last;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM intervals WHERE id <= %lld",
		 (long long)last);
	cnt = query_int(st, sql);
	snprintf(sql, sizeof(sql),
		 "DELETE FROM samples WHERE interval <= %lld; DELETE FROM intervals WHERE id <= "
		 "%lld",
		 (long long)last, (long long)last);
	err = cnt < 0 ? (int)cnt : store_db__exec(st, sql);
	return err ? err : cnt;
}

/* The dictionaries' unused rows deleted (store_gc.c): the writer's cache of rows forgets them
 * all, as some are gone. 0 or -errno.
 */
static int collect(struct store *st)
{
	int err = store_gc__collect(st);

	store_dict_cache__clear(&st->dict_cache);
	st->drops_since_gc = 0;
	st->stats.gc_runs++;
	return err;
}

/* Applies max_age_ns and max_sz; counts what went. 0 or -errno. */
static int apply_retention(struct store *st, uint64_t newest_end_ns)
{
	int64_t live, cnt, gone, iv_cnt;
	int round, err = 0;

	if (st->opts.max_age_ns && newest_end_ns > st->opts.max_age_ns) {
		gone = drop_oldest(st, 0, newest_end_ns - st->opts.max_age_ns);
		if (gone < 0)
			return (int)gone;
		st->stats.dropped_age += (uint64_t)gone;
		st->drops_since_gc += (uint64_t)gone;
	}
	for (round = 0; st->opts.max_sz && round < 8; round++) {
		live = live_bytes(st);
		iv_cnt = query_int(st, "SELECT count(*) FROM intervals");
		if (live < 0 || iv_cnt < 0)
			return live < 0 ? (int)live : (int)iv_cnt;
		if ((uint64_t)live <= st->opts.max_sz || iv_cnt <= 1)
			break;
		if (st->drops_since_gc) {
			/* what the dictionaries of dropped intervals held may be enough */
			err = collect(st);
			if (err)
				return err;
			continue;
		}
		/* intervals to drop so the rest fits, at least one, never the newest */
		cnt = (int64_t)(((uint64_t)live - st->opts.max_sz) /
				((uint64_t)live / iv_cnt + 1)) +
		      1;
		if (cnt >= iv_cnt)
			cnt = iv_cnt - 1;
		gone = drop_oldest(st, cnt, 0);
		if (gone < 0)
			return (int)gone;
		st->stats.dropped_size += (uint64_t)gone;
		st->drops_since_gc += (uint64_t)gone;
	}
	/* collect after age drops at most every 64 intervals (a scan of the dictionaries) */
	if (st->drops_since_gc >= 64)
		err = collect(st);
	return err ?: store_db__exec(st, "PRAGMA incremental_vacuum");
}

int store__write(struct store *st, const struct profile *p, store_process_fn lookup, void *ctx)
{
	sqlite3_stmt *q = stmts_of(st)->add_interval;
	uint64_t start = profile__start_time_ns(p), end = profile__end_time_ns(p);
	int64_t interval, live, version;
	int err, rc;

	if (st->opts.read_only)
		return -EROFS;
	if (end < start)
		end = start;
	/* ids cached by profile pointer/id are only valid for one profile */
	u64_map__free(&st->string_ids);
	u64_map__free(&st->mapping_ids);
	u64_map__free(&st->frame_ids);
	err = store_db__exec(st, "BEGIN IMMEDIATE");
	if (err)
		goto fail;
	/* another connection committed since our last write (an import, `store gc`, a second
	 * agent): the rows the cache names may be gone (read inside the transaction: no commit
	 * can come between this and ours)
	 */
	version = query_int(st, "PRAGMA data_version");
	if (version < 0) {
		err = (int)version;
		goto rollback;
	}
	if (version != st->data_version)
		store_dict_cache__clear(&st->dict_cache);
	st->data_version = version;
	sqlite3_bind_int64(q, 1, store_value(start));
	sqlite3_bind_int64(q, 2, store_value(end));
	sqlite3_bind_int64(q, 3, store_value(profile__period_ns(p)));
	sqlite3_bind_int64(q, 4, store_value(profile__total_samples(p)));
	rc = step_reset(q, NULL);
	if (rc != SQLITE_DONE) {
		err = store_db__error(st, rc) ?: -EIO;
		goto rollback;
	}
	interval = sqlite3_last_insert_rowid(st->db);
	err = write_samples(st, p, interval, lookup, ctx);
	err = err ?: apply_retention(st, end);
	err = err ?: store_db__exec(st, "COMMIT");
	if (err)
		goto rollback;
	st->stats.intervals_written++;
	live = live_bytes(st);
	st->stats.file_sz = live > 0 ? (uint64_t)live : 0;
	live = query_int(st, "SELECT count(*) FROM intervals");
	st->stats.interval_cnt = live > 0 ? (uint64_t)live : 0;
	return 0;
rollback:
	reset_stmts(st);
	store_db__exec(st, "ROLLBACK");
	store_dict_cache__clear(&st->dict_cache); /* rows it added are gone */
fail:
	st->stats.write_failed++;
	return err;
}

void store__stats(const struct store *st, struct store_stats *out)
{
	*out = st->stats;
}
