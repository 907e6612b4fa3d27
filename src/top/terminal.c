/* The terminal of `stackscope top` (see terminal.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/fd_write.h"
#include "top/terminal.h"

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

static struct termios saved_mode, raw_mode;
static int term_in = -1, term_out = -1;
static volatile sig_atomic_t active, resumed;
static bool atexit_done;

/* What the input held after the last key: an escape sequence may arrive in pieces. */
static unsigned char pending[32];
static size_t pending_len;

/* attributes off, cursor shown, main screen back */
static const char screen_leave[] = "\x1b[0m\x1b[?25h\x1b[?1049l";
/* alternate screen, cursor hidden, cleared */
static const char screen_take[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";

void terminal__leave(void)
{
	int e = errno;

	if (!active)
		return;
	active = 0;
	/* a failure leaves nothing to be done: this is the way out */
	(void)fd__write_all(term_out, screen_leave, sizeof(screen_leave) - 1);
	tcsetattr(term_in, TCSAFLUSH, &saved_mode);
	errno = e;
}

static void on_crash(int sig)
{
	terminal__leave();
	/* SA_RESETHAND put the default action back: the same signal ends the process */
	raise(sig);
}

/* raw mode, alternate screen with the cursor hidden, cleared once */
static void take(void)
{
	tcsetattr(term_in, TCSAFLUSH, &raw_mode);
	(void)fd__write_all(term_out, screen_take, sizeof(screen_take) - 1);
	active = 1;
}

/* Ctrl-Z: the shell gets its terminal back while we are stopped, and we take it again at
 * SIGCONT (the next frame redraws everything).
 */
static void on_stop(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, me = { .sa_handler = on_stop };
	int e = errno, was_active = active;
	sigset_t ttou, old_mask, tstp;

	/* Others in our process group (a subshell) may have stopped already and the shell taken
	 * the terminal: tcsetattr() from the background would then stop us on SIGTTOU, and we
	 * would stop again after the SIGCONT. Blocked, it just proceeds.
	 */
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old_mask);
	terminal__leave();
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGTSTP, &dfl, NULL);
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &tstp, NULL);
	raise(SIGTSTP); /* stops here until SIGCONT */
	sigaction(SIGTSTP, &me, NULL);
	if (was_active) {
		take();
		resumed = 1;
	}
	errno = e;
	(void)sig;
}

bool terminal__resumed(void)
{
	if (!resumed)
		return false;
	resumed = 0;
	return true;
}

int terminal__enter(int in, int out)
{
	struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND | SA_NODEFER };
	struct sigaction stop = { .sa_handler = on_stop };
	size_t i;

	if (tcgetattr(in, &saved_mode))
		return -errno;
	/* VMIN 0, VTIME 0: a read returns what was typed, or 0 bytes, at once. No O_NONBLOCK:
	 * the input is often the same open file as the output, whose frames must not meet
	 * EAGAIN on a slow terminal.
	 */
	raw_mode = saved_mode;
	raw_mode.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
	raw_mode.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw_mode.c_cc[VMIN] = 0;
	raw_mode.c_cc[VTIME] = 0;
	if (tcsetattr(in, TCSAFLUSH, &raw_mode))
		return -errno;
	term_in = in;
	term_out = out;
	if (!atexit_done) {
		atexit(terminal__leave);
		atexit_done = true;
	}
	for (i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, NULL);
	sigaction(SIGTSTP, &stop, NULL);
	take();
	return 0;
}

int terminal__size(unsigned int *rows, unsigned int *cols)
{
	struct winsize ws;

	if (ioctl(term_out >= 0 ? term_out : STDOUT_FILENO, TIOCGWINSZ, &ws))
		return -errno;
	if (!ws.ws_row || !ws.ws_col)
		return -EINVAL;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return 0;
}

static void consume(size_t n)
{
	memmove(pending, pending + n, pending_len - n);
	pending_len -= n;
}

/* The key of a cursor sequence's final byte, the same after SS3 ("ESC O A") and CSI
 * ("ESC [ A", "ESC [ 1 ; 5 A"); KEY_NONE for any other.
 */
static int cursor_key(unsigned char final)
{
	switch (final) {
	case 'A':
		return KEY_UP;
	case 'B':
		return KEY_DOWN;
	case 'C':
		return KEY_RIGHT;
	case 'D':
		return KEY_LEFT;
	case 'H':
		return KEY_HOME;
	case 'F':
		return KEY_END;
	default:
		return KEY_NONE;
	}
}

/* A CSI or SS3 sequence at the start of pending: its key and length, or 0 when incomplete. */
static size_t decode_sequence(int *key)
{
	size_t i;

	*key = KEY_ESC;
	if (pending_len < 2)
		return 1;
	if (pending[1] == 'O' && pending_len >= 3) {
		*key = cursor_key(pending[2]);
		return 3;
	}
	if (pending[1] != '[')
		return 1; /* a lone Esc, then whatever came after it */
	/* CSI: parameters and intermediates, then one final byte in 0x40..0x7e */
	for (i = 2; i < pending_len; i++)
		if (pending[i] >= 0x40 && pending[i] <= 0x7e)
			break;
	if (i == pending_len) {
		*key = KEY_NONE;
		return i == sizeof(pending) ? i : 0;
	}
	if (pending[i] == '~')
		*key = pending[2] == '5'                        ? KEY_PAGE_UP
		       : pending[2] == '6'                      ? KEY_PAGE_DOWN
		       : pending[2] == '1' || pending[2] == '7' ? KEY_HOME
		       : pending[2] == '4' || pending[2] == '8' ? KEY_END
								: KEY_NONE;
	else
		*key = cursor_key(pending[i]);
	return i + 1;
}

int terminal__read_key(void)
{
	int key;
	size_t n;

	if (pending_len < sizeof(pending)) {
		ssize_t got = read(term_in, pending + pending_len, sizeof(pending) - pending_len);

		/* with VMIN 0 a tty reads 0 bytes when nothing was typed: not an end */
		if (got < 0 && errno != EAGAIN && errno != EINTR && !pending_len)
			return -errno;
		if (got > 0)
			pending_len += (size_t)got;
	}
	while (pending_len) {
		if (pending[0] != 0x1b) {
			key = pending[0] == '\n' ? KEY_ENTER : pending[0];
			consume(1);
			return key;
		}
		n = decode_sequence(&key);
		if (!n)
			return KEY_NONE; /* the rest of the sequence is on its way */
		consume(n);
		if (key != KEY_NONE)
			return key;
	}
	return KEY_NONE;
}
