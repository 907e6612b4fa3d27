/* The verifier's reason for refusing a program: the last line of its load log, so that a
 * refusal prints one line naming what the kernel lacks instead of a verifier dump.
 */
#ifndef STACKSCOPE_VERIFIER_REASON_H
#define STACKSCOPE_VERIFIER_REASON_H

#include <stddef.h>

/* Keeps the reason from libbpf's "-- BEGIN PROG LOAD LOG --" message MSG, if it is one.
 * Returns 1 when MSG was a load log, else 0.
 */
int verifier_reason__note(const char *msg);

/* The last reason noted ("" when none). */
const char *verifier_reason__last(void);

#endif
