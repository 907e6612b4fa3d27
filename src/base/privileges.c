/* Least privilege after start-up. See privileges.h.
 *
 * Raw capget/capset/prctl, no libcap: the process-wide part (every thread) is a signal sent to
 * each other thread, whose handler makes the same async-signal-safe system calls on itself,
 * then every thread's /proc status is read back until all agree (threads created meanwhile
 * inherit from their creator, dropped or not, so a pass is repeated for them).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/privileges.h"

#define BIT(cap) (1ULL << (cap))
/* A real-time signal nothing else in stackscope or its libraries uses. */
#define BROADCAST_SIGNAL (SIGRTMAX - 1)
#define BROADCAST_PASSES 5
#define BROADCAST_WAIT_MS 2000

static const char *const cap_names[] = {
	"cap_chown",
	"cap_dac_override",
	"cap_dac_read_search",
	"cap_fowner",
	"cap_fsetid",
	"cap_kill",
	"cap_setgid",
	"cap_setuid",
	"cap_setpcap",
	"cap_linux_immutable",
	"cap_net_bind_service",
	"cap_net_broadcast",
	"cap_net_admin",
	"cap_net_raw",
	"cap_ipc_lock",
	"cap_ipc_owner",
	"cap_sys_module",
	"cap_sys_rawio",
	"cap_sys_chroot",
	"cap_sys_ptrace",
	"cap_sys_pacct",
	"cap_sys_admin",
	"cap_sys_boot",
	"cap_sys_nice",
	"cap_sys_resource",
	"cap_sys_time",
	"cap_sys_tty_config",
	"cap_mknod",
	"cap_lease",
	"cap_audit_write",
	"cap_audit_control",
	"cap_setfcap",
	"cap_mac_override",
	"cap_mac_admin",
	"cap_syslog",
	"cap_wake_alarm",
	"cap_block_suspend",
	"cap_audit_read",
	"cap_perfmon",
	"cap_bpf",
	"cap_checkpoint_restore",
};

/* What every thread is brought to; written before the signals, read by the handler. */
static struct {
	uint64_t keep;
	int last_cap;
	atomic_int acks;
	atomic_int errors;
} target;

uint64_t privileges__running_set(uint64_t permitted, unsigned int flags, bool bpf_needs_cap)
{
	uint64_t want = BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH) |
			BIT(CAP_CHECKPOINT_RESTORE);

	if (flags & PRIVILEGES_WRITE_ANY_PATH)
		want |= BIT(CAP_DAC_OVERRIDE);
	if (flags & PRIVILEGES_ATTACH_PROBES)
		want |= BIT(CAP_PERFMON) | BIT(CAP_SYS_ADMIN);
	if (bpf_needs_cap)
		want |= BIT(CAP_BPF);
	return want & permitted;
}

size_t cap_set__format(uint64_t set, char *buf, size_t cap)
{
	size_t n = 0;
	int i;

	if (cap)
		buf[0] = '\0';
	if (!set)
		return (size_t)snprintf(buf, cap, "none");
	for (i = 0; i < 64; i++) {
		char num[16];
		const char *name = num;
		int w;

		if (!(set & BIT(i)))
			continue;
		if ((size_t)i < sizeof(cap_names) / sizeof(cap_names[0]))
			name = cap_names[i];
		else
			snprintf(num, sizeof(num), "%d", i);
		w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s", n ? "," : "",
			     name);
		if (w > 0)
			n += (size_t)w;
	}
	return n;
}

static int parse_hex_field(const char *line, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	char *end;

	if (strncmp(line, key, klen))
		return 0;
	errno = 0;
	*out = strtoull(line + klen, &end, 16);
	return end != line + klen && !errno ? 1 : -EINVAL;
}

int cap_state__read(const char *status_path, struct cap_state *out)
{
	char line[256];
	unsigned int seen = 0;
	uint64_t nnp = 0;
	FILE *f = fopen(status_path, "re");
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && !err) {
		const struct {
			const char *key;
			uint64_t *val;
		} fields[] = {
			{ "CapEff:", &out->eff }, { "CapPrm:", &out->prm },
			{ "CapInh:", &out->inh }, { "CapBnd:", &out->bnd },
			{ "CapAmb:", &out->amb }, { "NoNewPrivs:", &nnp },
		};
		size_t i;

		for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			int r = parse_hex_field(line, fields[i].key, fields[i].val);

			if (r < 0)
				err = r;
			else if (r)
				seen |= 1U << i;
		}
	}
	fclose(f);
	out->no_new_privs = nnp != 0;
	if (!err && seen != 0x3f)
		err = -EINVAL;
	return err;
}

static int capget_self(uint64_t *eff, uint64_t *prm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &hdr, d))
		return -errno;
	*eff = (uint64_t)d[1].effective << 32 | d[0].effective;
	*prm = (uint64_t)d[1].permitted << 32 | d[0].permitted;
	return 0;
}

/* Applies to the calling thread only. inheritable is always emptied. */
static int capset_self(uint64_t eff, uint64_t prm)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {
		{ .effective = (uint32_t)eff, .permitted = (uint32_t)prm },
		{ .effective = (uint32_t)(eff >> 32), .permitted = (uint32_t)(prm >> 32) },
	};

	return syscall(SYS_capset, &hdr, d) ? -errno : 0;
}

void privileges__command_child(void)
{
	uint64_t eff, prm;

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (!capget_self(&eff, &prm))
		capset_self(eff, prm); /* empties inheritable */
}

/* The calling thread to target.keep. Async-signal-safe (system calls only). The bounding set
 * goes first, while CAP_SETPCAP may still be effective; without it the bounding set stays.
 */
static int drop_this_thread(void)
{
	uint64_t eff, prm;
	int cap, err;

	for (cap = 0; cap <= target.last_cap && cap < 64; cap++)
		if (!(target.keep & BIT(cap)) && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); /* EINVAL before 4.3: none */
	err = capget_self(&eff, &prm);
	if (!err)
		err = capset_self(prm & target.keep, prm & target.keep);
	if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
	return err;
}

static void on_broadcast(int sig)
{
	int saved = errno;

	(void)sig;
	if (drop_this_thread())
		atomic_fetch_add(&target.errors, 1);
	atomic_fetch_add(&target.acks, 1);
	errno = saved;
}

/* Does bpf() refuse a caller without CAP_BPF (and CAP_SYS_ADMIN) before looking at the fd?
 * Asked with both out of the effective set for a moment, on an fd that cannot exist.
 */
static bool bpf_needs_cap(uint64_t eff, uint64_t prm)
{
	union bpf_attr attr;
	bool needed;
	long r;

	if (!(prm & (BIT(CAP_BPF) | BIT(CAP_SYS_ADMIN))))
		return false; /* nothing to keep */
	if (capset_self(eff & ~(BIT(CAP_BPF) | BIT(CAP_SYS_ADMIN)), prm))
		return true;
	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)-1;
	r = syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr));
	needed = r < 0 && errno == EPERM;
	if (capset_self(eff, prm))
		pr_debug("capabilities: cannot restore the effective set: %s\n", strerror(errno));
	return needed;
}

static bool state_done(const struct cap_state *st)
{
	return !(st->prm & ~target.keep) && !(st->eff & ~target.keep) && !st->inh && !st->amb &&
	       st->no_new_privs;
}

/* One pass over /proc/self/task: signals every other thread not yet done. Returns the number
 * signalled (0: all done), or -errno.
 */
static int signal_pending_threads(pid_t self)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int sent = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char path[64];
		struct cap_state st;
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (*end || tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
		if (cap_state__read(path, &st) || state_done(&st))
			continue; /* gone, or done */
		if (!syscall(SYS_tgkill, getpid(), (pid_t)tid, BROADCAST_SIGNAL))
			sent++;
	}
	closedir(d);
	return sent;
}

static void wait_acks(int want)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	int i;

	for (i = 0; i < BROADCAST_WAIT_MS && atomic_load(&target.acks) < want; i++)
		nanosleep(&ms, NULL);
}

/* Brings every other thread of the process to target.keep. 0, or -EAGAIN when some thread
 * still differs after the last pass.
 */
static int drop_other_threads(int *threads)
{
	struct sigaction sa = { .sa_handler = on_broadcast, .sa_flags = SA_RESTART }, old;
	pid_t self = (pid_t)syscall(SYS_gettid);
	int pass, sent = 0, err = 0;

	sigfillset(&sa.sa_mask);
	if (sigaction(BROADCAST_SIGNAL, &sa, &old))
		return -errno;
	*threads = 0;
	for (pass = 0; pass < BROADCAST_PASSES; pass++) {
		atomic_store(&target.acks, 0);
		sent = signal_pending_threads(self);
		if (sent <= 0)
			break;
		*threads += sent;
		wait_acks(sent);
	}
	if (sent < 0)
		err = sent;
	else if (sent > 0)
		err = -EAGAIN;
	/* A signal still pending in a late thread must not kill the process (the default action
	 * of a real-time signal): ignoring discards it.
	 */
	if (old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
		old.sa_handler = SIG_IGN;
	sigaction(BROADCAST_SIGNAL, &old, NULL);
	return err;
}

static int read_last_cap(void)
{
	char buf[16] = "";
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	long v = CAP_LAST_CAP;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtol(buf, NULL, 10);
		fclose(f);
	}
	return v > 0 && v < 64 ? (int)v : CAP_LAST_CAP;
}

int privileges__drop(unsigned int flags)
{
	uint64_t eff, prm, kept_eff, kept_prm;
	int err, threads = 0;
	char names[512];

	err = capget_self(&eff, &prm);
	if (err) {
		pr_warn("capabilities: capget: %s; keeping them\n", strerror(-err));
		return err;
	}
	target.keep = privileges__running_set(prm, flags, bpf_needs_cap(eff, prm));
	target.last_cap = read_last_cap();
	atomic_store(&target.errors, 0);
	err = drop_other_threads(&threads);
	if (drop_this_thread() && !err)
		err = -EPERM;
	if (!err && atomic_load(&target.errors))
		err = -EPERM;
	if (capget_self(&kept_eff, &kept_prm))
		kept_prm = target.keep;
	cap_set__format(kept_prm, names, sizeof(names));
	if (err) {
		pr_warn("capabilities after start-up: %s in this thread, but not every thread could "
			"drop the others: %s\n",
			names, strerror(-err));
	} else {
		log__printf(flags & PRIVILEGES_LOG_DEBUG ? LOG_DEBUG : LOG_INFO,
			    "capabilities after start-up: %s (dropped %d others; %d other "
			    "threads)\n",
			    names, __builtin_popcountll(prm & ~kept_prm), threads);
	}
	return err;
}
