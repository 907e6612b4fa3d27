/* SHA-256 (base/sha256.c) against FIPS 180-4's examples, whole and split at every length, and
 * the file ids built on it (proc/file_id.c) against values computed by libcrypto before.
 */
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "proc/file_id.h"
#include "test.h"

static void hex_of(const uint8_t *d, char out[2 * SHA256_DIGEST_SZ + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SHA256_DIGEST_SZ; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * SHA256_DIGEST_SZ] = '\0';
}

/* The digest of msg fed in two parts split at `split`. */
static void digest_split(const char *msg, size_t len, size_t split, char out[65])
{
	struct sha256 s;
	uint8_t d[SHA256_DIGEST_SZ];

	sha256__init(&s);
	sha256__update(&s, msg, split);
	sha256__update(&s, msg + split, len - split);
	sha256__final(&s, d);
	hex_of(d, out);
}

TEST(fips_examples)
{
	static const struct {
		const char *msg, *digest;
	} cases[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
		  "nopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	size_t i, split, bad = 0;
	char got[65];

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].msg);

		for (split = 0; split <= len; split++) {
			digest_split(cases[i].msg, len, split, got);
			if (strcmp(got, cases[i].digest))
				bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
}

TEST(million_a)
{
	struct sha256 s;
	uint8_t d[SHA256_DIGEST_SZ];
	char *a = malloc(1000000), got[65];
	size_t off = 0, step = 1;

	REQUIRE(a);
	memset(a, 'a', 1000000);
	sha256__init(&s);
	while (off < 1000000) { /* uneven pieces: every path through the block buffer */
		size_t n = step < 1000000 - off ? step : 1000000 - off;

		sha256__update(&s, a + off, n);
		off += n;
		step = step * 7 % 193 + 1;
	}
	sha256__final(&s, d);
	hex_of(d, got);
	CHECK(!strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
	free(a);
}

/* file_id__of_mem() of two images, as libcrypto's EVP SHA-256 gave them before: the ids of
 * in-memory images (the vDSO) and the cache entries keyed by file ids do not change.
 */
TEST(file_ids_unchanged)
{
	static const char image[] = "\x7f"
				    "ELF stackscope";

	CHECK_EQ_INT(file_id__of_mem(image, sizeof(image)), 0x931ae70d79c0e5d3ull);
	CHECK_EQ_INT(file_id__of_mem("", 0), 0x1168a965b2ac639eull);
}

int main(void)
{
	RUN(fips_examples);
	RUN(million_a);
	RUN(file_ids_unchanged);
	return test_summary();
}
