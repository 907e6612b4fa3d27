/* Finding and copying out OpenTelemetry's process context (process_context.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proc/process_context.h"

static const char *const mapping_names[] = {
	"[anon_shmem:OTEL_CTX]",
	"[anon:OTEL_CTX]",
	"/memfd:OTEL_CTX",
};

/* The start address of the maps line [line, eol) when its name is a process context's. */
static uint64_t line_context(const char *line, const char *eol)
{
	const char *s = line;
	uint64_t start = 0;
	size_t i, len;
	int field;

	for (; s < eol && *s != '-'; s++) {
		int c = *s, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return 0;
		if (start >> 60)
			return 0;
		start = start << 4 | (uint64_t)d;
	}
	/* range, perms, offset, dev, inode: the name is what follows, after spaces */
	for (field = 0; field < 5; field++) {
		while (s < eol && *s != ' ')
			s++;
		while (s < eol && *s == ' ')
			s++;
	}
	len = (size_t)(eol - s);
	for (i = 0; i < sizeof(mapping_names) / sizeof(mapping_names[0]); i++) {
		size_t n = strlen(mapping_names[i]);

		if (len >= n && !memcmp(s, mapping_names[i], n))
			return start;
	}
	return 0;
}

static uint64_t find_in(const char *text, size_t len)
{
	const char *end = text + len, *at = text, *line, *eol;
	uint64_t start;

	/* memchr for the 'O' (upper case: rare in maps text) then a compare: glibc's memmem
	 * was 9x slower than memchr on a 3000-line maps text
	 */
	while (at < end && (at = memchr(at, 'O', (size_t)(end - at)))) {
		if ((size_t)(end - at) < 8 || memcmp(at, "OTEL_CTX", 8)) {
			at++;
			continue;
		}
		for (line = at; line > text && line[-1] != '\n'; line--)
			;
		eol = memchr(at, '\n', (size_t)(end - at));
		if (!eol)
			eol = end;
		start = line_context(line, eol);
		if (start)
			return start;
		at = eol;
	}
	return 0;
}

uint64_t process_context__find_in_maps(const char *text)
{
	return text ? find_in(text, strlen(text)) : 0;
}

uint64_t process_context__probe(pid_t pid)
{
	char path[64], buf[65536];
	size_t have = 0, total = 0;
	uint64_t start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (!start && total < PCTX_MAPS_READ_MAX) {
		const char *last;

		n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		total += (size_t)n;
		last = memrchr(buf, '\n', have);
		if (!last) { /* one line longer than the buffer: not a line of ours */
			have = 0;
			continue;
		}
		start = find_in(buf, (size_t)(last + 1 - buf));
		have -= (size_t)(last + 1 - buf);
		memmove(buf, last + 1, have);
	}
	if (!start && have && total < PCTX_MAPS_READ_MAX)
		start = find_in(buf, have);
	close(fd);
	return start;
}

static int read_mem(pid_t pid, uint64_t addr, void *buf, size_t size)
{
	struct iovec local = { buf, size }, remote = { (void *)(uintptr_t)addr, size };
	ssize_t n;

	if (addr + size < addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)size)
		return 0;
	return n < 0 ? -errno : -EFAULT;
}

enum pctx_read_err process_context__read(pid_t pid, uint64_t addr, uint64_t known_ns, void *buf,
					 size_t *len, uint64_t *published_ns, unsigned int *tries)
{
	struct pctx_header h;
	uint64_t again;
	unsigned int i;
	enum pctx_read_err err = PCTX_TORN;

	*len = 0;
	*published_ns = 0;
	for (i = 1; i <= PCTX_READ_TRIES; i++) {
		int rerr;

		*tries = i;
		rerr = read_mem(pid, addr, &h, sizeof(h));
		if (rerr)
			return rerr == -ESRCH ? PCTX_NO_PROCESS : PCTX_GONE;
		if (!h.version && !memcmp(h.signature, "\0\0\0\0\0\0\0\0", 8))
			return PCTX_NOT_READY;
		if (memcmp(h.signature, "OTEL_CTX", 8) || (h.version != 1 && h.version != 2))
			return PCTX_BAD_HEADER;
		if (!h.published_ns)
			continue; /* being updated */
		if (h.published_ns == known_ns) {
			*published_ns = known_ns;
			return PCTX_UNCHANGED;
		}
		*published_ns = h.published_ns; /* also the key of a payload refused */
		if (h.payload_size > PCTX_PAYLOAD_MAX)
			return PCTX_TOO_BIG;
		atomic_thread_fence(memory_order_seq_cst);
		if (h.payload_size && read_mem(pid, h.payload, buf, h.payload_size)) {
			err = PCTX_BAD_PAYLOAD; /* unless it was being moved: read again */
			if (read_mem(pid, addr + 16, &again, sizeof(again)) ||
			    again == h.published_ns)
				return PCTX_BAD_PAYLOAD;
			continue;
		}
		atomic_thread_fence(memory_order_seq_cst);
		if (read_mem(pid, addr + 16, &again, sizeof(again)))
			return PCTX_GONE;
		if (again != h.published_ns) {
			err = PCTX_TORN;
			continue;
		}
		*len = h.payload_size;
		return PCTX_OK;
	}
	*published_ns = 0;
	return err == PCTX_BAD_PAYLOAD ? PCTX_BAD_PAYLOAD : PCTX_TORN;
}
