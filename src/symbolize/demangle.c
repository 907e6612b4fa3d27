/* Symbol demangling. See demangle.h for what is covered.
 *
 * C++ goes to libstdc++'s __cxa_demangle (extern "C" in the Itanium C++ ABI, so it is declared
 * here by hand and linked with -lstdc++). Rust legacy names are Itanium-shaped (_ZN...E) with
 * a trailing hash segment and $..$ escapes; Rust v0 names get a small recursive-descent
 * printer over the v0 grammar. The v0 printer writes into a fixed buffer, bounds recursion at
 * V0_MAX_DEPTH, and only follows back-references that point backwards, so every input ends.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/demangle.h"

/* libstdc++ (Itanium C++ ABI, extern "C"). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define V0_MAX_DEPTH 64

static bool is_rust_legacy_hash(const char *s, size_t len)
{
	size_t i;

	if (len != 17 || s[0] != 'h')
		return false;
	for (i = 1; i < len; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

/* Whether a _ZN...E name ends in a 17h<16 hex> segment. */
static bool is_rust_legacy(const char *name)
{
	const char *p = name + 3, *last = NULL;
	size_t len, last_len = 0;
	char *end;

	if (strncmp(name, "_ZN", 3))
		return false;
	while (*p && *p != 'E') {
		if (!isdigit((unsigned char)*p))
			return false;
		len = strtoul(p, &end, 10);
		if (!len || strnlen(end, len) < len)
			return false;
		last = end;
		last_len = len;
		p = end + len;
	}
	return *p == 'E' && last && is_rust_legacy_hash(last, last_len);
}

enum demangle_kind demangle__kind(const char *name)
{
	if (!name)
		return DEMANGLE_NONE;
	if (!strncmp(name, "_R", 2) && name[2] && isupper((unsigned char)name[2]))
		return DEMANGLE_RUST_V0;
	if (is_rust_legacy(name))
		return DEMANGLE_RUST;
	if (!strncmp(name, "_Z", 2))
		return DEMANGLE_CXX;
	return DEMANGLE_NONE;
}

/* ---- output buffer ---- */

struct out_buf {
	char *s;
	size_t cap, len;
	int err;
	bool muted; /* parse without printing (impl paths, instantiating crate) */
};

static void out__mem(struct out_buf *o, const char *p, size_t n)
{
	if (o->err || o->muted)
		return;
	if (n >= o->cap - o->len) {
		o->err = -ENOSPC;
		return;
	}
	memcpy(o->s + o->len, p, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void out__str(struct out_buf *o, const char *s)
{
	out__mem(o, s, strlen(s));
}

static void out__u64(struct out_buf *o, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	out__str(o, num);
}

/* ---- Rust legacy ---- */

/* Prints one legacy identifier segment, decoding $..$ escapes and ".." as "::". */
static void legacy__ident(struct out_buf *o, const char *s, size_t len)
{
	static const struct {
		const char *code, *text;
	} escapes[] = {
		{ "SP", "@" }, { "BP", "*" }, { "RF", "&" }, { "LT", "<" },
		{ "GT", ">" }, { "LP", "(" }, { "RP", ")" }, { "C", "," },
	};
	size_t i = 0, j, k;
	char *end;
	unsigned long cp;

	if (len >= 2 && s[0] == '_' && s[1] == '$')
		i = 1;
	while (i < len && !o->err) {
		if (s[i] == '.' && i + 1 < len && s[i + 1] == '.') {
			out__str(o, "::");
			i += 2;
		} else if (s[i] == '$') {
			for (j = i + 1; j < len && s[j] != '$'; j++)
				;
			if (j >= len) {
				o->err = -EINVAL;
				return;
			}
			for (k = 0; k < sizeof(escapes) / sizeof(escapes[0]); k++) {
				if (strlen(escapes[k].code) == j - i - 1 &&
				    !strncmp(s + i + 1, escapes[k].code, j - i - 1))
					break;
			}
			if (k < sizeof(escapes) / sizeof(escapes[0])) {
				out__str(o, escapes[k].text);
			} else if (s[i + 1] == 'u' && j - i - 2 <= 8) {
				cp = strtoul(s + i + 2, &end, 16);
				if (end != s + j || cp < 0x20 || cp > 0x7e) {
					o->err = -EINVAL;
					return;
				}
				char c = (char)cp;
				out__mem(o, &c, 1);
			} else {
				o->err = -EINVAL;
				return;
			}
			i = j + 1;
		} else {
			out__mem(o, s + i, 1);
			i++;
		}
	}
}

static int demangle__rust_legacy(const char *name, struct out_buf *o)
{
	const char *p = name + 3;
	bool first = true;
	size_t len;
	char *end;

	while (*p != 'E' && !o->err) {
		len = strtoul(p, &end, 10);
		p = end;
		if (*(p + len) == 'E' && is_rust_legacy_hash(p, len))
			break; /* the hash: not printed */
		if (!first)
			out__str(o, "::");
		legacy__ident(o, p, len);
		first = false;
		p += len;
	}
	return o->err;
}

/* ---- Rust v0 ---- */

struct v0 {
	const char *s; /* the name after "_R" */
	size_t len, pos;
	struct out_buf *o;
	int depth;
	uint64_t bound_lifetimes; /* lifetimes bound by enclosing for<...> binders */
};

static int v0__path(struct v0 *p, bool in_value);
static int v0__type(struct v0 *p);

static bool v0__eat(struct v0 *p, char c)
{
	if (p->pos < p->len && p->s[p->pos] == c) {
		p->pos++;
		return true;
	}
	return false;
}

static char v0__next(struct v0 *p)
{
	return p->pos < p->len ? p->s[p->pos++] : '\0';
}

static char v0__peek(const struct v0 *p)
{
	return p->pos < p->len ? p->s[p->pos] : '\0';
}

/* <base-62-number>: "_" is 0, else digits then "_" for value + 1. */
static int v0__base62(struct v0 *p, uint64_t *out)
{
	uint64_t v = 0;
	char c;
	int d;

	if (v0__eat(p, '_')) {
		*out = 0;
		return 0;
	}
	while ((c = v0__next(p)) != '_') {
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'z')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'Z')
			d = c - 'A' + 36;
		else
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)d) / 62)
			return -EINVAL;
		v = v * 62 + (uint64_t)d;
	}
	if (v == UINT64_MAX)
		return -EINVAL;
	*out = v + 1;
	return 0;
}

/* Optional "s" <base-62-number> disambiguator (0 when absent). */
static int v0__disambiguator(struct v0 *p, uint64_t *out)
{
	uint64_t v;
	int err;

	*out = 0;
	if (!v0__eat(p, 's'))
		return 0;
	err = v0__base62(p, &v);
	if (!err)
		*out = v + 1;
	return err;
}

static int v0__decimal(struct v0 *p, size_t *out)
{
	size_t v = 0;

	if (!isdigit((unsigned char)v0__peek(p)))
		return -EINVAL;
	if (v0__peek(p) == '0') {
		p->pos++;
		*out = 0;
		return 0;
	}
	while (isdigit((unsigned char)v0__peek(p))) {
		if (v > (SIZE_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (size_t)(v0__next(p) - '0');
	}
	*out = v;
	return 0;
}

/* <undisambiguated-identifier>; punycode ("u") is not supported. */
static int v0__ident(struct v0 *p, const char **name, size_t *len)
{
	int err;

	if (v0__eat(p, 'u'))
		return -EINVAL;
	err = v0__decimal(p, len);
	if (err)
		return err;
	v0__eat(p, '_');
	if (*len > p->len - p->pos)
		return -EINVAL;
	*name = p->s + p->pos;
	p->pos += *len;
	return 0;
}

/* Follows a back-reference: parses at the earlier position, then comes back. */
static int v0__backref(struct v0 *p, int (*fn)(struct v0 *, bool), bool arg)
{
	size_t start = p->pos - 1, saved;
	uint64_t target;
	int err;

	err = v0__base62(p, &target);
	if (err || target >= start)
		return -EINVAL;
	saved = p->pos;
	p->pos = (size_t)target;
	err = fn(p, arg);
	p->pos = saved;
	return err;
}

static void v0__lifetime_name(struct v0 *p, uint64_t idx)
{
	char name[8];
	uint64_t depth;

	if (!idx) {
		out__str(p->o, "'_");
		return;
	}
	if (idx > p->bound_lifetimes) {
		p->o->err = -EINVAL;
		return;
	}
	depth = p->bound_lifetimes - idx;
	if (depth < 26)
		snprintf(name, sizeof(name), "'%c", (char)('a' + depth));
	else
		snprintf(name, sizeof(name), "'_%u", (unsigned)depth);
	out__str(p->o, name);
}

/* "G" binder: prints for<'a, ...> and binds that many lifetimes. */
static int v0__binder(struct v0 *p, uint64_t *bound)
{
	uint64_t n, i;
	int err;

	*bound = 0;
	if (!v0__eat(p, 'G'))
		return 0;
	err = v0__base62(p, &n);
	if (err || n >= 26)
		return -EINVAL;
	n++;
	out__str(p->o, "for<");
	for (i = 0; i < n; i++) {
		if (i)
			out__str(p->o, ", ");
		p->bound_lifetimes++;
		v0__lifetime_name(p, 1);
	}
	out__str(p->o, "> ");
	*bound = n;
	return 0;
}

static const char *v0__basic(char c)
{
	switch (c) {
	case 'a': return "i8";
	case 'b': return "bool";
	case 'c': return "char";
	case 'd': return "f64";
	case 'e': return "str";
	case 'f': return "f32";
	case 'h': return "u8";
	case 'i': return "isize";
	case 'j': return "usize";
	case 'l': return "i32";
	case 'm': return "u32";
	case 'n': return "i128";
	case 'o': return "u128";
	case 's': return "i16";
	case 't': return "u16";
	case 'u': return "()";
	case 'v': return "...";
	case 'x': return "i64";
	case 'y': return "u64";
	case 'z': return "!";
	case 'p': return "_";
	default: return NULL;
	}
}

static int v0__const(struct v0 *p, bool unused);

static int v0__const_data(struct v0 *p, char type)
{
	bool neg = false;
	uint64_t v = 0;
	int digits = 0;
	char c, buf[8];

	if (type == 'p') /* placeholder: no data */
		return 0;
	neg = v0__eat(p, 'n');
	while ((c = v0__next(p)) != '_') {
		if (!isxdigit((unsigned char)c) || ++digits > 16)
			return -EINVAL;
		v = v * 16 + (uint64_t)(isdigit((unsigned char)c) ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	switch (type) {
	case 'b':
		if (v > 1)
			return -EINVAL;
		out__str(p->o, v ? "true" : "false");
		return 0;
	case 'c':
		if (v < 0x20 || v > 0x7e)
			return -EINVAL;
		snprintf(buf, sizeof(buf), "'%c'", (char)v);
		out__str(p->o, buf);
		return 0;
	case 'a': case 's': case 'l': case 'x': case 'n': case 'i':
	case 'h': case 't': case 'm': case 'y': case 'o': case 'j':
		if (neg)
			out__str(p->o, "-");
		out__u64(p->o, v);
		return 0;
	default:
		return -EINVAL; /* str, ADT and other const generics: not supported */
	}
}

static int v0__const(struct v0 *p, bool unused)
{
	char type;
	int err;

	(void)unused;
	if (++p->depth > V0_MAX_DEPTH)
		return -EINVAL;
	if (v0__eat(p, 'B')) {
		err = v0__backref(p, v0__const, false);
	} else if (v0__eat(p, 'p')) {
		out__str(p->o, "_");
		err = 0;
	} else {
		type = v0__next(p);
		err = v0__basic(type) ? v0__const_data(p, type) : -EINVAL;
	}
	p->depth--;
	return err;
}

static int v0__generic_arg(struct v0 *p)
{
	uint64_t lt;
	int err;

	if (v0__eat(p, 'L')) {
		err = v0__base62(p, &lt);
		if (!err)
			v0__lifetime_name(p, lt);
		return err;
	}
	if (v0__eat(p, 'K'))
		return v0__const(p, false);
	return v0__type(p);
}

/* {<generic-arg>} "E", printed as "<a, b>" (the caller printed "::" if needed). With
 * keep_open, the closing ">" is left to the caller (dyn trait bindings follow).
 */
static int v0__generic_args(struct v0 *p, bool keep_open)
{
	int err = 0, n = 0;

	out__str(p->o, "<");
	while (!err && !v0__eat(p, 'E')) {
		if (p->pos >= p->len)
			return -EINVAL;
		if (n++)
			out__str(p->o, ", ");
		err = v0__generic_arg(p);
	}
	if (!keep_open)
		out__str(p->o, ">");
	return err;
}

/* A path in type position whose generic args may stay open for dyn bindings. Returns 1 when
 * the "<" is open, 0 when not, or -errno.
 */
static int v0__path_open(struct v0 *p)
{
	size_t saved;
	uint64_t target;
	int err;

	if (v0__eat(p, 'I')) {
		err = v0__path(p, false);
		err = err ?: v0__generic_args(p, true);
		return err ? err : 1;
	}
	if (v0__eat(p, 'B')) {
		size_t start = p->pos - 1;

		err = v0__base62(p, &target);
		if (err || target >= start || ++p->depth > V0_MAX_DEPTH)
			return -EINVAL;
		saved = p->pos;
		p->pos = (size_t)target;
		err = v0__path_open(p);
		p->pos = saved;
		p->depth--;
		return err;
	}
	err = v0__path(p, false);
	return err ? err : 0;
}

static int v0__dyn_bounds(struct v0 *p)
{
	uint64_t bound, lt;
	const char *name;
	size_t len;
	int err, open, n = 0;

	out__str(p->o, "dyn ");
	err = v0__binder(p, &bound);
	while (!err && !v0__eat(p, 'E')) {
		if (p->pos >= p->len)
			return -EINVAL;
		if (n++)
			out__str(p->o, " + ");
		open = v0__path_open(p);
		if (open < 0)
			return open;
		while (!err && v0__eat(p, 'p')) {
			out__str(p->o, open ? ", " : "<");
			open = 1;
			err = v0__ident(p, &name, &len);
			if (err)
				break;
			out__mem(p->o, name, len);
			out__str(p->o, " = ");
			err = v0__type(p);
		}
		if (open)
			out__str(p->o, ">");
	}
	p->bound_lifetimes -= bound;
	if (err || !v0__eat(p, 'L'))
		return err ? err : -EINVAL;
	err = v0__base62(p, &lt);
	if (!err && lt) {
		out__str(p->o, " + ");
		v0__lifetime_name(p, lt);
	}
	return err;
}

static int v0__fn_sig(struct v0 *p)
{
	uint64_t bound;
	const char *abi;
	size_t len, i;
	int err, n = 0;

	err = v0__binder(p, &bound);
	if (err)
		return err;
	if (v0__eat(p, 'U'))
		out__str(p->o, "unsafe ");
	if (v0__eat(p, 'K')) {
		out__str(p->o, "extern \"");
		if (v0__eat(p, 'C')) {
			out__str(p->o, "C");
		} else {
			err = v0__ident(p, &abi, &len);
			for (i = 0; !err && i < len; i++)
				out__mem(p->o, abi[i] == '_' ? "-" : abi + i, 1);
		}
		out__str(p->o, "\" ");
	}
	out__str(p->o, "fn(");
	while (!err && !v0__eat(p, 'E')) {
		if (p->pos >= p->len)
			return -EINVAL;
		if (n++)
			out__str(p->o, ", ");
		err = v0__type(p);
	}
	out__str(p->o, ")");
	if (!err && v0__peek(p) == 'u') {
		p->pos++;
	} else if (!err) {
		out__str(p->o, " -> ");
		err = v0__type(p);
	}
	p->bound_lifetimes -= bound;
	return err;
}

static int v0__type_backref(struct v0 *p, bool unused)
{
	(void)unused;
	return v0__type(p);
}

static int v0__type(struct v0 *p)
{
	const char *basic;
	uint64_t lt;
	char c;
	int err = 0, n = 0;

	if (++p->depth > V0_MAX_DEPTH)
		return -EINVAL;
	c = v0__next(p);
	basic = v0__basic(c);
	if (basic) {
		out__str(p->o, basic);
		goto out;
	}
	switch (c) {
	case 'A':
	case 'S':
		out__str(p->o, "[");
		err = v0__type(p);
		if (!err && c == 'A') {
			out__str(p->o, "; ");
			err = v0__const(p, false);
		}
		out__str(p->o, "]");
		break;
	case 'T':
		out__str(p->o, "(");
		while (!err && !v0__eat(p, 'E')) {
			if (p->pos >= p->len) {
				err = -EINVAL;
				break;
			}
			if (n++)
				out__str(p->o, ", ");
			err = v0__type(p);
		}
		if (n == 1)
			out__str(p->o, ",");
		out__str(p->o, ")");
		break;
	case 'R':
	case 'Q':
		out__str(p->o, "&");
		if (v0__eat(p, 'L')) {
			err = v0__base62(p, &lt);
			if (!err && lt) {
				v0__lifetime_name(p, lt);
				out__str(p->o, " ");
			}
		}
		if (c == 'Q')
			out__str(p->o, "mut ");
		err = err ?: v0__type(p);
		break;
	case 'P':
		out__str(p->o, "*const ");
		err = v0__type(p);
		break;
	case 'O':
		out__str(p->o, "*mut ");
		err = v0__type(p);
		break;
	case 'F':
		err = v0__fn_sig(p);
		break;
	case 'D':
		err = v0__dyn_bounds(p);
		break;
	case 'B':
		err = v0__backref(p, v0__type_backref, false);
		break;
	default:
		p->pos--;
		err = v0__path(p, false);
		break;
	}
out:
	p->depth--;
	return err;
}

/* Parses an impl path ([disambiguator] path) without printing it. */
static int v0__impl_path(struct v0 *p)
{
	bool muted = p->o->muted;
	uint64_t dis;
	int err;

	p->o->muted = true;
	err = v0__disambiguator(p, &dis);
	err = err ?: v0__path(p, false);
	p->o->muted = muted;
	return err;
}

static int v0__path(struct v0 *p, bool in_value)
{
	const char *name;
	uint64_t dis;
	size_t len;
	char c, ns;
	int err = 0;

	if (++p->depth > V0_MAX_DEPTH)
		return -EINVAL;
	c = v0__next(p);
	switch (c) {
	case 'C':
		err = v0__disambiguator(p, &dis);
		err = err ?: v0__ident(p, &name, &len);
		if (!err)
			out__mem(p->o, name, len);
		break;
	case 'M':
		err = v0__impl_path(p);
		out__str(p->o, "<");
		err = err ?: v0__type(p);
		out__str(p->o, ">");
		break;
	case 'X':
		err = v0__impl_path(p);
		/* fall through */
	case 'Y':
		out__str(p->o, "<");
		err = err ?: v0__type(p);
		out__str(p->o, " as ");
		err = err ?: v0__path(p, false);
		out__str(p->o, ">");
		break;
	case 'N':
		ns = v0__next(p);
		if (!isalpha((unsigned char)ns)) {
			err = -EINVAL;
			break;
		}
		err = v0__path(p, in_value);
		err = err ?: v0__disambiguator(p, &dis);
		err = err ?: v0__ident(p, &name, &len);
		if (err)
			break;
		if (isupper((unsigned char)ns)) {
			out__str(p->o, "::{");
			out__str(p->o, ns == 'C' ? "closure" : ns == 'S' ? "shim" : (char[]){ ns, 0 });
			if (len) {
				out__str(p->o, ":");
				out__mem(p->o, name, len);
			}
			out__str(p->o, "#");
			out__u64(p->o, dis);
			out__str(p->o, "}");
		} else if (len) {
			out__str(p->o, "::");
			out__mem(p->o, name, len);
		}
		break;
	case 'I':
		err = v0__path(p, in_value);
		if (in_value)
			out__str(p->o, "::");
		err = err ?: v0__generic_args(p, false);
		break;
	case 'B':
		err = v0__backref(p, v0__path, in_value);
		break;
	default:
		err = -EINVAL;
		break;
	}
	p->depth--;
	return err;
}

static int demangle__rust_v0(const char *name, struct out_buf *o)
{
	struct v0 p = { .s = name + 2, .o = o };
	const char *dot;
	int err;

	/* compiler suffixes (".llvm.1234") are not part of the mangling */
	dot = strchr(p.s, '.');
	p.len = dot ? (size_t)(dot - p.s) : strlen(p.s);
	if (isdigit((unsigned char)v0__peek(&p)))
		return -EINVAL; /* an encoding version we do not know */
	err = v0__path(&p, true);
	if (!err && p.pos < p.len) {
		/* the instantiating crate: parsed, not printed */
		o->muted = true;
		err = v0__path(&p, false);
		o->muted = false;
	}
	if (!err && p.pos != p.len)
		err = -EINVAL;
	return err ? err : o->err;
}

int demangle__rust(const char *name, char *out, size_t cap)
{
	struct out_buf o = { .s = out, .cap = cap };
	int err;

	if (!cap)
		return -ENOSPC;
	out[0] = '\0';
	switch (demangle__kind(name)) {
	case DEMANGLE_RUST:
		err = demangle__rust_legacy(name, &o);
		break;
	case DEMANGLE_RUST_V0:
		err = demangle__rust_v0(name, &o);
		break;
	default:
		err = -EINVAL;
		break;
	}
	err = err ?: o.err;
	if (err == -ENOSPC && cap >= DEMANGLE_MAX_SZ)
		err = -EINVAL;
	return err;
}

/* name@VERSION (a versioned dynamic symbol): demangles the name, keeps the version. */
static char *demangle__versioned(const char *name, const char *at)
{
	char base[DEMANGLE_MAX_SZ], *demangled, *res = NULL;
	size_t len = (size_t)(at - name);

	if (len >= sizeof(base)) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(base, name, len);
	base[len] = '\0';
	demangled = demangle__symbol(base);
	if (!demangled)
		return NULL;
	if (asprintf(&res, "%s%s", demangled, at) < 0) {
		res = NULL;
		errno = ENOMEM;
	}
	free(demangled);
	return res;
}

char *demangle__symbol(const char *name)
{
	char buf[DEMANGLE_MAX_SZ], *res;
	const char *at;
	int status = 0, err;

	at = name ? strchr(name, '@') : NULL;
	if (at && at != name)
		return demangle__versioned(name, at);

	switch (demangle__kind(name)) {
	case DEMANGLE_CXX:
		if (strlen(name) >= DEMANGLE_MAX_SZ) {
			errno = EINVAL;
			return NULL;
		}
		res = __cxa_demangle(name, NULL, NULL, &status);
		if (!res)
			errno = status == -1 ? ENOMEM : EINVAL;
		return res;
	case DEMANGLE_RUST:
	case DEMANGLE_RUST_V0:
		err = demangle__rust(name, buf, sizeof(buf));
		if (err) {
			errno = -err;
			return NULL;
		}
		res = strdup(buf);
		if (!res)
			errno = ENOMEM;
		return res;
	default:
		errno = EINVAL;
		return NULL;
	}
}
