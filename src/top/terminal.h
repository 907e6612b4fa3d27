/* The terminal of `stackscope top`: raw input, the alternate screen, keys, and getting the
 * terminal back whatever way the process ends.
 *
 * Invariants: between terminal__enter() and terminal__leave() the terminal is in the
 * alternate screen with the cursor hidden and input unbuffered without echo (signal keys
 * still signal: Ctrl-C is SIGINT). terminal__leave() restores the saved mode and the main
 * screen; it is idempotent and async-signal-safe, runs at exit() and from the handlers of
 * the crash signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), which then die with the
 * same signal. One terminal per process.
 */
#ifndef STACKSCOPE_TOP_TERMINAL_H
#define STACKSCOPE_TOP_TERMINAL_H

#include <stdbool.h>

enum terminal_key {
	KEY_NONE = -1,
	KEY_ENTER = '\r',
	KEY_BACKSPACE = 0x7f,
	KEY_ESC = 0x1b,
	KEY_UP = 0x100,
	KEY_DOWN,
	KEY_LEFT,
	KEY_RIGHT,
	KEY_PAGE_UP,
	KEY_PAGE_DOWN,
	KEY_HOME,
	KEY_END,
};

/* Takes the terminal on fds in (input) and out; 0 or -errno (nothing changed then). */
int terminal__enter(int in, int out);
void terminal__leave(void);
/* Whether the terminal was taken again after a stop since the last call (redraw it all). */
bool terminal__resumed(void);
/* The size of the output terminal; 0 or -errno. */
int terminal__size(unsigned int *rows, unsigned int *cols);
/* The next key already typed (non-blocking), or KEY_NONE; a byte that starts no known
 * sequence is returned as itself. -errno when input cannot be read (a hang-up is SIGHUP).
 */
int terminal__read_key(void);

#endif
