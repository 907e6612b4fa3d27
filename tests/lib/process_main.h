/* The process table (and its executable registry) of the unit tests that scan live children
 * (test_perl.c, test_php.c, test_python.c), and the main() that makes them around the tests.
 *
 * Include it once, after proc/executable.h, proc/process.h and base/log.h.
 */
#ifndef STACKSCOPE_TEST_PROCESS_MAIN_H
#define STACKSCOPE_TEST_PROCESS_MAIN_H

#include <stdio.h>

#include "test.h"

/* one of each for the whole run: each file is hashed once */
static struct exe_registry *reg;
static struct process_table *pt;

/* The whole of a main(): reg and pt made, the log at warnings (not the notices of a runtime
 * meeting a version it does not support), `tests` run (a function of RUN lines), the summary
 * printed, reg and pt freed. main's exit status: test_summary()'s, or 1 when pt could not be
 * made.
 */
static inline int test_process_main(void (*tests)(void))
{
	int ret;

	log__set_level(LOG_WARN);
	reg = exe_registry__new(NULL);
	pt = reg ? process_table__new(reg, -1, -1) : NULL;
	if (!pt) {
		printf("cannot create the process table\n");
		exe_registry__free(reg);
		return 1;
	}
	tests();
	ret = test_summary();
	process_table__free(pt);
	exe_registry__free(reg);
	return ret;
}

#endif
