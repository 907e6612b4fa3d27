/* On-disk unwind-table cache. See table_cache.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/capped_dir.h"
#include "base/output_file.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_table.h"

#define CACHE_MAGIC 0x54555353u /* "SSUT" */
#define CACHE_VERSION \
	9u /* 3: Go stack deltas from .gopclntab; 4: entry-point STOP; 5: GO_G0; 6: GO_CGO; 7: rbx;
	    * 8: function entries without CFI (endbr64), clone returns; 9: GO_PREEMPT */
#define SUFFIX ".unwind"
/* The folder is walked (and trimmed) after a store that takes the bytes we know of past the
 * cap, and after this many stores anyway (another process may store into the same folder).
 * A walk after every store stats every entry: 6-9 % of the agent's CPU with a full cache.
 */
#define TRIM_WALK_STORES 16

struct cache_header {
	uint32_t magic;
	uint32_t version;
	uint64_t file_id;
	uint64_t row_cnt;
	uint32_t row_size; /* sizeof(struct unwind_row): a layout change is a miss */
	uint32_t crc;      /* CRC-32 of the rows */
};

struct table_cache {
	int dir_fd; /* every entry is opened, renamed and deleted relative to it */
	uint64_t max_bytes;
	uint64_t bytes;               /* the entries at the last walk, plus our stores since */
	unsigned int unwalked_stores; /* stores since the last walk (UINT_MAX: none yet) */
	struct table_cache_stats stats;
};

struct table_cache *table_cache__new(const char *dir, uint64_t max_bytes)
{
	struct table_cache *c;
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return NULL;
	fd = output_file__open_dir(dir);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (faccessat(fd, ".", W_OK, AT_EACCESS)) {
		close(fd);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->dir_fd = fd;
	c->max_bytes = max_bytes;
	c->unwalked_stores = UINT_MAX;
	return c;
}

void table_cache__free(struct table_cache *c)
{
	if (!c)
		return;
	close(c->dir_fd);
	free(c);
}

const struct table_cache_stats *table_cache__stats(const struct table_cache *c)
{
	return &c->stats;
}

static void entry_name(uint64_t file_id, char *buf, size_t cap)
{
	snprintf(buf, cap, "%016llx" SUFFIX, (unsigned long long)file_id);
}

bool table_cache__has(const struct table_cache *c, uint64_t file_id)
{
	char name[64];
	struct stat st;

	entry_name(file_id, name, sizeof(name));
	return !fstatat(c->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode);
}

static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Rows are read and written a window at a time: a giant's table never sits whole in memory. */
#define WINDOW_ROWS 2048

int table_cache__load(struct table_cache *c, uint64_t file_id, struct unwind_table **out)
{
	struct cache_header h;
	struct unwind_row *win = NULL;
	struct stat st;
	char name[64];
	uLong crc = crc32(0, Z_NULL, 0);
	uint64_t last = 0;
	size_t done;
	int fd, err = -EBADMSG;

	*out = NULL;
	entry_name(file_id, name, sizeof(name));
	fd = openat(c->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		c->stats.misses++;
		return -ENOENT;
	}
	if (fstat(fd, &st) || (uint64_t)st.st_size < sizeof(h) || read_all(fd, &h, sizeof(h)) ||
	    h.magic != CACHE_MAGIC)
		goto bad;
	if (h.version != CACHE_VERSION) {
		/* Written by another version of stackscope: not corrupt, only not ours to read. */
		c->stats.outdated++;
		unlinkat(c->dir_fd, name, 0);
		err = -ENOENT;
		goto out;
	}
	if (h.file_id != file_id || h.row_size != sizeof(struct unwind_row) ||
	    h.row_cnt > UNWIND_TABLE_MAX_ROWS ||
	    (uint64_t)st.st_size != sizeof(h) + h.row_cnt * sizeof(struct unwind_row))
		goto bad;
	win = malloc(WINDOW_ROWS * sizeof(*win));
	if (!win) {
		err = -ENOMEM;
		goto out;
	}
	/* Every row checked (CRC, order, kinds) before the table is handed out. */
	for (done = 0; done < h.row_cnt;) {
		size_t n = h.row_cnt - done < WINDOW_ROWS ? h.row_cnt - done : WINDOW_ROWS;

		if (read_all(fd, win, n * sizeof(*win)) || unwind_rows__check(win, n, done, &last))
			goto bad;
		crc = crc32(crc, (const unsigned char *)win, (uInt)(n * sizeof(*win)));
		done += n;
	}
	if ((uint32_t)crc != h.crc)
		goto bad;
	err = unwind_table__from_file(fd, sizeof(h), h.row_cnt, out);
	if (!err) {
		c->stats.hits++;
		futimens(fd, NULL); /* recently used */
	}
	goto out;
bad:
	c->stats.corrupt++;
	unlinkat(c->dir_fd, name, 0);
	err = -EBADMSG;
out:
	free(win);
	close(fd);
	return err;
}

int table_cache__store(struct table_cache *c, uint64_t file_id, const struct unwind_table *t)
{
	size_t cnt = unwind_table__row_cnt(t), done;
	struct cache_header h = {
		.magic = CACHE_MAGIC,
		.version = CACHE_VERSION,
		.file_id = file_id,
		.row_cnt = cnt,
		.row_size = sizeof(struct unwind_row),
	};
	struct unwind_row *win = NULL;
	struct output_file *f;
	uLong crc = crc32(0, Z_NULL, 0);
	char name[64];
	int err;

	if (sizeof(h) + cnt * sizeof(struct unwind_row) > c->max_bytes)
		return -EFBIG;
	win = malloc(WINDOW_ROWS * sizeof(*win));
	if (!win) {
		err = -ENOMEM;
		goto fail;
	}
	/* The CRC goes in the header, before the rows: one pass for it, one to write. */
	for (done = 0; done < cnt; done += WINDOW_ROWS) {
		size_t n = cnt - done < WINDOW_ROWS ? cnt - done : WINDOW_ROWS;

		err = unwind_table__read_rows(t, done, n, win);
		if (err)
			goto fail;
		crc = crc32(crc, (const unsigned char *)win, (uInt)(n * sizeof(*win)));
	}
	h.crc = (uint32_t)crc;
	entry_name(file_id, name, sizeof(name));
	err = output_file__openat(c->dir_fd, name, &f);
	if (err)
		goto fail;
	err = output_file__write(f, &h, sizeof(h));
	for (done = 0; !err && done < cnt; done += WINDOW_ROWS) {
		size_t n = cnt - done < WINDOW_ROWS ? cnt - done : WINDOW_ROWS;

		err = unwind_table__read_rows(t, done, n, win);
		if (!err)
			err = output_file__write(f, win, n * sizeof(*win));
	}
	err = output_file__finish(f, err);
	if (err)
		goto fail;
	free(win);
	c->stats.stores++;
	c->bytes += sizeof(h) + cnt * sizeof(struct unwind_row);
	if (c->unwalked_stores >= TRIM_WALK_STORES - 1 || c->bytes > c->max_bytes) {
		c->stats.evicted += capped_dir__trim_left(c->dir_fd, "", SUFFIX, c->max_bytes,
							  false, &c->bytes);
		c->unwalked_stores = 0;
	} else {
		c->unwalked_stores++;
	}
	return 0;
fail:
	free(win);
	c->stats.store_failures++;
	return err;
}
