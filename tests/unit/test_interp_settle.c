/* When the session polls fast after an attach (interp_registry__settling(), src/interp/
 * registry.c): not after a Go process's (nothing to look for later), nor after a CPython
 * process's whose interpreter is up (verified at the attach: nothing left to look for; a
 * pending one is looked for at every tick), against real children: the Go workload
 * tests/data/wl_go.go (built by go.mk; skipped without Go) and the system's python3.
 */
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "interp/interp.h"
#include "proc/executable.h"
#include "proc/process.h"
#include "child.h"
#include "process_main.h" /* reg, pt */
#include "test.h"

/* Waits (2 s at most) until pid runs the image whose path ends with name. */
static bool runs(pid_t pid, const char *name)
{
	char link[64], path[PATH_MAX];
	size_t len = strlen(name);
	int i;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (i = 0; i < 200; i++) {
		n = readlink(link, path, sizeof(path) - 1);
		if (n >= (ssize_t)len && !memcmp(path + n - len, name, len))
			return true;
		usleep(10000);
	}
	return false;
}

/* The registry's count of processes attached to the runtime of frame kind `kind`. */
static uint64_t attached(struct interp_registry *ir, int kind)
{
	struct interp_runtime_stats st[16]; /* more than there are runtimes */
	size_t i, n = interp_registry__stats(ir, NULL, st, 16);

	for (i = 0; i < n; i++)
		if (st[i].rt->frame_kind == kind)
			return st[i].procs_attached;
	return 0;
}

/* CPython's own "layouts verified" counter: interpreters checked against their layout. */
static uint64_t verified(struct interp_registry *ir)
{
	struct interp_runtime_stats st[16];
	size_t i, j, n = interp_registry__stats(ir, NULL, st, 16);

	for (i = 0; i < n; i++)
		for (j = 0;
		     st[i].rt->frame_kind == FRAME_KIND_CPYTHON && j < st[i].rt->stat_cnt && j < 16;
		     j++)
			if (!strcmp(st[i].rt->stat_names[j], "layouts verified"))
				return st[i].own[j];
	return 0;
}

/* Scans the child's mappings, hands every mapped file and then the process to ir; whether ir
 * then settles. ready: the child prints a line once it is up (an interpreter initialised:
 * attached before that, it is not yet what the runtime verifies), read first.
 */
static bool attach_settles(struct interp_registry *ir, const char *const *argv, const char *image,
			   bool ready)
{
	struct test_child c;
	struct process *p;
	bool settling = false;
	char line[64];
	size_t i;

	REQUIRE(test_child_start(&c, argv) == 0);
	if (ready && !fgets(line, sizeof(line), c.from_child)) {
		CHECK(!"the child says it is up");
		goto out;
	}
	if (!runs(c.pid, image)) {
		CHECK(!"the child runs its image");
		goto out;
	}
	p = process_table__scan(pt, c.pid, now_ns());
	if (!p) {
		CHECK(!"the child scanned");
		goto out;
	}
	for (i = 0; i < p->map_cnt; i++)
		interp_registry__file_loaded(ir, p->maps[i].exe);
	interp_registry__process_scanned(ir, p, now_ns());
	settling = interp_registry__settling(ir, now_ns());
out:
	test_child_stop(&c);
	return settling;
}

TEST(go_attach_does_not_settle)
{
	const char *argv[] = { test_fixture("wl_go"), "30", NULL };
	struct interp_registry *ir;

	if (access(argv[0], X_OK))
		SKIP_SETUP("no Go fixtures (golang-go missing?)");
	ir = interp_registry__new(-1, -1);
	REQUIRE(ir);
	CHECK(!attach_settles(ir, argv, "/wl_go", false));
	CHECK_EQ_U64(attached(ir, FRAME_KIND_GO), 1);
	interp_registry__free(ir);
}

TEST(python_up_does_not_settle)
{
	const char *argv[] = { "/usr/bin/python3", "-S", "-c",
			       "import time; print('up', flush=True); time.sleep(30)", NULL };
	char path[PATH_MAX];
	struct interp_registry *ir;
	ssize_t n;

	n = readlink("/usr/bin/python3", path, sizeof(path) - 1);
	if (access(argv[0], X_OK) || n <= 0)
		SKIP_SETUP("no /usr/bin/python3");
	path[n] = '\0';
	ir = interp_registry__new(-1, -1);
	REQUIRE(ir);
	CHECK(!attach_settles(ir, argv, strrchr(path, '/') ? strrchr(path, '/') : path, true));
	CHECK_EQ_U64(attached(ir, FRAME_KIND_CPYTHON), 1);
	CHECK_EQ_U64(verified(ir), 1);
	interp_registry__free(ir);
}

static void tests(void)
{
	RUN(go_attach_does_not_settle);
	RUN(python_up_does_not_settle);
}

int main(void)
{
	return test_process_main(tests);
}
