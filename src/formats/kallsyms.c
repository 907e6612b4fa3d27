/* Kernel symbol table parsed from a kallsyms-format file (see kallsyms.h for the contract).
 *
 * The whole file is read into one buffer that the object owns; names and module names are
 * NUL-terminated in place and referenced by offset, so loading does one allocation per
 * doubling of the buffer plus the entry array. Invariants: sym[] is sorted by address with
 * unique addresses; buf is smaller than KALLSYMS_BUF_MAX (< 2 GiB), so 31-bit offsets suffice;
 * module offset 0 means "core kernel" (offset 0 is the first line's address, never a module).
 */
#include "formats/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/cmp.h"
#include "base/hex.h"

#define KALLSYMS_BUF_MAX (256u << 20)
#define KALLSYMS_BUF_INIT (4u << 20)
#define KSYM_TEXT (1u << 31) /* flag in mod_off */

struct ksym {
	uint64_t addr;
	uint32_t name_off;
	uint32_t mod_off; /* KSYM_TEXT | offset of the module name, 0 if none */
};

struct kallsyms {
	char *buf;
	struct ksym *sym;
	size_t cnt;
};

static bool ksym__is_text(const struct ksym *s)
{
	return s->mod_off & KSYM_TEXT;
}

static uint32_t ksym__mod(const struct ksym *s)
{
	return s->mod_off & ~KSYM_TEXT;
}

/* Read all of fd into a NUL-terminated buffer. */
static int kallsyms__read(int fd, char **out, size_t *out_sz)
{
	size_t cap = KALLSYMS_BUF_INIT, len = 0;
	char *buf = malloc(cap);
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		err = array__reserve_bounded((void **)&buf, &cap, len + 2, 1, KALLSYMS_BUF_INIT,
					     KALLSYMS_BUF_MAX);
		if (err) {
			err = err == -E2BIG ? -EFBIG : err;
			goto cleanup;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	*out = buf;
	*out_sz = len;
	buf = NULL;

cleanup:
	free(buf);
	return err;
}

/* Parse the line at buf[off] ending at buf[eol] ('\n' or the final NUL) into s, terminating
 * its strings in place. false for a malformed line.
 */
static bool kallsyms__parse_line(char *buf, size_t off, size_t eol, struct ksym *s)
{
	uint64_t addr = 0;
	size_t p = off, name, digits = 0;
	char type;
	int d;

	while (p < eol && (d = hex_digit(buf[p])) >= 0) {
		addr = (addr << 4) | (uint64_t)d;
		p++;
		digits++;
	}
	if (digits == 0 || digits > 16 || eol - p < 4 || buf[p] != ' ' || buf[p + 2] != ' ')
		return false;
	type = buf[p + 1];
	name = p + 3;
	p = name;
	while (p < eol && buf[p] != '\t' && buf[p] != ' ')
		p++;
	if (p == name)
		return false;

	s->addr = addr;
	s->name_off = (uint32_t)name;
	s->mod_off = 0;
	if (p < eol && buf[p] == '\t' && p + 2 < eol && buf[p + 1] == '[') {
		size_t mod = p + 2, q = mod;

		while (q < eol && buf[q] != ']')
			q++;
		if (q < eol && q > mod) {
			buf[q] = '\0';
			s->mod_off = (uint32_t)mod;
		}
	}
	buf[p] = '\0';
	if (type == 't' || type == 'T' || type == 'w' || type == 'W')
		s->mod_off |= KSYM_TEXT;
	return true;
}

/* Address order; at one address text first, then file order (name_off grows with it). */
static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	/* text (true) first */
	return cmp_u64(x->addr, y->addr) ?: cmp_u64(ksym__is_text(y), ksym__is_text(x)) ?:
		cmp_u64(x->name_off, y->name_off);
}

struct kallsyms *kallsyms__load(const char *path)
{
	struct kallsyms *ks = NULL;
	size_t len = 0, cap = 0, off = 0, n = 0;
	bool sorted = true, nonzero = false;
	int fd = -1, err;

	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = kallsyms__read(fd, &ks->buf, &len);
	if (err)
		goto cleanup;

	/* a symbol line is at least "0 t x\n": bounds the entry count before allocating */
	cap = len / 6 + 1;
	ks->sym = malloc(cap * sizeof(*ks->sym));
	if (!ks->sym) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (off < len) {
		char *nl = memchr(ks->buf + off, '\n', len - off);
		size_t eol = nl ? (size_t)(nl - ks->buf) : len;
		struct ksym *s = &ks->sym[n];

		if (n < cap && kallsyms__parse_line(ks->buf, off, eol, s)) {
			nonzero |= s->addr != 0;
			if (n && ks->sym[n - 1].addr > s->addr)
				sorted = false;
			n++;
		}
		off = eol + 1;
	}
	if (n == 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (!nonzero) {
		err = -EPERM;
		goto cleanup;
	}
	if (!sorted)
		qsort(ks->sym, n, sizeof(*ks->sym), ksym_cmp);

	/* one entry per address: the first text symbol in file order, else the first symbol.
	 * Groups are in file order (input sorted by address) or text-first (ksym_cmp).
	 */
	ks->cnt = 0;
	for (size_t i = 0; i < n; i++) {
		struct ksym *last = ks->cnt ? &ks->sym[ks->cnt - 1] : NULL;

		if (last && last->addr == ks->sym[i].addr) {
			if (!ksym__is_text(last) && ksym__is_text(&ks->sym[i]))
				*last = ks->sym[i];
			continue;
		}
		ks->sym[ks->cnt++] = ks->sym[i];
	}
	err = 0;

cleanup:
	if (fd >= 0)
		close(fd);
	if (err) {
		kallsyms__free(ks);
		errno = -err;
		return NULL;
	}
	return ks;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->buf);
	free(ks->sym);
	free(ks);
}

size_t kallsyms__cnt(const struct kallsyms *ks)
{
	return ks->cnt;
}

const char *kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, uint64_t *offset,
			     const char **module)
{
	size_t lo = upper_bound_u64(ks->sym, ks->cnt, sizeof(*ks->sym), offsetof(struct ksym, addr),
				    addr);
	const struct ksym *s, *next;
	uint64_t end;

	if (lo == 0)
		return NULL;
	s = &ks->sym[lo - 1];
	if (!ksym__is_text(s))
		return NULL;
	next = lo < ks->cnt ? &ks->sym[lo] : NULL;
	end = next ? next->addr : UINT64_MAX;
	if (!next || ksym__mod(s) || ksym__mod(next)) {
		if (s->addr + KALLSYMS_MODULE_SYM_MAX > s->addr &&
		    s->addr + KALLSYMS_MODULE_SYM_MAX < end)
			end = s->addr + KALLSYMS_MODULE_SYM_MAX;
	}
	if (addr >= end)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	if (module)
		*module = ksym__mod(s) ? ks->buf + ksym__mod(s) : NULL;
	return ks->buf + s->name_off;
}
