/* The source view's answer: the function's files, the lines' heat, the file's text read
 * through the right root. See source_view.h.
 */
#include "serve/source_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/profile.h"
#include "serve/json_out.h"
#include "serve/source_file.h"
#include "store/store.h"
#include "store/store_process_span.h"

#define FILES_MAX 64   /* files of one function kept (the rest are not offered) */
#define PIDS_MAX 1024  /* processes of one file counted */
#define PIDS_LISTED 20 /* ... and listed */
/* /proc/PID/stat's start time has clock-tick (10 ms) steps, and the clocks' difference moves */
#define START_SLACK_NS 50000000ull

struct file_count {
	const char *file; /* interned by the profile */
	uint64_t samples;
};

struct pid_count {
	uint32_t pid;
	const char *comm;
	uint64_t samples;
};

/* The heat of one file for one process. */
struct heat {
	const char *file;
	uint32_t pid;
	enum frame_kind kind; /* of the function's frames in the file: self is counted on the */
	const char *runtime;  /* innermost frame of this kind and runtime */
	uint32_t max_line;
	uint64_t *self, *total;
	uint32_t *stamp; /* sample index + 1 that last counted a line's total */
	uint64_t samples, file_samples;
};

/* Per frame id: the file of a line of the frame named function (NULL: none with a file), and
 * whether any line is named function at all.
 */
struct frame_match {
	const char *file;
	bool named;
};

static struct frame_match *match_frames(const struct profile *p, const char *function)
{
	size_t n = profile__frame_cnt(p), id;
	struct frame_match *m = calloc(n + 1, sizeof(*m));
	uint32_t l;

	if (!m)
		return NULL;
	for (id = 1; id <= n; id++) {
		const struct profile_frame *f = profile__frame(p, (uint32_t)id);

		for (l = 0; f && l < (f->line_cnt ? f->line_cnt : 1); l++) {
			const char *name = profile__frame_name(p, (uint32_t)id, l);

			if (!name || strcmp(name, function))
				continue;
			m[id].named = true;
			if (l < f->line_cnt && f->lines[l].file && f->lines[l].file[0] &&
			    !m[id].file)
				m[id].file = f->lines[l].file;
		}
	}
	return m;
}

static void count_file(struct file_count *files, size_t *cnt, const char *file, uint64_t v)
{
	size_t i;

	for (i = 0; i < *cnt; i++)
		if (files[i].file == file) {
			files[i].samples = profile__count_add(files[i].samples, v);
			return;
		}
	if (*cnt < FILES_MAX)
		files[(*cnt)++] = (struct file_count){ file, v };
}

static void count_pid(struct pid_count *pids, size_t *cnt, const struct profile_agg_sample *s)
{
	size_t i;

	for (i = 0; i < *cnt; i++)
		if (pids[i].pid == s->pid) {
			pids[i].samples = profile__count_add(pids[i].samples, s->count);
			return;
		}
	if (*cnt < PIDS_MAX)
		pids[(*cnt)++] = (struct pid_count){ s->pid, s->comm, s->count };
}

static int by_samples_desc(const void *a, const void *b)
{
	const struct file_count *x = a, *y = b;

	return x->samples != y->samples ? (x->samples > y->samples ? -1 : 1)
					: strcmp(x->file, y->file);
}

static int pid_by_samples_desc(const void *a, const void *b)
{
	const struct pid_count *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Whether the sample's stack has a frame of the function in file (NULL: in any file). */
static bool stack_has(const struct profile *p, const struct profile_agg_sample *s,
		      const struct frame_match *m, const char *file)
{
	uint32_t cnt, i;
	const uint32_t *fr = profile__stack(p, s->stack, &cnt);

	for (i = 0; i < cnt; i++)
		if (fr[i] <= profile__frame_cnt(p) && m[fr[i]].file &&
		    (!file || m[fr[i]].file == file))
			return true;
	return false;
}

static void heat_add(struct heat *h, const struct profile *p, const struct profile_agg_sample *s,
		     uint32_t stamp)
{
	uint32_t cnt, i, l;
	const uint32_t *fr = profile__stack(p, s->stack, &cnt);
	bool self_seen = false, in_file = false;

	h->samples = profile__count_add(h->samples, s->count);
	for (i = 0; i < cnt; i++) { /* leaf first */
		const struct profile_frame *f = profile__frame(p, fr[i]);

		if (!f)
			continue;
		if (!self_seen && f->kind == h->kind && f->runtime == h->runtime) {
			self_seen = true;
			if (f->line_cnt && f->lines[0].file == h->file && f->lines[0].line &&
			    f->lines[0].line <= h->max_line)
				h->self[f->lines[0].line] =
					profile__count_add(h->self[f->lines[0].line], s->count);
		}
		for (l = 0; l < f->line_cnt; l++) {
			uint32_t line = f->lines[l].line;

			if (f->lines[l].file != h->file)
				continue;
			in_file = true;
			if (!line || line > h->max_line || h->stamp[line] == stamp)
				continue;
			h->stamp[line] = stamp;
			h->total[line] = profile__count_add(h->total[line], s->count);
		}
	}
	if (in_file)
		h->file_samples = profile__count_add(h->file_samples, s->count);
}

/* Fills h (file, pid, kind set) from p's samples of h->pid. 0 or -ENOMEM. */
static int heat_fill(struct heat *h, const struct profile *p)
{
	size_t n = profile__frame_cnt(p), id, i;
	uint32_t l;

	for (id = 1; id <= n; id++) {
		const struct profile_frame *f = profile__frame(p, (uint32_t)id);

		for (l = 0; f && l < f->line_cnt; l++)
			if (f->lines[l].file == h->file && f->lines[l].line > h->max_line)
				h->max_line = f->lines[l].line;
	}
	if (h->max_line > SOURCE_FILE_MAX_LINES)
		h->max_line = SOURCE_FILE_MAX_LINES;
	h->self = calloc(h->max_line + 1, sizeof(*h->self));
	h->total = calloc(h->max_line + 1, sizeof(*h->total));
	h->stamp = calloc(h->max_line + 1, sizeof(*h->stamp));
	if (!h->self || !h->total || !h->stamp)
		return -ENOMEM;
	for (i = 0; i < profile__sample_cnt(p); i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);

		if (s->pid == h->pid)
			heat_add(h, p, s, (uint32_t)i + 1);
	}
	return 0;
}

/* ---- the process's root ---- */

/* The start of the process of /proc/PID (dfd), in clock ticks since boot. 0 or -errno. */
static int start_ticks(int dfd, unsigned long long *ticks)
{
	char buf[1024], *s;
	ssize_t n;
	int fd = openat(dfd, "stat", O_RDONLY | O_CLOEXEC), i;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	s = strrchr(buf, ')');        /* the name may hold spaces and ')' */
	for (i = 0; i < 20 && s; i++) /* from ") state ..." to field 22, starttime */
		s = strchr(s + 1, ' ');
	if (!s || sscanf(s + 1, "%llu", ticks) != 1)
		return -EINVAL;
	return 0;
}

/* Clock ticks since boot as wall-clock ns since the epoch. */
static uint64_t ticks_to_wall_ns(unsigned long long ticks)
{
	struct timespec real, boot;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	return (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec -
	       ((uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec) +
	       ticks * (1000000000ull / (unsigned long long)(hz > 0 ? hz : 100));
}

static bool comm_is(int dfd, const char *comm)
{
	char buf[64];
	ssize_t n;
	int fd = openat(dfd, "comm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return comm && !strcmp(buf, comm);
}

/* Whether the cgroup path of the process of /proc/PID (dfd) names container (64 hex digits, as
 * proc/container.h finds it there for the store's writer).
 */
static bool in_cgroup_of(int dfd, const char *container)
{
	char buf[8192];
	ssize_t n;
	int fd = openat(dfd, "cgroup", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strlen(container) == 64 && strstr(buf, container);
}

/* Where the file of process pid is read: *root_fd (an O_PATH directory) and *uid (the
 * process's user, (uid_t)-1 for none), *kind "process" or "host", *note why not the process's
 * own (or NULL); or -1 in *root_fd and *why. 0 or -errno (a store error).
 */
static int process_root(struct store *st, const struct store_filter *f, uint32_t pid,
			const char *comm, int *root_fd, uid_t *uid, const char **kind,
			const char **note, char *why, size_t why_sz)
{
	struct store_process_span span;
	unsigned long long start = 0, again = 0;
	struct stat dst;
	char path[32];
	bool same;
	int dfd, err;

	*root_fd = -1;
	*uid = (uid_t)-1;
	*kind = *note = NULL;
	err = store__process_span(st, pid, f->from_ns, f->to_ns, &span);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* (a pid may show two names or containers: an exec, a move into its cgroup at start) */
	same = dfd >= 0 && span.first_end_ns && !start_ticks(dfd, &start) &&
	       ticks_to_wall_ns(start) <= span.first_end_ns + START_SLACK_NS &&
	       comm_is(dfd, comm) && !fstat(dfd, &dst);
	if (same && span.container[0]) /* the store knows its container: still in it */
		same = in_cgroup_of(dfd, span.container);
	if (same) {
		*root_fd = openat(dfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
		/* still the same process once its root is held (not a pid reused meanwhile) */
		if (*root_fd >= 0 && (start_ticks(dfd, &again) || again != start)) {
			close(*root_fd);
			*root_fd = -1;
		}
		if (*root_fd >= 0) {
			*uid = dst.st_uid;
			*kind = "process";
			goto out;
		}
		if (errno == EACCES || errno == EPERM) {
			snprintf(why, why_sz,
				 "the root of process %u cannot be opened (no permission)", pid);
			goto out;
		}
	}
	if (span.container[0]) {
		snprintf(why, why_sz,
			 "process %u is gone (or its pid is another process's now) and it ran in a "
			 "container: its files are not on this host's root",
			 pid);
		goto out;
	}
	*root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	*kind = "host";
	*note = "the process is gone (or its pid is another process's now): the file is this "
		"host's";
	if (*root_fd < 0)
		snprintf(why, why_sz, "this host's root cannot be opened");
out:
	if (dfd >= 0)
		close(dfd);
	return 0;
}

/* ---- the answer ---- */

static void lines_json(struct json_out *j, struct source_text *t)
{
	char *s = t->buf, *e;
	size_t i;

	json_out__raw(j, "[");
	for (i = 0; i < t->line_cnt; i++, s = e + 1) {
		e = strchr(s, '\n');
		if (!e)
			e = s + strlen(s);
		*e = '\0';
		json_out__raw(j, i ? "," : "");
		json_out__str(j, s);
	}
	json_out__raw(j, "]");
}

int source_view__json(struct store *st, const struct profile *p, const struct store_filter *f,
		      const char *function, const char *file, struct json_out *j, char *why,
		      size_t why_sz)
{
	struct file_count files[FILES_MAX];
	struct pid_count *pids = NULL;
	struct frame_match *m = NULL;
	struct heat h = { 0 };
	struct source_text text = { 0 };
	const char *kind = NULL, *note = NULL, *read_why = NULL, *comm = NULL;
	char reason[256] = "";
	size_t i, n = profile__sample_cnt(p), file_cnt = 0, pid_cnt = 0;
	uint64_t named = 0;
	int status = 0, root_fd = -1, err;
	uid_t uid;

	m = match_frames(p, function);
	pids = calloc(PIDS_MAX, sizeof(*pids));
	if (!m || !pids) {
		snprintf(why, why_sz, "out of memory");
		status = 503;
		goto out;
	}
	for (i = 0; i < n; i++) { /* the function's samples and its files */
		const struct profile_agg_sample *s = profile__sample(p, i);
		const uint32_t *fr;
		const char *seen[8];
		uint32_t cnt, k, seen_cnt = 0, x;
		bool has = false;

		fr = profile__stack(p, s->stack, &cnt);
		for (k = 0; k < cnt; k++) {
			if (fr[k] > profile__frame_cnt(p) || !m[fr[k]].named)
				continue;
			has = true;
			for (x = 0; m[fr[k]].file && x < seen_cnt && seen[x] != m[fr[k]].file; x++)
				;
			if (m[fr[k]].file && x == seen_cnt && seen_cnt < 8) {
				seen[seen_cnt++] = m[fr[k]].file;
				count_file(files, &file_cnt, m[fr[k]].file, s->count);
			}
		}
		if (has)
			named = profile__count_add(named, s->count);
	}
	if (!named) {
		snprintf(why, why_sz, "no function of that name in this range");
		status = 404;
		goto out;
	}
	qsort(files, file_cnt, sizeof(files[0]), by_samples_desc);
	for (i = 0; file && i < file_cnt && strcmp(files[i].file, file); i++)
		;
	if (file && i == file_cnt) {
		snprintf(why, why_sz, "no frame of the function names that file in this range");
		status = 404;
		goto out;
	}
	json_out__raw(j, "{\"function\":");
	json_out__str(j, function);
	json_out__raw_u64(j, ",\"samples\":", named);
	json_out__raw(j, ",\"files\":[");
	for (i = 0; i < file_cnt; i++) {
		json_out__raw(j, i ? ",{\"file\":" : "{\"file\":");
		json_out__str(j, files[i].file);
		json_out__raw_u64(j, ",\"samples\":", files[i].samples);
		json_out__raw(j, "}");
	}
	json_out__raw(j, "]");
	if (!file_cnt) {
		json_out__raw(j, ",\"file\":null,\"heat\":[],\"lines\":null,\"reason\":");
		json_out__str(j, "no line information: the function's frames carry no source file "
				 "(unsymbolized native code, or a runtime without lines)");
		json_out__raw(j, "}");
		goto out;
	}
	h.file = files[file ? i : 0].file;
	for (i = 0; i < n; i++) {
		const struct profile_agg_sample *s = profile__sample(p, i);

		if (stack_has(p, s, m, h.file))
			count_pid(pids, &pid_cnt, s);
	}
	qsort(pids, pid_cnt, sizeof(pids[0]), pid_by_samples_desc);
	h.pid = pids[0].pid;
	comm = pids[0].comm;
	for (i = 1; i <= profile__frame_cnt(p); i++)
		if (m[i].file == h.file) {
			const struct profile_frame *fr = profile__frame(p, (uint32_t)i);

			h.kind = fr->kind;
			h.runtime = fr->runtime;
			break;
		}
	if (heat_fill(&h, p)) {
		snprintf(why, why_sz, "out of memory");
		status = 503;
		goto out;
	}
	err = process_root(st, f, h.pid, comm, &root_fd, &uid, &kind, &note, reason,
			   sizeof(reason));
	if (err) {
		snprintf(why, why_sz, "store error: %s", strerror(-err));
		status = err == -ENOMEM ? 503 : 500;
		goto out;
	}
	if (root_fd >= 0 && source_file__read(root_fd, h.file, uid, &text, &read_why))
		snprintf(reason, sizeof(reason), "%s", read_why);
	json_out__raw(j, ",\"file\":");
	json_out__str(j, h.file);
	json_out__raw_u64(j, ",\"pid\":", h.pid);
	json_out__raw(j, ",\"comm\":");
	json_out__str(j, comm);
	json_out__raw(j, ",\"pids\":[");
	for (i = 0; i < pid_cnt && i < PIDS_LISTED; i++) {
		json_out__raw_u64(j, i ? ",{\"pid\":" : "{\"pid\":", pids[i].pid);
		json_out__raw_u64(j, ",\"samples\":", pids[i].samples);
		json_out__raw(j, "}");
	}
	json_out__raw(j, "],\"root\":");
	json_out__str(j, kind);
	json_out__raw(j, ",\"note\":");
	json_out__str(j, note);
	json_out__raw_u64(j, ",\"process_samples\":", h.samples);
	json_out__raw_u64(j, ",\"file_samples\":", h.file_samples);
	json_out__raw(j, ",\"heat\":[");
	for (i = 1, n = 0; i <= h.max_line; i++) {
		if (!h.total[i] && !h.self[i])
			continue;
		json_out__raw_u64(j, n++ ? ",[" : "[", i);
		json_out__raw_u64(j, ",", h.self[i]);
		json_out__raw_u64(j, ",", h.total[i]);
		json_out__raw(j, "]");
	}
	json_out__raw(j, "],\"lines\":");
	if (text.buf)
		lines_json(j, &text);
	else
		json_out__raw(j, "null");
	json_out__raw(j, ",\"reason\":");
	json_out__str(j, reason[0] ? reason : NULL);
	json_out__raw(j, "}");
out:
	if (root_fd >= 0)
		close(root_fd);
	source_text__free(&text);
	free(h.self);
	free(h.total);
	free(h.stamp);
	free(pids);
	free(m);
	return status;
}
