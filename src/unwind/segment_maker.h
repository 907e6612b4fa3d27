/* The process that makes the unwind-entry pool's segments once stackscope has dropped its
 * privileges.
 *
 * A segment is a BPF array (bpf/abi.h), and bpf_map_create() needs CAP_BPF, which the running
 * phase does not keep (base/privileges.h). So before the drop, stackscope forks this small
 * process: it keeps CAP_BPF alone (every other capability, the bounding set included, dropped;
 * no_new_privs; every inherited fd but its socket closed) and answers one request, "a
 * segment", with the fd of a new BPF array of the one segment size, passed over a unix socket
 * pair (SCM_RIGHTS), at most `max` times in its life: the pool's cap in segments. It exits when
 * stackscope closes the socket or dies (PR_SET_PDEATHSIG). /proc shows it as "ss-segments",
 * a child of stackscope.
 */
#ifndef STACKSCOPE_UNWIND_SEGMENT_MAKER_H
#define STACKSCOPE_UNWIND_SEGMENT_MAKER_H

#include <stdint.h>
#include <sys/types.h>

struct segment_maker;

/* Forks the maker of up to max segments of `entries` entries each. NULL with errno. */
struct segment_maker *segment_maker__start(uint32_t entries, uint32_t max);
/* A new segment's fd (the caller owns it), or -errno: -ENOSPC after max, -EPIPE when the
 * maker is gone, the kernel's error otherwise.
 */
int segment_maker__make(struct segment_maker *m);
pid_t segment_maker__pid(const struct segment_maker *m);
/* Closes the socket (the maker exits) and reaps it. */
void segment_maker__stop(struct segment_maker *m);

#endif
