/* A scratch folder for the files one unit test binary writes: made under /tmp before its
 * first test, removed with all it holds after its last. KEEP_TMP=1 in the environment keeps
 * it (its name goes to stderr) to look at the files of a failing test. A binary whose folder
 * cannot be made, or removed, fails.
 */
#ifndef STACKSCOPE_TEST_SCRATCH_H
#define STACKSCOPE_TEST_SCRATCH_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "test.h"

/* Makes a new folder /tmp/stackscope-test-NAME.XXXXXX, its path into dir (cap bytes). 0, or -1
 * with the reason on stderr.
 */
static inline int test_scratch_new(char *dir, size_t cap, const char *name)
{
	if ((size_t)snprintf(dir, cap, "/tmp/stackscope-test-%s.XXXXXX", name) >= cap) {
		fprintf(stderr, "scratch folder name too long for %s\n", name);
		return -1;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline int test_scratch__remove(const char *path, const struct stat *st, int type,
				       struct FTW *ftw)
{
	return remove(path);
}

/* Removes dir and all it holds (symlinks removed, not followed), or keeps it under KEEP_TMP. 0,
 * or -1 with the reason on stderr.
 */
static inline int test_scratch_free(const char *dir)
{
	if (getenv("KEEP_TMP")) {
		fprintf(stderr, "files kept in %s\n", dir);
		return 0;
	}
	if (nftw(dir, test_scratch__remove, 16, FTW_DEPTH | FTW_PHYS)) {
		fprintf(stderr, "could not remove %s: %m\n", dir);
		return -1;
	}
	return 0;
}

/* The whole of a main(): makes dir (see test_scratch_new), runs `tests` (a function of RUN
 * lines), prints the summary and removes dir. main's exit status: test_summary()'s, or 1 where
 * dir could not be made or removed.
 */
static inline int test_scratch_main(char *dir, size_t cap, const char *name, void (*tests)(void))
{
	int rc;

	if (test_scratch_new(dir, cap, name))
		return 1;
	tests();
	rc = test_summary();
	return test_scratch_free(dir) ? 1 : rc;
}

#endif
