/* The kernel's BPF maps, stood in for by ordinary memory, for the replay tests that run the
 * eBPF unwinder (bpf/native_unwind.h) and the runtimes' walks (bpf/interp/) as plain C:
 * test_replay.c (native fixtures' snapshots) and test_replay_interp.c (stopped interpreters).
 *
 * The maps are written by the production code, never by the tests:
 *   - the unwind tables by unwind_maps__load_table() (src/unwind/unwind_maps.c): its rule
 *     array and the entry pool's segments are memfds instead of BPF array maps (it only mmaps
 *     them; bpf_map_create() below makes a segment, the array of maps "unwind_segments" is
 *     REPLAY_SEGMENTS_FD), its hash-map writes ("unwind_files", "unwind_pages") go through
 *     bpf_map_update_elem() below;
 *   - the runtimes' "interp_files", "interp_procs" and "interp_code" by the runtime registry
 *     (src/interp/registry.c), given the REPLAY_INTERP_*_FD descriptors.
 * bpf_map_create(), bpf_map_update_elem() and bpf_map_delete_elem() here replace libbpf's for the
 * whole test binary
 * (the test object is linked before -lbpf), with the same contract: 0, or -errno with errno set.
 * So what the walk reads is byte for byte what the kernel maps would hold.
 *
 * Caps: as the slot arrays below (a full map refuses with -E2BIG, as the kernel's). The
 * lookups return a pointer into the map (as bpf_map_lookup_elem) or a copy for the read-only
 * array views, valid until the next lookup of the same map. Include once, before the tests'
 * ss_* hooks; one instance per test binary.
 */
#ifndef STACKSCOPE_REPLAY_MAPS_H
#define STACKSCOPE_REPLAY_MAPS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "abi.h"
#include "formats/elf_file.h"
#include "unwind/unwind_maps.h"
#include "unwind/unwind_table.h"

/* Descriptors handed to the loader and the registry; only the functions below use them. */
#define REPLAY_FILES_FD 0x10000
#define REPLAY_PAGES_FD 0x10001
#define REPLAY_INTERP_FILES_FD 0x10002
#define REPLAY_INTERP_PROCS_FD 0x10003
#define REPLAY_INTERP_CODE_FD 0x10004
#define REPLAY_SEGMENTS_FD 0x10005
#define REPLAY_FILE_CAP 320 /* the fixtures, and copies of libc's table (test_replay.c) */
#define REPLAY_PAGE_CAP 16384
#define REPLAY_ENTRY_CAP (1u << 21)
#define REPLAY_RULE_CAP 65536u /* max_entries of "unwind_rules" */
#define REPLAY_INTERP_CAP 16   /* each of the runtimes' maps */
/* A BPF array element takes its value size rounded up to 8 bytes in the mmap view. */
#define REPLAY_RULE_STRIDE ((sizeof(struct unwind_rule) + 7) & ~(size_t)7)

/* One hash map: fixed-size keys and values in slots, at most `cap`. */
struct replay_hash {
	uint8_t *keys, *vals;
	size_t key_sz, val_sz, cnt, cap;
};

static struct {
	struct replay_hash files, pages;            /* unwind_files, unwind_pages */
	struct replay_hash ifiles, iprocs, icode;   /* the runtimes' maps */
	int rules_fd;                               /* memfd for the BPF array map */
	const uint8_t *rules;                       /* our read-only view of it */
	struct {                                    /* "unwind_segments" */
		int fd;                             /* memfd (0: none) */
		const struct unwind_entry *entries; /* our read-only view */
		size_t cnt;
	} segments[UNWIND_SEGMENT_MAX];
	struct unwind_maps *um;
} kmaps;

static int replay_hash__init(struct replay_hash *h, size_t key_sz, size_t val_sz, size_t cap)
{
	h->keys = calloc(cap, key_sz);
	h->vals = calloc(cap, val_sz);
	h->key_sz = key_sz;
	h->val_sz = val_sz;
	h->cap = cap;
	h->cnt = 0;
	return h->keys && h->vals ? 0 : -ENOMEM;
}

static void replay_hash__free(struct replay_hash *h)
{
	free(h->keys);
	free(h->vals);
	memset(h, 0, sizeof(*h));
}

/* The slot of key, or h->cnt when absent. */
static size_t replay_hash__find(const struct replay_hash *h, const void *key)
{
	size_t i;

	for (i = 0; i < h->cnt && memcmp(h->keys + i * h->key_sz, key, h->key_sz); i++)
		;
	return i;
}

static void *replay_hash__lookup(const struct replay_hash *h, const void *key)
{
	size_t i = h->keys ? replay_hash__find(h, key) : 0;

	return h->keys && i < h->cnt ? h->vals + i * h->val_sz : NULL;
}

static struct replay_hash *replay_hash__of_fd(int fd)
{
	switch (fd) {
	case REPLAY_FILES_FD:
		return &kmaps.files;
	case REPLAY_PAGES_FD:
		return &kmaps.pages;
	case REPLAY_INTERP_FILES_FD:
		return &kmaps.ifiles;
	case REPLAY_INTERP_PROCS_FD:
		return &kmaps.iprocs;
	case REPLAY_INTERP_CODE_FD:
		return &kmaps.icode;
	}
	return NULL;
}

/* A segment of the entry pool (the only BPF array unwind_maps creates): a memfd of its size. */
int bpf_map_create(enum bpf_map_type map_type, const char *map_name, __u32 key_size,
		   __u32 value_size, __u32 max_entries, const struct bpf_map_create_opts *opts)
{
	int fd = memfd_create(map_name, MFD_CLOEXEC);

	(void)map_type, (void)key_size, (void)opts;
	if (fd >= 0 && ftruncate(fd, (off_t)value_size * max_entries)) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -errno : fd;
}

/* "unwind_segments"[*slot] = the segment behind *seg_fd, mapped read-only for the walk. */
static int replay_segment__set(const __u32 *slot, const int *seg_fd)
{
	struct stat st;
	void *p;

	if (*slot >= UNWIND_SEGMENT_MAX || kmaps.segments[*slot].fd || fstat(*seg_fd, &st)) {
		errno = EINVAL;
		return -EINVAL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, *seg_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	kmaps.segments[*slot].fd = *seg_fd;
	kmaps.segments[*slot].entries = p;
	kmaps.segments[*slot].cnt = (size_t)st.st_size / sizeof(struct unwind_entry);
	return 0;
}

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
	struct replay_hash *h = replay_hash__of_fd(fd);
	size_t i;

	if (fd == REPLAY_SEGMENTS_FD)
		return replay_segment__set(key, value);
	if (!h || !h->keys) {
		errno = EBADF;
		return -EBADF;
	}
	i = replay_hash__find(h, key);
	if (i == h->cap) {
		errno = E2BIG;
		return -E2BIG;
	}
	memcpy(h->keys + i * h->key_sz, key, h->key_sz);
	memcpy(h->vals + i * h->val_sz, value, h->val_sz);
	if (i == h->cnt)
		h->cnt++;
	return 0;
}

int bpf_map_delete_elem(int fd, const void *key)
{
	struct replay_hash *h = replay_hash__of_fd(fd);
	size_t i;

	if (!h || !h->keys) {
		errno = EBADF;
		return -EBADF;
	}
	i = replay_hash__find(h, key);
	if (i == h->cnt) {
		errno = ENOENT;
		return -ENOENT;
	}
	h->cnt--;
	memmove(h->keys + i * h->key_sz, h->keys + h->cnt * h->key_sz, h->key_sz);
	memmove(h->vals + i * h->val_sz, h->vals + h->cnt * h->val_sz, h->val_sz);
	return 0;
}

/* 0 or -errno; idempotent. */
static int kmaps_init(void)
{
	size_t rsz = (size_t)REPLAY_RULE_CAP * REPLAY_RULE_STRIDE;
	void *r;

	if (kmaps.um)
		return 0;
	if (replay_hash__init(&kmaps.files, sizeof(__u64), sizeof(struct file_info),
			      REPLAY_FILE_CAP) ||
	    replay_hash__init(&kmaps.pages, sizeof(struct unwind_page_key),
			      sizeof(struct unwind_page), REPLAY_PAGE_CAP) ||
	    replay_hash__init(&kmaps.ifiles, sizeof(__u64), sizeof(struct interp_file),
			      REPLAY_INTERP_CAP) ||
	    replay_hash__init(&kmaps.iprocs, sizeof(struct interp_proc_key),
			      sizeof(struct interp_proc), REPLAY_INTERP_CAP) ||
	    replay_hash__init(&kmaps.icode, sizeof(__u32), sizeof(struct interp_code),
			      REPLAY_INTERP_CAP))
		return -ENOMEM;
	kmaps.rules_fd = memfd_create("unwind_rules", MFD_CLOEXEC);
	if (kmaps.rules_fd < 0 || ftruncate(kmaps.rules_fd, (off_t)rsz))
		return -errno;
	r = mmap(NULL, rsz, PROT_READ, MAP_SHARED, kmaps.rules_fd, 0);
	kmaps.rules = r == MAP_FAILED ? NULL : r;
	if (!kmaps.rules)
		return -errno;
	kmaps.um = unwind_maps__new(REPLAY_FILES_FD, REPLAY_PAGES_FD, REPLAY_SEGMENTS_FD,
				    kmaps.rules_fd, REPLAY_ENTRY_CAP);
	return kmaps.um ? 0 : -errno;
}

static void kmaps_free(void)
{
	size_t i;

	unwind_maps__free(kmaps.um); /* closes the segments' fds */
	for (i = 0; i < UNWIND_SEGMENT_MAX; i++)
		if (kmaps.segments[i].entries)
			munmap((void *)kmaps.segments[i].entries,
			       kmaps.segments[i].cnt * sizeof(struct unwind_entry));
	if (kmaps.rules)
		munmap((void *)kmaps.rules, (size_t)REPLAY_RULE_CAP * REPLAY_RULE_STRIDE);
	if (kmaps.rules_fd > 0)
		close(kmaps.rules_fd);
	replay_hash__free(&kmaps.files);
	replay_hash__free(&kmaps.pages);
	replay_hash__free(&kmaps.ifiles);
	replay_hash__free(&kmaps.iprocs);
	replay_hash__free(&kmaps.icode);
	memset(&kmaps, 0, sizeof(kmaps));
}

/* Empty the runtimes' maps (a new world of processes; the unwind tables stay). */
static void kmaps_interp_clear(void)
{
	kmaps.ifiles.cnt = 0;
	kmaps.iprocs.cnt = 0;
	kmaps.icode.cnt = 0;
}

/* Build ef's unwind table and load it as file_id, as the profiler does: 0 or -errno. */
static int kmaps_load_table(struct elf_file *ef, uint64_t file_id)
{
	struct unwind_table *t = NULL;
	uint32_t first, cnt;
	int err = kmaps_init();

	if (!err)
		err = unwind_table__build(ef, NULL, &t);
	if (!err)
		err = unwind_maps__load_table(kmaps.um, file_id, t, &first, &cnt);
	unwind_table__free(t);
	return err;
}

/* ---- the lookups the walks' hooks make ----
 * The hooks every replay test answers straight from the maps are defined here (ss_*); so are
 * ss_lookup_file, ss_lookup_page and ss_lookup_rule unless the test defines
 * REPLAY_OWN_TABLE_HOOKS before including this and defines them over kmaps_*() itself
 * (test_replay.c hides files and overrides rules).
 */

static struct file_info *kmaps_file(__u64 file_id)
{
	return replay_hash__lookup(&kmaps.files, &file_id);
}

static struct unwind_page *kmaps_page(__u64 file_id, __u64 page)
{
	struct unwind_page_key k;

	memset(&k, 0, sizeof(k));
	k.file_id = file_id;
	k.page = page;
	return replay_hash__lookup(&kmaps.pages, &k);
}

/* Entry index of the whole pool (bpf/abi.h: segment, then index in it); NULL: none. */
static const struct unwind_entry *kmaps_entry(__u32 index)
{
	__u32 seg = index >> UNWIND_SEGMENT_SHIFT, i = index & UNWIND_SEGMENT_INDEX_MASK;

	if (seg >= UNWIND_SEGMENT_MAX || i >= kmaps.segments[seg].cnt)
		return NULL;
	return &kmaps.segments[seg].entries[i];
}

/* The segment as eBPF sees it: its slot, as a pointer (NULL: none). */
static void *ss_lookup_segment(__u32 segment)
{
	return segment < UNWIND_SEGMENT_MAX && kmaps.segments[segment].entries
		       ? &kmaps.segments[segment]
		       : NULL;
}

static struct unwind_entry *ss_lookup_entry(void *segment, __u32 index)
{
	static struct unwind_entry e;
	__u32 seg = (__u32)((char *)segment - (char *)kmaps.segments) / sizeof(kmaps.segments[0]);
	const struct unwind_entry *found = kmaps_entry((seg << UNWIND_SEGMENT_SHIFT) | index);

	if (!found || index > UNWIND_SEGMENT_INDEX_MASK)
		return NULL;
	e = *found; /* a copy: the view is read-only */
	return &e;
}

static struct unwind_rule *kmaps_rule(__u32 index)
{
	static struct unwind_rule r;

	if (index >= REPLAY_RULE_CAP || !kmaps.rules)
		return NULL;
	memcpy(&r, kmaps.rules + (size_t)index * REPLAY_RULE_STRIDE, sizeof(r));
	return &r;
}

static struct interp_file *kmaps_interp_file(__u64 file_id)
{
	return replay_hash__lookup(&kmaps.ifiles, &file_id);
}

static struct interp_proc *ss_interp_proc(__u32 pid, __u32 runtime)
{
	struct interp_proc_key key;

	memset(&key, 0, sizeof(key));
	key.pid = pid;
	key.kind = runtime;
	return replay_hash__lookup(&kmaps.iprocs, &key);
}

static struct interp_code *ss_interp_code(__u32 pid)
{
	return replay_hash__lookup(&kmaps.icode, &pid);
}

#ifndef REPLAY_OWN_TABLE_HOOKS
static struct file_info *ss_lookup_file(__u64 file_id)
{
	return kmaps_file(file_id);
}

static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	return kmaps_page(file_id, page);
}

static struct unwind_rule *ss_lookup_rule(__u32 index)
{
	return kmaps_rule(index);
}
#endif

/* The goroutine behind a switch to Go's g0 needs the runtime's g, not modelled here: the
 * walk ends there, as eBPF's does for a process it has no Go entry for.
 */
struct unwind_cursor;
static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx)
{
	(void)st, (void)which, (void)ctx;
	return -1;
}

#endif
