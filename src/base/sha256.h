/* SHA-256 (FIPS 180-4) of a few small inputs: file ids and the OTLP htlhash (proc/file_id.c).
 *
 * Ours rather than libcrypto's EVP: the first EVP digest initialises OpenSSL's providers, which
 * touched 1.7 MiB more of libcrypto (and its heap) in every agent's RSS for a hash of a few
 * dozen bytes per file. Streaming: any number of updates of any length, then the digest.
 * Invariant: buf_len < 64 between calls (whole blocks are compressed as they fill).
 */
#ifndef STACKSCOPE_SHA256_H
#define STACKSCOPE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SZ 32

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t buf_len;
};

void sha256__init(struct sha256 *s);
void sha256__update(struct sha256 *s, const void *data, size_t len);
/* The digest of everything updated since init; s must be initialised again before reuse. */
void sha256__final(struct sha256 *s, uint8_t out[SHA256_DIGEST_SZ]);

#endif
