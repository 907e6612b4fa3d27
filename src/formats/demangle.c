/* Symbol demangling. See demangle.h for what is covered.
 *
 * C++ goes to libstdc++'s __cxa_demangle (extern "C" in the Itanium C++ ABI, so it is declared
 * here by hand and linked with -lstdc++). Rust, legacy and v0, goes to libiberty's
 * cplus_demangle() with DMGL_RUST (the demangler of c++filt; static libiberty.a, whose
 * demangler files allow linking into any program). Without DMGL_VERBOSE it prints no crate
 * disambiguators, no legacy hash and no const generic types. libiberty bounds its recursion.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "formats/demangle.h"

/* libstdc++ (Itanium C++ ABI, extern "C"). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

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

int demangle__rust(const char *name, char *out, size_t cap)
{
	enum demangle_kind kind = demangle__kind(name);
	char *res;
	size_t len;
	int err = 0;

	if (!cap)
		return -ENOSPC;
	out[0] = '\0';
	if ((kind != DEMANGLE_RUST && kind != DEMANGLE_RUST_V0) ||
	    strnlen(name, DEMANGLE_MAX_SZ) >= DEMANGLE_MAX_SZ)
		return -EINVAL;
	/* errors (and a failed allocation inside libiberty) come back as NULL alike */
	res = cplus_demangle(name, DMGL_RUST);
	if (!res)
		return -EINVAL;
	len = strlen(res);
	if (len >= cap)
		err = cap >= DEMANGLE_MAX_SZ ? -EINVAL : -ENOSPC;
	else
		memcpy(out, res, len + 1);
	free(res);
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
