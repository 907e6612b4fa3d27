/* Random buffers for the tests of decoders of untrusted tables (the runtimes' line tables),
 * which must stay inside a buffer whatever it holds: each buffer is allocated to its exact
 * length, so that under the ASan build (make asan-test) a read past its end fails the test.
 * The same seed gives the same buffers, run after run.
 */
#ifndef STACKSCOPE_TEST_RANDOM_BUFFERS_H
#define STACKSCOPE_TEST_RANDOM_BUFFERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "test.h"

/* Calls decode(buf, len, i, seed) for i from 0 to count - 1, buf holding len (< max_len) bytes
 * drawn with rand_r from seed; decode may draw more from it (the position it looks up).
 */
static inline void test_random_buffers(unsigned int seed, unsigned int count, size_t max_len,
				       void (*decode)(const uint8_t *buf, size_t len,
						      unsigned int i, unsigned int *seed))
{
	unsigned int i;
	size_t j;

	for (i = 0; i < count; i++) {
		size_t len = (size_t)rand_r(&seed) % max_len;
		uint8_t *buf = malloc(len ? len : 1);

		REQUIRE(buf);
		for (j = 0; j < len; j++)
			buf[j] = (uint8_t)rand_r(&seed);
		decode(buf, len, i, &seed);
		free(buf);
	}
}

#endif
