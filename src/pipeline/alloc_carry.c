/* Live allocations carried from interval to interval: see alloc_carry.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "abi.h"
#include "base/log.h"
#include "pipeline/alloc_carry.h"
#include "pipeline/alloc_live.h"

/* A process is gone when kill(pid, 0) says it does not exist (EPERM: it does). */
static bool process_alive(void *ctx, uint32_t pid)
{
	(void)ctx;
	return !kill((pid_t)pid, 0) || errno != ESRCH;
}

static void process_gone(void *ctx, uint32_t pid, uint64_t addr)
{
	int map_fd = *(const int *)ctx;
	struct alloc_key key = { .tgid = pid, .addr = addr };

	if (map_fd >= 0)
		bpf_map_delete_elem(map_fd, &key); /* ENOENT: eBPF never had it (its map full) */
}

void alloc_carry__run(struct alloc_live *al, const struct profile *cur, struct profile *next,
		      int map_fd)
{
	struct timespec ts;
	uint64_t now;
	int err;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	err = alloc_live__carry(al, cur, next, now, process_alive, process_gone, &map_fd);
	if (err)
		pr_debug("live allocations not all carried into the next interval: %s\n",
			 strerror(-err));
}

void alloc_carry__process_ended(struct alloc_live *al, struct profile *prof, uint32_t pid,
				int map_fd)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (alloc_live__process_ended(al, prof, pid, now, process_gone, &map_fd))
		pr_debug("process %u's live allocations not all taken out: %s\n", pid,
			 strerror(ENOMEM));
}
