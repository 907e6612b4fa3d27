/* One pid's first interval and identities in a range. See store_process_span.h. */
#include "store/store_process_span.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/store_db.h"

int store__process_span(struct store *st, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
			struct store_process_span *out)
{
	/* intervals overlapping [?1, ?2) as store_query.c selects them */
	static const char sql[] =
		"SELECT min(i.end_ns), max(coalesce(c.s, '')) FROM processes p"
		" JOIN samples s ON s.process = p.id"
		" JOIN intervals i ON i.id = s.interval"
		" LEFT JOIN strings c ON c.id = p.container AND p.container != 0"
		" WHERE p.pid = ?3 AND (i.end_ns > ?1 OR i.start_ns >= ?1) AND i.start_ns < ?2";
	sqlite3_stmt *q = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(q, 1, from_ns > INT64_MAX ? INT64_MAX : (int64_t)from_ns);
		sqlite3_bind_int64(q, 2, !to_ns || to_ns > INT64_MAX ? INT64_MAX : (int64_t)to_ns);
		sqlite3_bind_int64(q, 3, pid);
		rc = sqlite3_step(q);
	}
	if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		int64_t end = sqlite3_column_int64(q, 0);
		const unsigned char *c = sqlite3_column_text(q, 1);

		out->first_end_ns = end > 0 ? (uint64_t)end : 0;
		snprintf(out->container, sizeof(out->container), "%s", c ? (const char *)c : "");
	}
	sqlite3_finalize(q);
	return rc == SQLITE_ROW ? 0 : store_db__errno(rc) ?: -EIO;
}
