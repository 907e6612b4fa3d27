/* The process that makes the unwind-entry pool's segments once stackscope has dropped its
 * privileges.
 *
 * A segment is a BPF array (bpf/abi.h), and bpf_map_create() needs CAP_BPF, which the running
 * phase does not keep (base/privileges.h). So record, agent and top fork this small process
 * before their session, while their heap is still small (a fork shares every page the parent
 * has, and each page the parent writes later is copied: forked after start-up it held 11.8 MiB
 * of the agent's heap). It keeps CAP_BPF alone (every other capability, the bounding set
 * included, dropped; no_new_privs; every inherited fd but its socket closed) and answers one
 * request, "a segment of N entries", with the fd of a new BPF array, passed over a unix socket
 * pair (SCM_RIGHTS). The first request fixes N and the most segments it will ever make (the
 * pool's cap in segments); later ones must ask the same N. It exits when stackscope closes
 * the socket or dies (PR_SET_PDEATHSIG). /proc shows it as "ss-segments", stackscope's child.
 */
#ifndef STACKSCOPE_UNWIND_SEGMENT_MAKER_H
#define STACKSCOPE_UNWIND_SEGMENT_MAKER_H

#include <stdint.h>
#include <sys/types.h>

struct segment_maker;

/* Forks the maker. NULL with errno (logged). */
struct segment_maker *segment_maker__start(void);
/* A new segment of `entries` entries: its fd (the caller owns it), or -errno: -ENOSPC after
 * max segments (the first request's max), -EINVAL for another size than the first request's,
 * -EPIPE when the maker is gone, the kernel's error otherwise.
 */
int segment_maker__make(struct segment_maker *m, uint32_t entries, uint32_t max);
pid_t segment_maker__pid(const struct segment_maker *m);
/* Closes the socket (the maker exits) and reaps it; NULL: nothing. */
void segment_maker__stop(struct segment_maker *m);

#endif
