/* Parser of the /proc/PID/maps text format:
 *   start-end perms offset major:minor inode [path]
 * Every field of a line parsed is checked; a malformed line fails the whole parse with
 * -EINVAL (the kernel never writes one, so it means we are reading something else). The
 * process tracker's read skips the lines of mappings that are not executable unparsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "proc/live_thread.h"
#include "proc/maps.h"
#include "proc/process_context.h"

static const char *parse_hex(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	for (; *s; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (n >= 16)
			return NULL;
		v = v << 4 | (uint64_t)d;
	}
	if (!n)
		return NULL;
	*out = v;
	return s;
}

static const char *parse_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;

	for (; *s >= '0' && *s <= '9'; s++, n++) {
		if (v > (UINT64_MAX - 9) / 10)
			return NULL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (!n)
		return NULL;
	*out = v;
	return s;
}

static const char *expect(const char *s, char c)
{
	return s && *s == c ? s + 1 : NULL;
}

/* Parse one line [s, eol) into m; the path is copied into a new string. */
static int parse_line(const char *s, const char *eol, struct proc_map *m)
{
	static const char suffix[] = " (deleted)";
	uint64_t major, minor;
	const char *p;
	size_t len;
	char *path;

	s = parse_hex(s, &m->start);
	s = expect(s, '-');
	s = s ? parse_hex(s, &m->end) : NULL;
	s = expect(s, ' ');
	if (!s || eol - s < 5)
		return -EINVAL;
	m->perms = (s[0] == 'r' ? PROC_MAP_READ : 0) | (s[1] == 'w' ? PROC_MAP_WRITE : 0) |
		   (s[2] == 'x' ? PROC_MAP_EXEC : 0) | (s[3] == 's' ? PROC_MAP_SHARED : 0);
	s = expect(s + 4, ' ');
	s = s ? parse_hex(s, &m->offset) : NULL;
	s = expect(s, ' ');
	s = s ? parse_hex(s, &major) : NULL;
	s = expect(s, ':');
	s = s ? parse_hex(s, &minor) : NULL;
	s = expect(s, ' ');
	s = s ? parse_dec(s, &m->ino) : NULL;
	if (!s || s > eol || m->end < m->start || major > 0xfff || minor > 0xfffff)
		return -EINVAL;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	for (p = s; p < eol && *p == ' '; p++)
		;
	len = (size_t)(eol - p);
	m->deleted = 0;
	if (len >= sizeof(suffix) - 1 &&
	    !memcmp(eol - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1)) {
		len -= sizeof(suffix) - 1;
		m->deleted = 1;
	}
	path = malloc(len + 1);
	if (!path)
		return -ENOMEM;
	memcpy(path, p, len);
	path[len] = '\0';
	m->path = path;
	return 0;
}

/* Whether the line [s, eol) is of an executable mapping: its perms field (after the first
 * space) has 'x'. A line too short to hold the field counts as one (parse_line() rejects it).
 */
static bool line_exec(const char *s, const char *eol)
{
	const char *sp = memchr(s, ' ', (size_t)(eol - s));

	return !sp || eol - sp < 5 || sp[3] == 'x';
}

/* exec_only: the other lines are skipped unparsed (a process's maps are mostly data, stacks
 * and heaps: parsing and copying them was half of what a rescan cost us).
 */
static int parse_text(const char *text, bool exec_only, struct proc_maps *out)
{
	size_t cap = 0;
	const char *s = text;
	int err = 0;

	out->maps = NULL;
	out->cnt = 0;
	out->otel_ctx_start = process_context__find_in_maps(text);
	while (*s) {
		const char *eol = strchr(s, '\n');

		if (!eol)
			eol = s + strlen(s);
		if (eol > s && (!exec_only || line_exec(s, eol))) {
			if (array__reserve_bounded((void **)&out->maps, &cap, out->cnt + 1,
						   sizeof(*out->maps), 64, SIZE_MAX / 2)) {
				err = -ENOMEM;
				goto fail;
			}
			err = parse_line(s, eol, &out->maps[out->cnt]);
			if (err)
				goto fail;
			out->cnt++;
		}
		s = *eol ? eol + 1 : eol;
	}
	return 0;
fail:
	proc_maps__free(out);
	return err;
}

int proc_maps__parse(const char *text, struct proc_maps *out)
{
	return parse_text(text, false, out);
}

static int read_maps_file(const char *path, bool exec_only, struct proc_maps *out);

/* A thread's maps, when they list anything. */
static int try_maps_file(const char *path, void *out)
{
	int err = read_maps_file(path, false, out);

	if (!err && !((struct proc_maps *)out)->cnt)
		err = -ESRCH;
	return err;
}

static int try_maps_file_exec(const char *path, void *out)
{
	int err = read_maps_file(path, true, out);

	if (!err && !((struct proc_maps *)out)->cnt)
		err = -ESRCH;
	return err;
}

static int read_maps(pid_t pid, const char *path, bool exec_only, struct proc_maps *out)
{
	char buf[64];
	int err;

	if (path)
		return read_maps_file(path, exec_only, out);
	snprintf(buf, sizeof(buf), "/proc/%d/maps", (int)pid);
	err = read_maps_file(buf, exec_only, out);
	if (!err && !out->cnt) {
		/* empty: a kernel thread, or a leader that exited before its other threads */
		struct proc_maps alt;

		if (!live_thread__try(pid, "maps", exec_only ? try_maps_file_exec : try_maps_file,
				      &alt)) {
			proc_maps__free(out);
			*out = alt;
		}
	}
	return err;
}

int proc_maps__read(pid_t pid, const char *path, struct proc_maps *out)
{
	return read_maps(pid, path, false, out);
}

int proc_maps__read_exec(pid_t pid, const char *path, struct proc_maps *out)
{
	return read_maps(pid, path, true, out);
}

/* -ESRCH for a file that is missing (the process is gone); an empty one (no mm) lists nothing. */
static int read_maps_file(const char *path, bool exec_only, struct proc_maps *out)
{
	char *text = NULL;
	size_t len = 0, cap = 0;
	int fd, err = 0;

	out->maps = NULL;
	out->cnt = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			if (array__reserve_bounded((void **)&text, &cap, len + 4096, 1, 65536,
						   SIZE_MAX / 2)) {
				err = -ENOMEM;
				goto out;
			}
		}
		n = read(fd, text + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno == ESRCH ? -ESRCH : -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	text[len] = '\0';
	err = parse_text(text, exec_only, out);
out:
	free(text);
	close(fd);
	return err;
}

void proc_maps__free(struct proc_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->cnt; i++)
		free((char *)m->maps[i].path);
	free(m->maps);
	m->maps = NULL;
	m->cnt = 0;
}
