/* Timed waits on condition variables: the deadline pthread_cond_timedwait() takes, and
 * condition variables that measure it on CLOCK_MONOTONIC (a step of the wall clock neither
 * cuts such a wait short nor stretches it).
 */
#ifndef STACKSCOPE_TIMED_WAIT_H
#define STACKSCOPE_TIMED_WAIT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pthread_cond_init() of cond with CLOCK_MONOTONIC as the clock of its timed waits. */
void timed_wait__init_cond(pthread_cond_t *cond);

/* The time ms milliseconds from now on clock (the one cond waits on: CLOCK_MONOTONIC after
 * timed_wait__init_cond(), CLOCK_REALTIME for a default one), as pthread_cond_timedwait()
 * wants its deadline.
 */
struct timespec timed_wait__deadline(clockid_t clock, uint64_t ms);

#endif
