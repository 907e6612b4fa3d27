/*
 * CPU burnt inside a signal handler: main -> interrupted_loop is interrupted by SIGPROF
 * (setitimer, ITIMER_PROF so it fires on CPU time) and the handler on_signal ->
 * burn_in_handler spins ~5 ms. The kernel sets up a signal frame that returns through
 * libc's __restore_rt, so the stack is
 *   main;interrupted_loop;[__restore_rt];on_signal;burn_in_handler.
 */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include "wl_common.h"

WL_NOINLINE void burn_in_handler(void)
{
	double end = wl_now() + 0.005;

	while (wl_now() < end)
		for (int i = 0; i < 1000; i++)
			wl_sink += i;
}

WL_NOINLINE void on_signal(int sig)
{
	burn_in_handler();
	wl_sink += sig;
}

WL_NOINLINE void interrupted_loop(double end)
{
	while (wl_now() < end)
		wl_sink++;
	wl_sink++;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 6000 }, { 0, 6000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	interrupted_loop(wl_now() + wl_seconds(argc, argv));
	return 0;
}
