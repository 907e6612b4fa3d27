/* Demangling of symbol names: C++ (Itanium ABI, through libstdc++'s __cxa_demangle) and Rust
 * (legacy `_ZN...17h<16 hex>E`, printed without the hash, and v0 `_R...`, printed like
 * rustc-demangle's non-alternate form minus the crate disambiguators `[abc123]`), through
 * libiberty's demangler, the one of c++filt: Rust names come out as `c++filt` prints them,
 * less its verbose parts (hashes, disambiguators, the `: type` of const generics). Punycode
 * identifiers are decoded.
 *
 * Not supported (the name is then returned as NULL/EINVAL and the caller keeps the mangled
 * form): what libiberty rejects, names of DEMANGLE_MAX_SZ bytes or more.
 *
 * Untrusted input: names come from binaries; parsing is bounded in depth and output size.
 */
#ifndef STACKSCOPE_DEMANGLE_H
#define STACKSCOPE_DEMANGLE_H

#include <stddef.h>

#define DEMANGLE_MAX_SZ 4096

enum demangle_kind {
	DEMANGLE_NONE,   /* not a mangled name */
	DEMANGLE_CXX,    /* _Z... (not Rust legacy) */
	DEMANGLE_RUST,   /* _ZN...17h<hash>E */
	DEMANGLE_RUST_V0 /* _R... */
};

/* Which mangling name uses (by its shape only). */
enum demangle_kind demangle__kind(const char *name);

/* Demangled name as a new string the caller frees, or NULL with errno EINVAL (not mangled, or
 * mangled in a way this module does not support) or ENOMEM.
 */
char *demangle__symbol(const char *name);

/* Rust only, into a caller buffer: 0, -EINVAL (bad or unsupported name), -ENOSPC. */
int demangle__rust(const char *name, char *out, size_t cap);

#endif
