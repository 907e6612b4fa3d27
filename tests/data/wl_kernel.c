/*
 * Kernel-heavy: main -> syscall_loop -> write(2) to /dev/null and 1 MiB read(2)s from /dev/zero,
 * so most samples land in the kernel under the user frames, leaf side first:
 *   main;syscall_loop;write;entry_SYSCALL_64_after_hwframe;do_syscall_64;...
 */
#include <fcntl.h>
#include <unistd.h>
#include "wl_common.h"

static char buf[1 << 20];	/* large reads keep samples inside read_iter_zero */

WL_NOINLINE void syscall_loop(double end, int null_fd, int zero_fd)
{
	while (wl_now() < end) {
		for (int i = 0; i < 64; i++) {
			if (write(null_fd, buf, sizeof(buf)) < 0)
				wl_sink++;
			if (read(zero_fd, buf, sizeof(buf)) < 0)
				wl_sink++;
		}
	}
	wl_sink++;
}

int main(int argc, char **argv)
{
	int null_fd = open("/dev/null", O_WRONLY), zero_fd = open("/dev/zero", O_RDONLY);

	if (null_fd < 0 || zero_fd < 0)
		return 1;
	syscall_loop(wl_now() + wl_seconds(argc, argv), null_fd, zero_fd);
	return 0;
}
