/* A context-switch storm for bench/offcpu.sh: two processes bounce one byte over two pipes
 * for SECS seconds (each read blocks: two switches out and two back in per round trip), then
 * the parent prints "round_trips_per_s N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, end;
	int ping[2], pong[2];
	unsigned long n = 0;
	char c = 'x';
	pid_t child;

	if (!(secs > 0) || pipe(ping) || pipe(pong))
		return 2;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) { /* echo until the parent closes its end */
		close(ping[1]);
		close(pong[0]);
		while (read(ping[0], &c, 1) == 1)
			if (write(pong[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	t0 = now_s();
	end = t0 + secs;
	while (now_s() < end) {
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
		n++;
	}
	close(ping[1]);
	waitpid(child, NULL, 0);
	printf("round_trips_per_s %.0f\n", n / (now_s() - t0));
	return 0;
}
