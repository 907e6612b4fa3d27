/*
 * Many short-lived processes: `wl_short N [MS]` forks and execs itself N times in sequence;
 * each child (`wl_short --child MS`) burns MS (default 120) ms of CPU in main -> short_work ->
 * short_leaf and exits. `wl_short --sleep MS` only sleeps (a process that maps the binary). Tests that a process that lives a fraction of a second still comes out symbolized.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl_common.h"

WL_NOINLINE void short_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_sink += i * 2654435761u;
}

WL_NOINLINE void short_work(double secs)
{
	double end = wl_now() + secs;

	while (wl_now() < end)
		short_leaf(100000);
	wl_sink++;
}

int main(int argc, char **argv)
{
	char self[4096];
	ssize_t len;
	long n;

	if (argc > 2 && strcmp(argv[1], "--sleep") == 0) { /* known to the profiler, no samples */
		usleep((useconds_t)strtol(argv[2], NULL, 10) * 1000);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "--child") == 0) {
		short_work((argc > 2 ? strtol(argv[2], NULL, 10) : 120) / 1000.0);
		return 0;
	}
	n = argc > 1 ? strtol(argv[1], NULL, 10) : 8;
	if (n < 1 || n > 100)
		n = 8;
	/* exec the real path, not /proc/self/exe, so the children's comm is "wl_short" */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return 1;
	self[len] = '\0';
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (pid == 0) {
			execl(self, argv[0], "--child", argc > 2 ? argv[2] : "120", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
