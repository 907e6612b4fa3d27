/* An interpreter runtime (src/interp/: perl_runtime, php_runtime) attached to a live child the
 * way the profiler attaches it, for the unit tests that then run that runtime's eBPF walk over
 * the child (test_perl.c, test_php.c): the interpreter found among the child's mappings
 * (file_detect), its process attached (proc_attach), and bpf_world.h's `world` filled in from
 * both (pid, runtime, file_id, file, proc). Also the check that a runtime shows each of its
 * markers as its text.
 *
 * Include it after bpf_world.h, with interp/interp.h and proc/process.h.
 */
#ifndef STACKSCOPE_TEST_INTERP_ATTACH_H
#define STACKSCOPE_TEST_INTERP_ATTACH_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "child.h"
#include "test.h"

struct interp_attached {
	const struct interp_runtime *r;
	void *rt, *file_state, *proc_state;
	const struct executable *exe; /* the interpreter binary the child maps */
	uint64_t bias;                /* where the child maps it */
	int err;                      /* proc_attach's */
};

/* Attaches r (frames of kind) to process pid as scanned into pt now; err is proc_attach's
 * answer (a test of a refused process expects one). Ends the test when pid cannot be scanned
 * or maps no interpreter r detects. interp_attached__detach() frees what this made.
 */
static inline void interp_attached__attach(struct interp_attached *a,
					   const struct interp_runtime *r, __u32 kind,
					   struct process_table *pt, pid_t pid)
{
	struct process *p = process_table__scan(pt, pid, now_ns());
	size_t i;

	REQUIRE(p);
	memset(a, 0, sizeof(*a));
	a->r = r;
	a->rt = interp_runtime__new(r);
	REQUIRE(a->rt);
	for (i = 0; i < p->map_cnt && !a->exe; i++) {
		memset(&world.file, 0, sizeof(world.file));
		if (p->maps[i].exe && !interp_runtime__file_detect(r, a->rt, p->maps[i].exe,
								   &a->file_state, &world.file)) {
			a->exe = p->maps[i].exe;
			a->bias = p->maps[i].bias;
		}
	}
	REQUIRE(a->exe);
	world.pid = pid;
	world.runtime = kind;
	world.file_id = a->exe->file_id;
	world.file.runtime = kind;
	memset(&world.proc, 0, sizeof(world.proc));
	world.proc.file_id = world.file_id;
	a->err = interp_runtime__proc_attach(r, a->rt, pid, a->file_state, a->bias, now_ns(),
					     &a->proc_state, &world.proc);
}

/* Frees what interp_attached__attach() made, as far as it got. */
static inline void interp_attached__detach(struct interp_attached *a)
{
	if (a->proc_state)
		interp_runtime__proc_free(a->r, a->rt, a->proc_state);
	if (a->file_state)
		interp_runtime__file_free(a->r, a->rt, a->file_state);
	if (a->rt)
		interp_runtime__free(a->r, a->rt);
}

/* Checks that r, with no process state, symbolizes a frame of kind carrying each marker code
 * of want (interp.h's table of a code and the text it is shown as; INTERP_MARKERS(table) gives
 * want and cnt) as a marker named its text.
 */
static inline void interp_check_markers(const struct interp_runtime *r, __u32 kind,
					const struct interp_marker_text *want, size_t cnt)
{
	void *rt = interp_runtime__new(r);
	size_t i;

	REQUIRE(rt);
	for (i = 0; i < cnt; i++) {
		struct user_frame uf = { .file_id = want[i].code, .kind = kind };
		struct interp_symbol sym;

		interp_runtime__symbolize(r, rt, NULL, 1, &uf, &sym);
		CHECK(sym.marker);
		CHECK_STR(sym.function, want[i].text);
	}
	interp_runtime__free(r, rt);
}

#endif
