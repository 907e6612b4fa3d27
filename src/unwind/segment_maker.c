/* The maker of the entry pool's segments, a process of its own. See segment_maker.h.
 *
 * The child is forked from a process that may already run threads, so it makes only raw
 * system calls (no allocation, no libbpf, no logging) from the fork to its exit.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi.h"
#include "base/log.h"
#include "unwind/segment_maker.h"

/* What stackscope asks: a segment of that size; max fixed by the first request. */
struct request {
	uint32_t entries, max;
};

struct segment_maker {
	int sock;
	pid_t pid;
};

/* The child's one reply: 0 and the fd, or an errno. */
struct reply {
	int32_t err;
};

static int new_segment(uint32_t entries)
{
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(uint32_t);
	attr.value_size = sizeof(struct unwind_entry_pair);
	attr.max_entries = entries / 2;
	attr.map_flags = BPF_F_MMAPABLE;
	memcpy(attr.map_name, "unwind_segment", sizeof("unwind_segment"));
	fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static int send_reply(int sock, int err, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct reply r = { .err = err };
	struct iovec iov = { &r, sizeof(r) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(r) ? 0 : -1;
}

/* CAP_BPF alone, for good: the bounding set first (CAP_SETPCAP is still there to allow it),
 * then the ambient, permitted and effective sets. False if the sets could not be set.
 */
static bool keep_cap_bpf_only(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int cap;

	for (cap = 0; cap <= 63; cap++)
		if (cap != CAP_BPF)
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0); /* EINVAL past the kernel's last */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capget, &hdr, d))
		return false;
	d[0].effective = d[0].permitted = d[0].inheritable = 0;
	d[1].effective = d[1].permitted &= 1u << (CAP_BPF - 32);
	d[1].inheritable = 0;
	return syscall(SYS_capset, &hdr, d) == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
}

static void __attribute__((noreturn)) maker_main(int sock, pid_t parent)
{
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	struct request req, first = { 0, 0 };
	uint32_t made = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(0); /* stackscope died before the line above */
	prctl(PR_SET_NAME, "ss-segments", 0, 0, 0);
	/* the terminal's Ctrl-C reaches stackscope, which closes the socket when done */
	sigaction(SIGINT, &ignore, NULL);
	sigaction(SIGHUP, &ignore, NULL);
	if (sock > 3)
		syscall(SYS_close_range, 3, sock - 1, 0);
	syscall(SYS_close_range, sock + 1, ~0u, 0);
	if (!keep_cap_bpf_only())
		_exit(1);
	while (read(sock, &req, sizeof(req)) == (ssize_t)sizeof(req)) {
		int fd;

		if (!first.entries)
			first = req;
		if (req.entries != first.entries || !req.entries)
			fd = -EINVAL;
		else
			fd = made < first.max ? new_segment(req.entries) : -ENOSPC;

		if (send_reply(sock, fd < 0 ? -fd : 0, fd))
			_exit(1);
		if (fd >= 0) {
			close(fd); /* stackscope holds it now */
			made++;
		}
	}
	_exit(0);
}

struct segment_maker *segment_maker__start(void)
{
	struct segment_maker *m = calloc(1, sizeof(*m));
	pid_t parent = getpid();
	int sv[2], err;

	if (!m)
		return NULL;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = errno;
		goto fail;
	}
	m->pid = fork();
	if (m->pid == 0) {
		close(sv[0]);
		maker_main(sv[1], parent);
	}
	err = errno;
	close(sv[1]);
	if (m->pid < 0) {
		close(sv[0]);
		goto fail;
	}
	m->sock = sv[0];
	return m;
fail:
	pr_warn("unwind-entry pool: no process to make its segments (%s): without CAP_BPF the "
		"pool keeps the ones made before\n",
		strerror(err));
	free(m);
	errno = err;
	return NULL;
}

int segment_maker__make(struct segment_maker *m, uint32_t entries, uint32_t max)
{
	struct request req = { entries, max };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct reply r = { 0 };
	struct iovec iov = { &r, sizeof(r) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	if (send(m->sock, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req))
		return -EPIPE;
	do
		n = recvmsg(m->sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(r))
		return -EPIPE;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (r.err) {
		if (fd >= 0)
			close(fd);
		return -r.err;
	}
	return fd >= 0 ? fd : -EPROTO;
}

pid_t segment_maker__pid(const struct segment_maker *m)
{
	return m->pid;
}

void segment_maker__stop(struct segment_maker *m)
{
	if (!m)
		return;
	close(m->sock);
	while (waitpid(m->pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(m);
}
