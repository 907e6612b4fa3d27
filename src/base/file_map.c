/* Guarded read-only file mappings: a SIGBUS past the end of a shrunk file becomes a page of
 * zeros. See file_map.h.
 *
 * The registry is a fixed array of slots read lock-free by the signal handler. A slot's start
 * is 0 when free and SLOT_BUSY while its owner fills in len; the handler only trusts a slot
 * whose start is a real address. Slots below `slot_hi` may be in use; it never shrinks, so the
 * handler's scan is bounded by the most mappings ever open at once.
 */
#include "base/file_map.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOT_BUSY ((uintptr_t)1)

struct file_map_slot {
	_Atomic uintptr_t start;
	_Atomic size_t len;
	_Atomic int prot;
	atomic_bool changed;
};

static struct file_map_slot slots[FILE_MAP_CAP];
static _Atomic size_t slot_hi;
static _Atomic size_t open_cnt;
static _Atomic uint64_t fault_cnt;
static struct sigaction prev_bus;
static uintptr_t page_mask;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_err;

static struct file_map_slot *slot_of(uintptr_t addr)
{
	size_t i, hi = atomic_load_explicit(&slot_hi, memory_order_acquire);

	for (i = 0; i < hi; i++) {
		uintptr_t s = atomic_load_explicit(&slots[i].start, memory_order_acquire);

		if (s > SLOT_BUSY && addr >= s &&
		    addr - s < atomic_load_explicit(&slots[i].len, memory_order_relaxed))
			return &slots[i];
	}
	return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	int saved_errno = errno;
	uintptr_t addr = (uintptr_t)si->si_addr;
	struct file_map_slot *slot = si->si_code == BUS_ADRERR ? slot_of(addr) : NULL;

	if (slot && mmap((void *)(addr & page_mask), ~page_mask + 1, atomic_load(&slot->prot),
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
		atomic_store(&slot->changed, true);
		atomic_fetch_add(&fault_cnt, 1);
		errno = saved_errno;
		return; /* the access is retried and reads zeros */
	}
	errno = saved_errno;
	/* Not ours: whatever was there before us decides. */
	if ((prev_bus.sa_flags & SA_SIGINFO) && prev_bus.sa_sigaction) {
		prev_bus.sa_sigaction(sig, si, uctx);
		return;
	}
	if (prev_bus.sa_handler != SIG_DFL && prev_bus.sa_handler != SIG_IGN) {
		prev_bus.sa_handler(sig);
		return;
	}
	/* Default: die of this SIGBUS when the faulting access is retried. */
	signal(SIGBUS, SIG_DFL);
}

static void install(void)
{
	struct sigaction sa;

	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev_bus))
		install_err = errno;
}

const void *file_map__open(int fd, size_t size)
{
	return file_map__open_private(fd, size, false);
}

void *file_map__open_private(int fd, size_t size, bool writable)
{
	int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
	size_t i, hi;
	void *image;

	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&install_once, install);
	if (install_err) {
		errno = install_err;
		return NULL;
	}
	for (i = 0; i < FILE_MAP_CAP; i++) {
		uintptr_t expect = 0;

		if (atomic_compare_exchange_strong(&slots[i].start, &expect, SLOT_BUSY))
			break;
	}
	if (i == FILE_MAP_CAP) {
		errno = EMFILE;
		return NULL;
	}
	image = mmap(NULL, size, prot, MAP_PRIVATE, fd, 0);
	if (image == MAP_FAILED) {
		int err = errno;

		atomic_store(&slots[i].start, 0);
		errno = err;
		return NULL;
	}
	atomic_store(&slots[i].len, size);
	atomic_store(&slots[i].prot, prot);
	atomic_store(&slots[i].changed, false);
	atomic_store_explicit(&slots[i].start, (uintptr_t)image, memory_order_release);
	hi = atomic_load(&slot_hi);
	while (hi < i + 1 && !atomic_compare_exchange_weak(&slot_hi, &hi, i + 1))
		;
	atomic_fetch_add(&open_cnt, 1);
	return image;
}

void file_map__close(const void *image, size_t size)
{
	struct file_map_slot *slot;

	if (!image)
		return;
	slot = slot_of((uintptr_t)image);
	if (slot) {
		atomic_store(&slot->start, 0);
		atomic_fetch_sub(&open_cnt, 1);
	}
	munmap((void *)image, size);
}

bool file_map__changed(const void *image)
{
	struct file_map_slot *slot = image ? slot_of((uintptr_t)image) : NULL;

	return slot && atomic_load(&slot->changed);
}

uint64_t file_map__fault_cnt(void)
{
	return atomic_load(&fault_cnt);
}

size_t file_map__open_cnt(void)
{
	return atomic_load(&open_cnt);
}
