/*
 * Replay fixture: a snapshot taken inside a signal handler, so the unwinder must cross the
 * kernel's rt_sigframe through libc's __restore_rt. main -> replay_a -> hot_loop spins; a
 * SIGALRM (ITIMER_REAL) interrupts it and the handler runs on_alarm -> replay_in_handler ->
 * take_snapshot, whose own SIGPROF (nested, SIGPROF is not blocked in on_alarm) captures
 * the registers of take_snapshot. Expected stack, leaf first:
 *   take_snapshot replay_in_handler on_alarm [__restore_rt] hot_loop replay_a main ...
 * Usage: replay_signal SNAPSHOT_FILE.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#if defined(__clang__)
#define REPLAY_NOINLINE __attribute__((noinline))
#else
#define REPLAY_NOINLINE __attribute__((noipa))
#endif

/* hot_loop gives up after this many spins. */
#define REPLAY_SPIN_MAX 4000000000UL

void replay_init(int argc, char **argv);
void take_snapshot(void);

static volatile unsigned long replay_sink;
static volatile sig_atomic_t in_hot_loop, handled;

REPLAY_NOINLINE void replay_in_handler(int sig)
{
	take_snapshot();
	replay_sink += (unsigned long)sig;
}

REPLAY_NOINLINE void on_alarm(int sig)
{
	/* Only when the pc is in hot_loop's spin loop, and only once. */
	if (!in_hot_loop || handled)
		return;
	replay_in_handler(sig);
	handled = 1;
}

REPLAY_NOINLINE int hot_loop(int x)
{
	unsigned long n;

	in_hot_loop = 1;
	for (n = 0; !handled && n < REPLAY_SPIN_MAX; n++)
		replay_sink++;
	in_hot_loop = 0;
	return x + (int)(n & 1);
}

REPLAY_NOINLINE int replay_a(int x)
{
	int r = hot_loop(x + 1);

	replay_sink += (unsigned long)r;
	return r + 1;
}

int main(int argc, char **argv)
{
	struct itimerval on = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	int r;

	replay_init(argc, argv);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &on, NULL)) {
		perror("replay_signal");
		return 1;
	}
	r = replay_a(argc);
	setitimer(ITIMER_REAL, &off, NULL);
	if (!handled) {
		fprintf(stderr, "replay_signal: no SIGALRM\n");
		return 1;
	}
	replay_sink += (unsigned long)r;
	return 0;
}
