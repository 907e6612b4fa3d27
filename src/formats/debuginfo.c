/* Debug file lookup. See debuginfo.h for the order and the threading contract.
 *
 * Invariants:
 *  - a returned path always names a file whose build id equals the executable's (when both
 *    have one) and, for debuglinks, whose CRC32 equals the link's.
 *  - the debuginfod table holds at most cache_cap entries; the queue is the PENDING entries of
 *    that table, so it is bounded too. Only the worker calls into libdebuginfod.
 */
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/safe_open.h"
#include "base/timed_wait.h"
#include "formats/elf_file.h"
#include "formats/debuginfo.h"

#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_NEGATIVE_TTL_S 600
#define DEFAULT_CACHE_CAP 1024
#define MINIDEBUG_MAX_SZ ((size_t)256 << 20)
#define BUILD_ID_HEX_MAX (2 * ELF_BUILD_ID_MAX + 1)

enum fetch_state { FETCH_FREE, FETCH_PENDING, FETCH_RUNNING, FETCH_FOUND, FETCH_MISSING };

struct fetch {
	enum fetch_state state;
	char build_id[BUILD_ID_HEX_MAX];
	char *path;        /* FETCH_FOUND: the cached debug file */
	uint64_t stamp_ns; /* queued at (PENDING) or settled at (FOUND/MISSING) */
};

struct debuginfo {
	struct debuginfo_opts opts;
	char **debug_dirs; /* owned copies */
	struct debuginfo_stats stats;
	pthread_mutex_t lock; /* guards fetches, stats and stopping */
	pthread_cond_t wake;  /* worker: work or stop */
	pthread_cond_t idle;  /* waiters: a fetch settled */
	struct fetch *fetches;
	size_t fetch_cap;
	bool use_debuginfod;
	bool worker_started;
	bool stopping;
	pthread_t worker;
	uint64_t fetch_deadline_ns; /* of the running fetch, read by the progress callback */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void *debuginfo__worker(void *arg);

struct debuginfo *debuginfo__new(const struct debuginfo_opts *opts)
{
	struct debuginfo *di = calloc(1, sizeof(*di));
	const char *urls;
	size_t i;
	int err = 0;

	if (!di)
		return NULL;
	if (opts)
		di->opts = *opts;
	if (!di->opts.debuginfod_timeout_s)
		di->opts.debuginfod_timeout_s = DEFAULT_TIMEOUT_S;
	if (!di->opts.negative_ttl_s)
		di->opts.negative_ttl_s = DEFAULT_NEGATIVE_TTL_S;
	di->fetch_cap = di->opts.cache_cap ? di->opts.cache_cap : DEFAULT_CACHE_CAP;
	pthread_mutex_init(&di->lock, NULL);
	pthread_cond_init(&di->wake, NULL);
	pthread_cond_init(&di->idle, NULL);
	di->fetches = calloc(di->fetch_cap, sizeof(*di->fetches));
	di->debug_dirs = calloc(di->opts.debug_dir_cnt + 1, sizeof(*di->debug_dirs));
	if (!di->fetches || !di->debug_dirs) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < di->opts.debug_dir_cnt; i++) {
		di->debug_dirs[i] = strdup(di->opts.debug_dirs[i]);
		if (!di->debug_dirs[i]) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	di->opts.debug_dirs = NULL; /* the copies are used */
	urls = getenv("DEBUGINFOD_URLS");
	di->use_debuginfod = di->opts.debuginfod && urls && *urls;
	if (di->use_debuginfod) {
		err = -pthread_create(&di->worker, NULL, debuginfo__worker, di);
		di->worker_started = !err;
	}
cleanup:
	if (err) {
		debuginfo__free(di);
		errno = -err;
		return NULL;
	}
	return di;
}

void debuginfo__free(struct debuginfo *di)
{
	size_t i;

	if (!di)
		return;
	if (di->worker_started) {
		pthread_mutex_lock(&di->lock);
		di->stopping = true;
		pthread_cond_broadcast(&di->wake);
		pthread_mutex_unlock(&di->lock);
		pthread_join(di->worker, NULL);
	}
	for (i = 0; di->fetches && i < di->fetch_cap; i++)
		free(di->fetches[i].path);
	free(di->fetches);
	for (i = 0; di->debug_dirs && i < di->opts.debug_dir_cnt; i++)
		free(di->debug_dirs[i]);
	free(di->debug_dirs);
	pthread_cond_destroy(&di->wake);
	pthread_cond_destroy(&di->idle);
	pthread_mutex_destroy(&di->lock);
	free(di);
}

void debuginfo_result__release(struct debuginfo_result *res)
{
	if (!res)
		return;
	free(res->image);
	res->image = NULL;
	res->image_sz = 0;
	if (res->fd >= 0)
		close(res->fd);
	res->fd = -1;
}

static void result_init(struct debuginfo_result *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
}

void debuginfo__stats(struct debuginfo *di, struct debuginfo_stats *out)
{
	pthread_mutex_lock(&di->lock);
	*out = di->stats;
	pthread_mutex_unlock(&di->lock);
}

static void stat_add(struct debuginfo *di, uint64_t *counter)
{
	pthread_mutex_lock(&di->lock);
	(*counter)++;
	pthread_mutex_unlock(&di->lock);
}

/* CRC32 of the whole file at fd, read with pread from offset 0. */
static int fd_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	*crc = (uint32_t)c;
	return 0;
}

int debuginfo__file_crc(const char *path, uint32_t *crc)
{
	int fd = safe_open(path), err;

	if (fd < 0)
		return fd;
	err = fd_crc(fd, crc);
	close(fd);
	return err;
}

/* Open the candidate debug file inner, seen from root ("" for the host: inner is then a host
 * path): a regular file (base/safe_open.h) that is an ELF with the build id want (any when want
 * is empty). fd, or -errno; counts a build-id mismatch.
 */
static int open_candidate(struct debuginfo *di, const char *root, const char *inner,
			  const char *want)
{
	char have[BUILD_ID_HEX_MAX];
	struct elf_file *ef;
	bool ok;
	int fd = safe_open_in_root(root, inner);

	if (fd < 0)
		return fd;
	ef = elf_file__open_fd(fd);
	ok = ef && (!*want ||
		    (elf_file__build_id_hex(ef, have, sizeof(have)) == 0 && !strcmp(have, want)));
	if (ef && !ok)
		stat_add(di, &di->stats.build_id_mismatch);
	elf_file__free(ef);
	if (!ok) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static bool has_debug_info(struct elf_file *ef)
{
	struct elf_section sec;

	if (!elf_file__section(ef, ".debug_info", &sec) && sec.type != 8 /* SHT_NOBITS */)
		return true;
	return !elf_file__section(ef, ".zdebug_info", &sec);
}

static int set_path(struct debuginfo_result *out, enum debuginfo_source source, const char *path)
{
	size_t len = strlen(path);

	if (len >= sizeof(out->path))
		return -ENAMETOOLONG;
	memcpy(out->path, path, len + 1);
	out->source = source;
	return 0;
}

/* The result is the file open at fd (taken), found at root + inner. */
static int set_found(struct debuginfo_result *out, enum debuginfo_source source, int fd,
		     const char *root, const char *inner)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s", root, inner);
	int err = n < 0 || (size_t)n >= sizeof(path) ? -ENAMETOOLONG : set_path(out, source, path);

	if (err) {
		close(fd);
		return err;
	}
	out->fd = fd;
	return 0;
}

/* DIR/.build-id/xx/yyyy<suffix> into buf; false if it does not fit. */
static bool build_id_path(char *buf, size_t cap, const char *dir, const char *build_id,
			  const char *suffix)
{
	int n = snprintf(buf, cap, "%s/.build-id/%.2s/%s%s", dir, build_id, build_id + 2, suffix);

	return n > 0 && (size_t)n < cap;
}

/* Step 2 (and the binary-itself variant for find_build_id). */
static int find_in_build_id_dirs(struct debuginfo *di, const char *build_id, const char *root,
				 bool also_binary, struct debuginfo_result *out)
{
	static const char *const suffixes[] = { ".debug", "" };
	char path[PATH_MAX];
	size_t i, s;
	int fd;

	if (strlen(build_id) < 4)
		return -ENOENT;
	for (s = 0; s < (also_binary ? 2u : 1u); s++) {
		if (!di->opts.no_system_dirs &&
		    build_id_path(path, sizeof(path), "/usr/lib/debug", build_id, suffixes[s]) &&
		    (fd = open_candidate(di, root, path, build_id)) >= 0)
			return set_found(out, DEBUGINFO_BUILD_ID, fd, root, path);
		for (i = 0; i < di->opts.debug_dir_cnt; i++) {
			if (build_id_path(path, sizeof(path), di->debug_dirs[i], build_id,
					  suffixes[s]) &&
			    (fd = open_candidate(di, "", path, build_id)) >= 0)
				return set_found(out, DEBUGINFO_BUILD_ID, fd, "", path);
		}
	}
	return -ENOENT;
}

/* One debuglink candidate (inner, seen from root): not the executable itself (exe_st), right
 * build id (if known) and right CRC. fd or -errno.
 */
static int open_debuglink(struct debuginfo *di, const char *root, const char *inner,
			  const char *build_id, uint32_t want_crc, const struct stat *exe_st)
{
	struct stat st;
	uint32_t crc;
	int fd = open_candidate(di, root, inner, build_id);

	if (fd < 0)
		return fd;
	/* the link may name the executable itself (same folder, same name) */
	if (!fstat(fd, &st) && st.st_dev == exe_st->st_dev && st.st_ino == exe_st->st_ino) {
		close(fd);
		return -ENOENT;
	}
	if (fd_crc(fd, &crc) || crc != want_crc) {
		stat_add(di, &di->stats.crc_mismatch);
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* Step 3. exe is the path we opened; its folder, seen from inside root, is exe minus root. */
static int find_debuglink(struct debuginfo *di, struct elf_file *ef, const char *exe,
			  const struct stat *exe_st, const char *root, const char *build_id,
			  struct debuginfo_result *out)
{
	char exe_copy[PATH_MAX], path[PATH_MAX];
	const char *name, *dir, *inner_dir;
	size_t root_len = strlen(root), i;
	uint32_t crc;
	int n, k, fd;

	if (elf_file__debuglink(ef, &name, &crc) || !*name || strchr(name, '/') ||
	    !strcmp(name, "..") || !strcmp(name, "."))
		return -ENOENT;
	if (strlen(exe) >= sizeof(exe_copy))
		return -ENAMETOOLONG;
	memcpy(exe_copy, exe, strlen(exe) + 1);
	dir = dirname(exe_copy);
	inner_dir = root_len && !strncmp(dir, root, root_len) ? dir + root_len : dir;
	/* All three are resolved inside root: the executable's folder as the process sees it. */
	for (k = 0; k < 3; k++) {
		if (k == 0)
			n = snprintf(path, sizeof(path), "%s/%s", inner_dir, name);
		else if (k == 1)
			n = snprintf(path, sizeof(path), "%s/.debug/%s", inner_dir, name);
		else if (!di->opts.no_system_dirs)
			n = snprintf(path, sizeof(path), "/usr/lib/debug%s/%s", inner_dir, name);
		else
			continue;
		if (n > 0 && (size_t)n < sizeof(path) &&
		    (fd = open_debuglink(di, root, path, build_id, crc, exe_st)) >= 0)
			return set_found(out, DEBUGINFO_DEBUGLINK, fd, root, path);
	}
	for (i = 0; i < di->opts.debug_dir_cnt; i++) {
		for (k = 0; k < 2; k++) {
			if (k == 0)
				n = snprintf(path, sizeof(path), "%s/%s", di->debug_dirs[i], name);
			else
				n = snprintf(path, sizeof(path), "%s%s/%s", di->debug_dirs[i],
					     inner_dir, name);
			if (n > 0 && (size_t)n < sizeof(path) &&
			    (fd = open_debuglink(di, "", path, build_id, crc, exe_st)) >= 0)
				return set_found(out, DEBUGINFO_DEBUGLINK, fd, "", path);
		}
	}
	return -ENOENT;
}

int debuginfo__minidebuginfo_image(struct elf_file *ef, void **image, size_t *image_sz)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	struct elf_section sec;
	uint8_t *buf = NULL, *tmp;
	size_t cap = 0;
	lzma_ret ret;
	int err = 0;

	if (elf_file__section(ef, ".gnu_debugdata", &sec) || !sec.data || !sec.size)
		return -ENOENT;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = sec.data;
	strm.avail_in = sec.size;
	do {
		if (strm.avail_out == 0) {
			if (cap >= MINIDEBUG_MAX_SZ) {
				err = -EFBIG;
				goto cleanup;
			}
			cap = cap ? cap * 2 : sec.size * 4 + 4096;
			tmp = realloc(buf, cap);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
			strm.next_out = buf + strm.total_out;
			strm.avail_out = cap - strm.total_out;
		}
		ret = lzma_code(&strm, LZMA_FINISH);
	} while (ret == LZMA_OK);
	if (ret != LZMA_STREAM_END) {
		err = -ENOEXEC;
		goto cleanup;
	}
	*image = buf;
	*image_sz = strm.total_out;
	buf = NULL;
cleanup:
	lzma_end(&strm);
	free(buf);
	return err;
}

/* Step 5: xz-decompresses .gnu_debugdata into out->image. */
static int find_minidebuginfo(struct debuginfo *di, struct elf_file *ef, const char *exe,
			      struct debuginfo_result *out)
{
	void *image = NULL;
	size_t image_sz = 0;
	int err = debuginfo__minidebuginfo_image(ef, &image, &image_sz);

	if (err == -ENOEXEC)
		stat_add(di, &di->stats.corrupt);
	if (err)
		return err;
	err = set_path(out, DEBUGINFO_MINIDEBUGINFO, exe);
	if (err) {
		free(image);
		return err;
	}
	out->image = image;
	out->image_sz = image_sz;
	return 0;
}

/* ---- debuginfod ---- */

static struct fetch *fetch__lookup(struct debuginfo *di, const char *build_id)
{
	size_t i;

	for (i = 0; i < di->fetch_cap; i++) {
		if (di->fetches[i].state != FETCH_FREE &&
		    !strcmp(di->fetches[i].build_id, build_id))
			return &di->fetches[i];
	}
	return NULL;
}

/* A free slot, evicting the oldest settled entry if needed; NULL if all are in flight. */
static struct fetch *fetch__slot(struct debuginfo *di)
{
	struct fetch *oldest = NULL, *f;
	size_t i;

	for (i = 0; i < di->fetch_cap; i++) {
		f = &di->fetches[i];
		if (f->state == FETCH_FREE)
			return f;
		if ((f->state == FETCH_FOUND || f->state == FETCH_MISSING) &&
		    (!oldest || f->stamp_ns < oldest->stamp_ns))
			oldest = f;
	}
	if (oldest) {
		di->stats.evictions++;
		free(oldest->path);
		memset(oldest, 0, sizeof(*oldest));
	}
	return oldest;
}

/* Step 4, the caller's side: never blocks on the network. */
static int find_debuginfod(struct debuginfo *di, const char *build_id, struct debuginfo_result *out)
{
	uint64_t now = now_ns(), ttl = (uint64_t)di->opts.negative_ttl_s * 1000000000ULL;
	struct fetch *f;
	int err = -EAGAIN, fd = -1;

	if (!di->use_debuginfod || strlen(build_id) < 4 || strlen(build_id) >= BUILD_ID_HEX_MAX)
		return -ENOENT;
	pthread_mutex_lock(&di->lock);
	f = fetch__lookup(di, build_id);
	if (f && f->state == FETCH_FOUND && (fd = safe_open(f->path)) < 0) {
		/* the debuginfod cache cleaned it up: ask again */
		free(f->path);
		memset(f, 0, sizeof(*f));
		f = NULL;
	}
	if (f && f->state == FETCH_MISSING && now - f->stamp_ns >= ttl) {
		memset(f, 0, sizeof(*f));
		f = NULL;
	}
	if (f) {
		if (f->state == FETCH_FOUND) {
			err = set_found(out, DEBUGINFO_DEBUGINFOD, fd, "", f->path);
			fd = -1;
		} else if (f->state == FETCH_MISSING) {
			di->stats.negative_hits++;
			err = -ENOENT;
		}
	} else {
		f = fetch__slot(di);
		if (f) {
			f->state = FETCH_PENDING;
			memcpy(f->build_id, build_id, strlen(build_id) + 1);
			f->stamp_ns = now;
			pthread_cond_signal(&di->wake);
		}
	}
	if (err == -EAGAIN)
		di->stats.pending++;
	pthread_mutex_unlock(&di->lock);
	if (fd >= 0)
		close(fd);
	return err;
}

static int debuginfo__progress(debuginfod_client *client, long a, long b)
{
	struct debuginfo *di = debuginfod_get_user_data(client);
	bool stop;

	(void)a;
	(void)b;
	pthread_mutex_lock(&di->lock);
	stop = di->stopping || now_ns() > di->fetch_deadline_ns;
	pthread_mutex_unlock(&di->lock);
	return stop; /* non-zero aborts the transfer */
}

static void *debuginfo__worker(void *arg)
{
	struct debuginfo *di = arg;
	debuginfod_client *client = debuginfod_begin();
	char build_id[BUILD_ID_HEX_MAX], *path;
	struct fetch *f, *next;
	size_t i;
	int fd;

	if (client) {
		debuginfod_set_user_data(client, di);
		debuginfod_set_progressfn(client, debuginfo__progress);
	}
	pthread_mutex_lock(&di->lock);
	while (!di->stopping) {
		next = NULL;
		for (i = 0; i < di->fetch_cap; i++) {
			f = &di->fetches[i];
			if (f->state == FETCH_PENDING && (!next || f->stamp_ns < next->stamp_ns))
				next = f;
		}
		if (!next) {
			pthread_cond_broadcast(&di->idle);
			pthread_cond_wait(&di->wake, &di->lock);
			continue;
		}
		next->state = FETCH_RUNNING;
		memcpy(build_id, next->build_id, sizeof(build_id));
		di->fetch_deadline_ns =
			now_ns() + (uint64_t)di->opts.debuginfod_timeout_s * 1000000000ULL;
		di->stats.debuginfod_queries++;
		pthread_mutex_unlock(&di->lock);

		path = NULL;
		fd = client ? debuginfod_find_debuginfo(client, (const unsigned char *)build_id, 0,
							&path)
			    : -ENOSYS;
		if (fd >= 0)
			close(fd);

		pthread_mutex_lock(&di->lock);
		/* the entry cannot have been evicted: RUNNING entries are never chosen */
		next->stamp_ns = now_ns();
		if (fd >= 0 && path) {
			next->state = FETCH_FOUND;
			next->path = path;
			di->stats.debuginfod_found++;
		} else {
			free(path);
			next->state = FETCH_MISSING;
			di->stats.debuginfod_failed++;
		}
		pthread_cond_broadcast(&di->idle);
	}
	pthread_mutex_unlock(&di->lock);
	if (client)
		debuginfod_end(client);
	return NULL;
}

int debuginfo__wait(struct debuginfo *di, int timeout_ms)
{
	/* on the default clock of di->idle; a negative timeout is a deadline passed */
	struct timespec deadline =
		timed_wait__deadline(CLOCK_REALTIME, timeout_ms > 0 ? (uint64_t)timeout_ms : 0);
	bool busy;
	size_t i;
	int err = 0;

	pthread_mutex_lock(&di->lock);
	for (;;) {
		busy = false;
		for (i = 0; i < di->fetch_cap && di->worker_started; i++) {
			if (di->fetches[i].state == FETCH_PENDING ||
			    di->fetches[i].state == FETCH_RUNNING)
				busy = true;
		}
		if (!busy)
			break;
		if (pthread_cond_timedwait(&di->idle, &di->lock, &deadline) == ETIMEDOUT) {
			err = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&di->lock);
	return err;
}

/* ---- entry points ---- */

static void count_result(struct debuginfo *di, int err, const struct debuginfo_result *out)
{
	pthread_mutex_lock(&di->lock);
	if (!err)
		di->stats.found[out->source]++;
	else if (err == -ENOENT)
		di->stats.not_found++;
	pthread_mutex_unlock(&di->lock);
}

int debuginfo__find_fd(struct debuginfo *di, int exe_fd, const char *path, const char *root,
		       struct debuginfo_result *out)
{
	char build_id[BUILD_ID_HEX_MAX] = "";
	struct elf_file *ef;
	struct stat exe_st;
	int err, fd;

	result_init(out);
	root = root ? root : "";
	if (fstat(exe_fd, &exe_st))
		return -errno;
	ef = elf_file__open_fd(exe_fd);
	if (!ef) {
		err = errno == ENOEXEC ? -ENOEXEC : -(errno ? errno : ENOENT);
		if (err == -ENOEXEC)
			stat_add(di, &di->stats.corrupt);
		return err;
	}
	if (elf_file__build_id_hex(ef, build_id, sizeof(build_id)) < 0)
		build_id[0] = '\0';
	if (has_debug_info(ef)) {
		fd = fcntl(exe_fd, F_DUPFD_CLOEXEC, 0);
		err = fd < 0 ? -errno : set_found(out, DEBUGINFO_SELF, fd, "", path);
		goto cleanup;
	}
	err = build_id[0] ? find_in_build_id_dirs(di, build_id, root, false, out) : -ENOENT;
	if (err == -ENOENT)
		err = find_debuglink(di, ef, path, &exe_st, root, build_id, out);
	if (err == -ENOENT && build_id[0])
		err = find_debuginfod(di, build_id, out);
	if (err == -ENOENT)
		err = find_minidebuginfo(di, ef, path, out);
cleanup:
	elf_file__free(ef);
	count_result(di, err, out);
	return err;
}

int debuginfo__find(struct debuginfo *di, const char *path, const char *root,
		    struct debuginfo_result *out)
{
	int fd = safe_open(path), err;

	result_init(out);
	if (fd < 0) {
		if (fd == -EINVAL)
			stat_add(di, &di->stats.corrupt);
		return fd == -EINVAL ? -ENOEXEC : fd;
	}
	err = debuginfo__find_fd(di, fd, path, root, out);
	close(fd);
	return err;
}

int debuginfo__find_build_id(struct debuginfo *di, const char *build_id, const char *root,
			     struct debuginfo_result *out)
{
	int err;

	result_init(out);
	err = find_in_build_id_dirs(di, build_id, root ? root : "", true, out);
	if (err == -ENOENT)
		err = find_debuginfod(di, build_id, out);
	count_result(di, err, out);
	return err;
}
