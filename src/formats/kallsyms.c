/* Kernel symbol table parsed from a kallsyms-format file (see kallsyms.h for the contract).
 *
 * The file is read in KALLSYMS_CHUNK pieces and parsed line by line into what lookups need:
 * an entry per symbol (address, name offset, module offset) and one pool of names holding
 * only text symbols' names and each run of a module's name once. The file's text (addresses,
 * type letters, data symbols' names: 5.4 MB on 6.18 with 121,000 symbols) is never held:
 * the agent kept 7.3 MiB of it resident for its whole run. Invariants: sym[] is sorted by
 * address with unique addresses; the pool is smaller than KALLSYMS_BUF_MAX (< 2 GiB), so
 * 31-bit offsets suffice; pool offset 0 is an empty string, so module offset 0 means "core
 * kernel" and name offset 0 "no name" (a boundary).
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

#define KALLSYMS_BUF_MAX (256u << 20) /* of the file's text; the pool is smaller */
#define KALLSYMS_CHUNK (64u << 10)    /* longer than any line (names stop at 512 bytes) */
#define KSYM_TEXT (1u << 31)          /* flag in mod_off */

struct ksym {
	uint64_t addr;
	uint32_t name_off; /* in pool; 0 for a boundary (not text) */
	uint32_t mod_off;  /* KSYM_TEXT | offset of the module name in pool, 0 if none */
};

struct kallsyms {
	char *pool;
	struct ksym *sym;
	size_t cnt;
};

/* The parser's state across chunks. */
struct loader {
	struct kallsyms *ks;
	size_t sym_cap, pool_len, pool_cap;
	uint32_t last_mod; /* pool offset of the last module name added, 0 if none yet */
	size_t n;          /* entries parsed */
	bool sorted, nonzero;
};

static bool ksym__is_text(const struct ksym *s)
{
	return s->mod_off & KSYM_TEXT;
}

static uint32_t ksym__mod(const struct ksym *s)
{
	return s->mod_off & ~KSYM_TEXT;
}

/* Appends len bytes of str and a NUL to the pool: its offset, or 0 when out of memory. */
static uint32_t pool_add(struct loader *l, const char *str, size_t len)
{
	uint32_t off = (uint32_t)l->pool_len;

	if (array__reserve_bounded((void **)&l->ks->pool, &l->pool_cap, l->pool_len + len + 1, 1,
				   256u << 10, KALLSYMS_BUF_MAX))
		return 0;
	memcpy(l->ks->pool + l->pool_len, str, len);
	l->ks->pool[l->pool_len + len] = '\0';
	l->pool_len += len + 1;
	return off;
}

/* Parses the line [line, line + len) (no newline) into a new entry. 0 (a malformed line is
 * skipped) or -ENOMEM.
 */
static int parse_line(struct loader *l, const char *line, size_t len)
{
	const char *p = line, *end = line + len, *name, *mod = NULL;
	size_t digits = 0, name_len, mod_len = 0;
	struct ksym s = { 0 };
	bool text;
	int d;

	while (p < end && (d = hex_digit(*p)) >= 0) {
		s.addr = (s.addr << 4) | (uint64_t)d;
		p++;
		digits++;
	}
	if (digits == 0 || digits > 16 || end - p < 4 || p[0] != ' ' || p[2] != ' ')
		return 0;
	text = p[1] == 't' || p[1] == 'T' || p[1] == 'w' || p[1] == 'W';
	name = p + 3;
	p = name;
	while (p < end && *p != '\t' && *p != ' ')
		p++;
	name_len = (size_t)(p - name);
	if (!name_len)
		return 0;
	if (p < end && *p == '\t' && end - p > 2 && p[1] == '[') {
		const char *q = p + 2;

		while (q < end && *q != ']')
			q++;
		if (q < end && q > p + 2) {
			mod = p + 2;
			mod_len = (size_t)(q - mod);
		}
	}
	if (array__reserve(((void **)&l->ks->sym), &l->sym_cap, l->n + 1, sizeof(s)))
		return -ENOMEM;
	if (mod) { /* a module's symbols come in runs: its name once per run */
		if (!l->last_mod || strncmp(l->ks->pool + l->last_mod, mod, mod_len) ||
		    l->ks->pool[l->last_mod + mod_len])
			l->last_mod = pool_add(l, mod, mod_len);
		if (!l->last_mod)
			return -ENOMEM;
		s.mod_off = l->last_mod;
	}
	if (text) {
		s.name_off = pool_add(l, name, name_len);
		if (!s.name_off)
			return -ENOMEM;
		s.mod_off |= KSYM_TEXT;
	}
	l->nonzero |= s.addr != 0;
	if (l->n && l->ks->sym[l->n - 1].addr > s.addr)
		l->sorted = false;
	l->ks->sym[l->n++] = s;
	return 0;
}

/* Reads fd to its end, line by line. 0, -EFBIG (over KALLSYMS_BUF_MAX), -ENOMEM or -errno. */
static int read_lines(struct loader *l, int fd)
{
	char *buf = malloc(KALLSYMS_CHUNK);
	size_t have = 0, total = 0;
	bool skipping = false; /* inside a line longer than the chunk: malformed */
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + have, KALLSYMS_CHUNK - have);
		size_t off = 0;
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		total += (size_t)n;
		if (total > KALLSYMS_BUF_MAX) {
			err = -EFBIG;
			break;
		}
		have += (size_t)n;
		while ((nl = memchr(buf + off, '\n', have - off))) {
			if (!skipping && (err = parse_line(l, buf + off, (size_t)(nl - buf) - off)))
				goto out;
			skipping = false;
			off = (size_t)(nl - buf) + 1;
		}
		if (n == 0) { /* the last line may lack its newline */
			if (have > off && !skipping)
				err = parse_line(l, buf + off, have - off);
			break;
		}
		if (off == 0 && have == KALLSYMS_CHUNK) { /* no newline in a whole chunk */
			skipping = true;
			have = 0;
			continue;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
out:
	free(buf);
	return err;
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
	struct loader l = { .sorted = true };
	int fd = -1, err;

	l.ks = calloc(1, sizeof(*l.ks));
	if (l.ks)
		pool_add(&l, "", 0); /* offset 0: the empty string */
	if (!l.pool_len) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = read_lines(&l, fd);
	if (err)
		goto cleanup;
	if (l.n == 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (!l.nonzero) {
		err = -EPERM;
		goto cleanup;
	}
	if (!l.sorted)
		qsort(l.ks->sym, l.n, sizeof(*l.ks->sym), ksym_cmp);

	/* one entry per address: the first text symbol in file order, else the first symbol.
	 * Groups are in file order (input sorted by address) or text-first (ksym_cmp).
	 */
	for (size_t i = 0; i < l.n; i++) {
		struct ksym *last = l.ks->cnt ? &l.ks->sym[l.ks->cnt - 1] : NULL;

		if (last && last->addr == l.ks->sym[i].addr) {
			if (!ksym__is_text(last) && ksym__is_text(&l.ks->sym[i]))
				*last = l.ks->sym[i];
			continue;
		}
		l.ks->sym[l.ks->cnt++] = l.ks->sym[i];
	}
	/* give back the growth's slack (realloc down cannot fail to keep the data) */
	array__reserve_exact((void **)&l.ks->sym, l.ks->cnt, sizeof(*l.ks->sym));
	array__reserve_exact((void **)&l.ks->pool, l.pool_len, 1);
	err = 0;

cleanup:
	if (fd >= 0)
		close(fd);
	if (err) {
		kallsyms__free(l.ks);
		errno = -err;
		return NULL;
	}
	return l.ks;
}

void kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->pool);
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
		*module = ksym__mod(s) ? ks->pool + ksym__mod(s) : NULL;
	return ks->pool + s->name_off;
}
