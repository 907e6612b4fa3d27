/* bench/alloc.sh's malloc-heavy workload and gate.
 *   alloc_storm storm N GO   malloc/free pairs of 16-255 bytes, 1024 live at a time (N pairs)
 *   alloc_storm touch MIB GO one write per 4 KiB page of MIB MiB of fresh anonymous memory
 *   alloc_storm gate GO CMD...  a child that waits, then execs CMD (stdout: /dev/null)
 * Each writes the pid that does the work to GO.pid, waits until the file GO exists (the tool
 * measuring it is attached by then), does its work and writes the work's CPU seconds (user +
 * system: uprobe traps are the thread's system time) to GO.time; the machine's load does
 * not enter them as it enters wall time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void write_file(const char *go, const char *suffix, const char *fmt, double v)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", go, suffix);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, fmt, v);
		fclose(f);
	}
}

static void wait_go(const char *go)
{
	while (access(go, F_OK))
		usleep(1000);
}

static double cpu_s(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

static double now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return cpu_s(&ru);
}

int main(int argc, char **argv)
{
	static void *ring[1024];
	double t0;

	if (argc >= 4 && !strcmp(argv[1], "gate")) {
		struct rusage ru;
		int status, null;
		pid_t pid = fork();

		if (pid == 0) {
			wait_go(argv[2]);
			null = open("/dev/null", O_WRONLY);
			if (null >= 0)
				dup2(null, 1);
			execvp(argv[3], argv + 3);
			_exit(127);
		}
		write_file(argv[2], "pid", "%.0f\n", (double)pid);
		if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
			return 1;
		write_file(argv[2], "time", "%.6f\n", cpu_s(&ru));
		return 0;
	}
	if (argc != 4)
		return 2;
	write_file(argv[3], "pid", "%.0f\n", (double)getpid());
	wait_go(argv[3]);
	t0 = now();
	if (!strcmp(argv[1], "storm")) {
		long n = atol(argv[2]), i;

		for (i = 0; i < n; i++) {
			void *p = malloc(16 + (size_t)(i * 37 % 240));

			free(ring[i & 1023]);
			ring[i & 1023] = p;
		}
	} else {
		size_t sz = (size_t)atol(argv[2]) << 20, off;
		char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return 1;
		for (off = 0; off < sz; off += 4096)
			m[off] = 1;
	}
	write_file(argv[3], "time", "%.6f\n", now() - t0);
	return 0;
}
