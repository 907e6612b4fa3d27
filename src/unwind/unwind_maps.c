/* Unwind tables -> BPF maps. See unwind_maps.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>

#include <bpf/bpf.h>

#include "abi.h"
#include "base/log.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "proc/executable.h"
#include "formats/debuginfo.h"
#include "unwind/segment_maker.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_maps.h"
#include "unwind/unwind_table.h"

#define RULE_CAP 65536u
#define PAGE_SIZE_ELF (1ull << UNWIND_PAGE_SHIFT)
/* BPF array elements are 8-byte aligned in the memory-mapped view. */
#define RULE_STRIDE ((sizeof(struct unwind_rule) + 7) & ~(size_t)7)

/* A range of entries, by index (bpf/abi.h: the segment's slot, then the index in it). Free
 * ranges never cross a segment: segments' index ranges are never adjacent (each is smaller
 * than its slot's 1 << UNWIND_SEGMENT_SHIFT).
 */
struct pool_range {
	uint32_t first, cnt;
};

/* A segment of the pool: a BPF array of pairs in "unwind_segments" (fd -1: slot unused). */
struct pool_segment {
	int fd;
	uint32_t cnt; /* entries */
};

/* What unloading a file must undo. A table has one range of the pool, or, when no free range
 * nor a new segment holds it whole (larger than a segment, or the pool fragmented), pieces
 * split at its pages: each page's entries lie in one range, so in one segment (bpf/abi.h).
 */
struct loaded_file {
	struct pool_range *ranges;
	uint32_t range_cnt;
	uint32_t entries; /* over all its ranges */
	uint64_t *pages;
	size_t page_cnt;
};

struct unwind_maps {
	int files_fd, pages_fd;
	int segments_fd;
	/* While a table is written: a mapping of just the pages of its segment that hold its
	 * range (entries[i - win_first], i the index in the segment); else NULL. Mapping the whole
	 * segment would cost page-table work per load and count as our RSS on top of the kernel
	 * memory it is.
	 */
	struct unwind_entry *entries;
	size_t win_first, win_bytes;
	uint32_t range_first, range_end; /* the range being written, in the window */
	uint8_t *rules;                  /* mmap of unwind_rules, RULE_STRIDE bytes per rule */
	size_t entry_cap;                /* all segments together at most */
	size_t segment_entries;          /* every segment's (bpf/abi.h) */
	size_t created;                  /* entries in the segments made so far */
	bool hold_growth;                /* unwind_maps__hold_growth(): no segment past the first */
	struct pool_segment segments[UNWIND_SEGMENT_MAX];
	struct segment_maker *maker; /* borrowed: makes them (NULL: we do, with CAP_BPF) */
	struct u64_map rule_index;   /* hash(rule) -> chain of rule ids + 1 (see find_rule) */
	uint32_t rule_cnt;
	uint32_t load_seq;              /* the last table load's (struct unwind_page) */
	struct pool_range *free_ranges; /* sorted by first, coalesced */
	size_t free_cnt, free_cap;
	uint32_t *page_need; /* the entries of each page of the table being counted */
	size_t page_need_cap;
	struct u64_map loaded;            /* file_id -> struct loaded_file */
	struct u64_map status;            /* file_id -> struct table_status */
	struct unwind_row_cursor *cursor; /* the window of rows load_pages() reads */
	struct table_cache *cache;        /* borrowed, may be NULL */
	struct debuginfo *di;             /* borrowed, may be NULL: separate debug files */
	struct unwind_maps_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Map the pages of the entry pool that hold entries [first, first + cnt) (one segment). */
static int map_window(struct unwind_maps *um, uint32_t first, uint32_t cnt)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), esz = sizeof(struct unwind_entry);
	uint32_t in_seg = first & UNWIND_SEGMENT_INDEX_MASK;
	size_t start = ((size_t)in_seg * esz) & ~(page - 1);
	size_t end = (((size_t)in_seg + cnt) * esz + page - 1) & ~(page - 1);
	void *p;

	if (!cnt)
		end = start + page;
	p = mmap(NULL, end - start, PROT_READ | PROT_WRITE, MAP_SHARED,
		 um->segments[first >> UNWIND_SEGMENT_SHIFT].fd, (off_t)start);
	if (p == MAP_FAILED)
		return -errno;
	um->entries = p;
	um->win_first = (first & ~UNWIND_SEGMENT_INDEX_MASK) + start / esz;
	um->win_bytes = end - start;
	um->range_first = first;
	um->range_end = first + cnt;
	return 0;
}

static void unmap_window(struct unwind_maps *um)
{
	if (um->entries)
		munmap(um->entries, um->win_bytes);
	um->entries = NULL;
}

static void *map_array(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct unwind_maps *unwind_maps__new(int files_fd, int pages_fd, int segments_fd, int rules_fd,
				     size_t entry_cap)
{
	struct unwind_maps *um = calloc(1, sizeof(*um));
	size_t i;
	int err;

	if (!um)
		return NULL;
	for (i = 0; i < UNWIND_SEGMENT_MAX; i++)
		um->segments[i].fd = -1;
	um->files_fd = files_fd;
	um->pages_fd = pages_fd;
	um->entry_cap = entry_cap & ~(size_t)1;
	um->segment_entries = UNWIND_SEGMENT_ENTRIES_OF((uint32_t)um->entry_cap);
	um->segments_fd = segments_fd;
	um->rules = map_array(rules_fd, RULE_CAP * RULE_STRIDE);
	um->free_ranges = malloc(sizeof(*um->free_ranges) * 16);
	um->cursor = malloc(sizeof(*um->cursor));
	if (!um->rules || !um->free_ranges || !um->cursor) {
		err = errno ? errno : ENOMEM;
		unwind_maps__free(um);
		errno = err;
		return NULL;
	}
	um->free_cap = 16;
	um->free_cnt = 0; /* segments come with the first tables */
	return um;
}

static void loaded_file__free(void *file)
{
	struct loaded_file *lf = file;

	if (lf) {
		free(lf->pages);
		free(lf->ranges);
	}
	free(lf);
}

void unwind_maps__free(struct unwind_maps *um)
{
	size_t i;

	if (!um)
		return;
	if (um->rules)
		munmap(um->rules, RULE_CAP * RULE_STRIDE);
	for (i = 0; i < UNWIND_SEGMENT_MAX; i++)
		if (um->segments[i].fd >= 0)
			close(um->segments[i].fd);
	u64_map__free_values(&um->loaded, loaded_file__free);
	u64_map__free_values(&um->status, free);
	u64_map__free(&um->rule_index);
	free(um->free_ranges);
	free(um->page_need);
	free(um->cursor);
	free(um);
}

void unwind_maps__set_cache(struct unwind_maps *um, struct table_cache *cache)
{
	um->cache = cache;
}

void unwind_maps__set_debuginfo(struct unwind_maps *um, struct debuginfo *di)
{
	um->di = di;
}

const struct unwind_maps_stats *unwind_maps__stats(const struct unwind_maps *um)
{
	return &um->stats;
}

struct table_status *unwind_maps__status(struct unwind_maps *um, uint64_t file_id)
{
	struct table_status *st = u64_map__get(&um->status, file_id);

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (st && u64_map__set(&um->status, file_id, st)) {
		free(st);
		st = NULL;
	}
	return st;
}

struct table_status *unwind_maps__find_status(struct unwind_maps *um, uint64_t file_id)
{
	return u64_map__get(&um->status, file_id);
}

void unwind_maps__note_sampled(struct unwind_maps *um, uint64_t file_id, uint64_t now_ns)
{
	struct table_status *st = um ? unwind_maps__status(um, file_id) : NULL;

	if (!st)
		return;
	st->last_sampled_ns = now_ns;
	if (st->state != UNWIND_TABLE_LOADED && st->wanted < UINT32_MAX)
		st->wanted++;
}

void unwind_maps__forget(struct unwind_maps *um, uint64_t file_id)
{
	if (um)
		free(u64_map__del(&um->status, file_id));
}

/* Set file_id's state (out of memory: not kept, the file reads as NONE). */
static void set_state(struct unwind_maps *um, uint64_t file_id, enum unwind_table_state state)
{
	struct table_status *st = unwind_maps__status(um, file_id);

	if (st)
		st->state = state;
}

/* Rule id of r, adding it to the table if new; -ENOSPC when the table is full. Collisions of
 * the 64-bit hash are resolved by probing successive keys.
 */
static int rule_id(struct unwind_maps *um, const struct unwind_rule *r)
{
	uint64_t h = 0;
	uint8_t bytes[sizeof(*r)];
	size_t i;
	int err;

	memcpy(bytes, r, sizeof(bytes));
	for (i = 0; i < sizeof(bytes); i++)
		h = (h ^ bytes[i]) * 0x100000001b3ULL;
	for (;; h++) {
		void *v;

		h |= 1;
		v = u64_map__get(&um->rule_index, h);
		if (!v)
			break;
		if (!memcmp(um->rules + ((uintptr_t)v - 1) * RULE_STRIDE, r, sizeof(*r)))
			return (int)((uintptr_t)v - 1);
	}
	if (um->rule_cnt >= RULE_CAP)
		return -ENOSPC;
	memcpy(um->rules + um->rule_cnt * RULE_STRIDE, r, sizeof(*r));
	err = u64_map__set(&um->rule_index, h, (void *)(uintptr_t)(um->rule_cnt + 1));
	if (err)
		return err;
	um->stats.rules_used = ++um->rule_cnt;
	return (int)(um->rule_cnt - 1);
}

/* Insert r in the free list at i (no neighbour to merge with). */
static int free_insert(struct unwind_maps *um, size_t i, struct pool_range r)
{
	if (um->free_cnt == um->free_cap) {
		struct pool_range *n = realloc(um->free_ranges, um->free_cap * 2 * sizeof(*n));

		if (!n)
			return -ENOMEM;
		um->free_ranges = n;
		um->free_cap *= 2;
	}
	memmove(&um->free_ranges[i + 1], &um->free_ranges[i], (um->free_cnt - i) * sizeof(r));
	um->free_ranges[i] = r;
	um->free_cnt++;
	return 0;
}

/* The most segments the cap allows. */
static uint32_t segments_max(const struct unwind_maps *um)
{
	size_t max = um->segment_entries ? um->entry_cap / um->segment_entries : 0;

	return (uint32_t)(max < UNWIND_SEGMENT_MAX ? max : UNWIND_SEGMENT_MAX);
}

/* A new segment (bpf/abi.h: all of one size, the pool's cap in whole segments); its entries
 * become a free range. Segments stay until um goes (growing only: a sample may be inside one
 * at any moment). -ENOSPC when the cap or the slots do not allow it.
 */
static int pool_grow(struct unwind_maps *um)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	size_t size = um->segment_entries;
	uint32_t slot;
	int fd, err;

	if (!size || size > um->entry_cap - um->created || (um->hold_growth && um->created))
		return -ENOSPC;
	for (slot = 0; slot < UNWIND_SEGMENT_MAX && um->segments[slot].fd >= 0; slot++)
		;
	if (slot == UNWIND_SEGMENT_MAX)
		return -ENOSPC;
	if (um->maker)
		fd = segment_maker__make(um->maker, (uint32_t)size, segments_max(um));
	else
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_segment", sizeof(uint32_t),
				    sizeof(struct unwind_entry_pair), (uint32_t)(size / 2), &opts);
	if (fd < 0)
		return fd;
	if (bpf_map_update_elem(um->segments_fd, &slot, &fd, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	/* slots are taken in order, so the new range goes last */
	err = free_insert(um, um->free_cnt,
			  (struct pool_range){ slot << UNWIND_SEGMENT_SHIFT, (uint32_t)size });
	if (err) {
		bpf_map_delete_elem(um->segments_fd, &slot);
		close(fd);
		return err;
	}
	um->segments[slot] = (struct pool_segment){ fd, (uint32_t)size };
	um->created += size;
	um->stats.segments++;
	um->stats.entries_created = um->created;
	pr_debug("unwind-entry pool: segment %u of %zu entries (%zu of %zu made)\n", slot, size,
		 um->created, um->entry_cap);
	return 0;
}

/* First fit in the segments made, else in a new one. */
static int pool_alloc(struct unwind_maps *um, uint32_t cnt, uint32_t *first)
{
	struct pool_range *r;
	size_t i;
	int err;

	if (cnt > um->segment_entries)
		return -E2BIG;
	for (i = 0;; i++) {
		if (i == um->free_cnt) {
			err = pool_grow(um);
			if (err)
				return err;
		}
		r = &um->free_ranges[i];
		if (r->cnt < cnt)
			continue;
		*first = r->first;
		r->first += cnt;
		r->cnt -= cnt;
		if (!r->cnt) {
			memmove(r, r + 1, (um->free_cnt - i - 1) * sizeof(*r));
			um->free_cnt--;
		}
		um->stats.entries_used += cnt;
		return 0;
	}
}

/* Return a range to the free list, merging it with its neighbours. */
static int pool_free(struct unwind_maps *um, struct pool_range r)
{
	size_t i = 0;

	if (!r.cnt)
		return 0;
	while (i < um->free_cnt && um->free_ranges[i].first < r.first)
		i++;
	if (i > 0 && um->free_ranges[i - 1].first + um->free_ranges[i - 1].cnt == r.first) {
		um->free_ranges[i - 1].cnt += r.cnt;
		if (i < um->free_cnt && r.first + r.cnt == um->free_ranges[i].first) {
			um->free_ranges[i - 1].cnt += um->free_ranges[i].cnt;
			memmove(&um->free_ranges[i], &um->free_ranges[i + 1],
				(um->free_cnt - i - 1) * sizeof(r));
			um->free_cnt--;
		}
	} else if (i < um->free_cnt && r.first + r.cnt == um->free_ranges[i].first) {
		um->free_ranges[i].first = r.first;
		um->free_ranges[i].cnt += r.cnt;
	} else if (free_insert(um, i, r)) {
		return -ENOMEM; /* the range leaks; counted as used */
	}
	um->stats.entries_used -= r.cnt;
	return 0;
}

/* Entries free in the segments made, plus those of the segments the cap still allows. */
static size_t pool_room(const struct unwind_maps *um)
{
	size_t i, room = 0, slots = 0, grow;

	for (i = 0; i < um->free_cnt; i++)
		room += um->free_ranges[i].cnt;
	for (i = 0; i < UNWIND_SEGMENT_MAX; i++)
		slots += um->segments[i].fd < 0;
	grow = um->segment_entries ? (um->entry_cap - um->created) / um->segment_entries : 0;
	if (um->hold_growth && um->created)
		grow = 0;
	return room + (grow < slots ? grow : slots) * um->segment_entries;
}

/* Ranges for a table whose pages need um->page_need[0 .. page_cnt) entries, need in all: one
 * range when one fits (first fit, else a new segment), else pieces at page boundaries: the
 * first free range that holds the next page takes as many pages as it can, a new segment
 * when none does. -ENOSPC without room (nothing kept).
 */
static int pool_alloc_table(struct unwind_maps *um, uint32_t need, size_t page_cnt,
			    struct loaded_file *lf)
{
	size_t i = 0, k;
	uint32_t first;
	int err;

	lf->range_cnt = 0;
	lf->entries = 0;
	if (!need)
		return 0;
	lf->ranges = malloc(sizeof(*lf->ranges));
	if (!lf->ranges)
		return -ENOMEM;
	err = need <= um->segment_entries ? pool_alloc(um, need, &first) : -ENOSPC;
	if (err != -ENOSPC) {
		if (!err) {
			lf->ranges[0] = (struct pool_range){ first, need };
			lf->range_cnt = 1;
			lf->entries = need;
		}
		return err;
	}
	if (need > pool_room(um))
		return -ENOSPC;
	while (i < page_cnt) {
		uint32_t take = 0;
		struct pool_range *n;

		for (k = 0; k < um->free_cnt && um->free_ranges[k].cnt < um->page_need[i]; k++)
			;
		if (k == um->free_cnt) {
			err = pool_grow(um); /* the new segment's range comes last */
			if (!err && um->free_ranges[k].cnt < um->page_need[i])
				err = -E2BIG; /* a page larger than a segment: never (bpf/abi.h) */
			if (err)
				goto undo;
		}
		while (i < page_cnt && take + um->page_need[i] <= um->free_ranges[k].cnt)
			take += um->page_need[i++];
		n = realloc(lf->ranges, (lf->range_cnt + 1) * sizeof(*n));
		if (!n) {
			err = -ENOMEM;
			goto undo;
		}
		lf->ranges = n;
		/* the ranges before k are smaller than page i's need, so smaller than take */
		err = pool_alloc(um, take, &first);
		if (err)
			goto undo;
		lf->ranges[lf->range_cnt++] = (struct pool_range){ first, take };
		lf->entries += take;
	}
	um->stats.tables_split++;
	return 0;
undo:
	while (lf->range_cnt)
		pool_free(um, lf->ranges[--lf->range_cnt]);
	lf->entries = 0;
	return err;
}

/* Note a counted page's entries (um->page_need[page_i]). */
static int note_page_need(struct unwind_maps *um, size_t page_i, uint32_t n)
{
	if (page_i == um->page_need_cap) {
		size_t cap = um->page_need_cap ? um->page_need_cap * 2 : 256;
		uint32_t *p = realloc(um->page_need, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		um->page_need = p;
		um->page_need_cap = cap;
	}
	um->page_need[page_i] = n;
	return 0;
}

/* Write entry pos of the table being loaded, in the window of its current range; an entry
 * past it (a page of gaps only, left out afterwards) is not written.
 */
static void put_entry(struct unwind_maps *um, uint32_t pos, struct unwind_entry e)
{
	if (um->entries && pos >= um->range_first && pos < um->range_end)
		um->entries[pos - um->win_first] = e;
}

/* Every 64 KiB page from the first row to the last that holds something other than INVALID
 * gets entry 0 (the rule in force at its start) plus one entry per row inside it. Without lf
 * this only counts: the entries (*used) and each kept page's (um->page_need), so the pool
 * ranges can be allocated; with lf it writes them into lf's ranges in order, the next range
 * taken at the page where one is full (pool_alloc_table() cut them there).
 * The rows are read a window at a time (um->cursor): a giant's table is never whole here.
 */
static int load_pages(struct unwind_maps *um, uint64_t file_id, const struct unwind_table *t,
		      const struct loaded_file *lf, uint32_t *used, uint64_t *pages,
		      uint64_t *page_list)
{
	struct unwind_row_cursor *c = um->cursor;
	size_t i = 0, cnt = unwind_table__row_cnt(t);
	bool write = lf != NULL;
	uint32_t range = 0, pos = write && lf->range_cnt ? lf->ranges[0].first : 0;
	uint64_t page, last_page;
	struct unwind_rule in_force = { 0 };
	const struct unwind_row *r;
	int id, err;

	*used = 0;
	if (!cnt)
		return 0;
	if (write && lf->range_cnt) {
		err = map_window(um, lf->ranges[0].first, lf->ranges[0].cnt);
		if (err)
			return err;
	}
	unwind_row_cursor__init(c, t);
	r = unwind_row_cursor__get(c, cnt - 1);
	if (!r)
		return c->err ?: -EIO;
	last_page = r->addr >> UNWIND_PAGE_SHIFT;
	r = unwind_row_cursor__get(c, 0);
	if (!r)
		return c->err ?: -EIO;
	page = r->addr >> UNWIND_PAGE_SHIFT;
	in_force.kind = UNWIND_RULE_INVALID;
	for (; page <= last_page; page++) {
		uint64_t page_start = page << UNWIND_PAGE_SHIFT;
		uint32_t first, n = 0;
		bool useful = in_force.kind != UNWIND_RULE_INVALID;

		if (write && pos == um->range_end && range + 1 < lf->range_cnt) {
			unmap_window(um);
			range++;
			err = map_window(um, lf->ranges[range].first, lf->ranges[range].cnt);
			if (err)
				return err;
			pos = lf->ranges[range].first;
		}
		first = pos;
		r = i < cnt ? unwind_row_cursor__get(c, i) : NULL;
		if (c->err)
			return c->err;
		/* Entry 0: rule in force at the start of the page (unless a row starts there). */
		if (!r || r->addr != page_start) {
			if (write) {
				id = rule_id(um, &in_force);
				if (id < 0)
					return id;
				put_entry(um, pos, (struct unwind_entry){ 0, (uint16_t)id });
			}
			pos++;
			n++;
		}
		for (; i < cnt; i++) {
			r = unwind_row_cursor__get(c, i);
			if (!r)
				return c->err ?: -EIO;
			if (r->addr >= page_start + PAGE_SIZE_ELF)
				break;
			if (r->rule.kind != UNWIND_RULE_INVALID)
				useful = true;
			if (write) {
				id = rule_id(um, &r->rule);
				if (id < 0)
					return id;
				put_entry(um, pos,
					  (struct unwind_entry){
						  (uint16_t)(r->addr & (PAGE_SIZE_ELF - 1)),
						  (uint16_t)id });
			}
			pos++;
			n++;
			in_force = r->rule;
		}
		if (!useful) {
			pos = first; /* nothing but gaps: leave the page out */
			continue;
		}
		if (write) {
			struct unwind_page_key key = { .file_id = file_id, .page = page };
			struct unwind_page val = { .first = first,
						   .cnt = n,
						   .load_seq = um->load_seq };

			if (pos > um->range_end)
				return -EIO; /* not the pages counted: never */
			if (bpf_map_update_elem(um->pages_fd, &key, &val, BPF_ANY))
				return -errno;
			page_list[*pages] = page;
		} else if ((err = note_page_need(um, *pages, n))) {
			return err;
		}
		(*pages)++;
		*used += n;
	}
	return 0;
}

static void delete_pages(struct unwind_maps *um, uint64_t file_id, const uint64_t *pages,
			 size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++) {
		struct unwind_page_key key = { .file_id = file_id, .page = pages[i] };

		bpf_map_delete_elem(um->pages_fd, &key);
	}
	um->stats.pages -= cnt;
}

int unwind_maps__load_table(struct unwind_maps *um, uint64_t file_id, const struct unwind_table *t,
			    uint32_t *first, uint32_t *cnt)
{
	uint64_t pages = 0, page_cnt = 0;
	uint32_t need = 0, used = 0, i;
	struct file_info fi = { .flags = FILE_HAS_TABLE };
	struct loaded_file *lf = NULL;
	int err;

	if (u64_map__get(&um->loaded, file_id))
		return -EEXIST;
	err = load_pages(um, file_id, t, NULL, &need, &page_cnt, NULL);
	if (err)
		return err;
	if (need > um->entry_cap)
		return -E2BIG; /* larger than the whole pool: no eviction makes room */
	lf = calloc(1, sizeof(*lf));
	if (lf)
		lf->pages = calloc(page_cnt ? page_cnt : 1, sizeof(*lf->pages));
	if (!lf || !lf->pages) {
		err = -ENOMEM;
		goto fail;
	}
	err = pool_alloc_table(um, need, page_cnt, lf);
	if (err)
		goto fail;
	/* a new number for each load, even of a file loaded before (another table, perhaps) */
	if (!++um->load_seq)
		um->load_seq = 1;
	*first = lf->range_cnt ? lf->ranges[0].first : 0;
	err = load_pages(um, file_id, t, lf, &used, &pages, lf->pages);
	unmap_window(um);
	lf->page_cnt = pages;
	um->stats.pages += pages;
	if (!err && bpf_map_update_elem(um->files_fd, &file_id, &fi, BPF_ANY))
		err = -errno;
	if (!err)
		err = u64_map__set(&um->loaded, file_id, lf);
	if (err) {
		delete_pages(um, file_id, lf->pages, lf->page_cnt);
		bpf_map_delete_elem(um->files_fd, &file_id);
		for (i = 0; i < lf->range_cnt; i++)
			pool_free(um, lf->ranges[i]);
		goto fail;
	}
	*cnt = used;
	return 0;
fail:
	loaded_file__free(lf);
	return err;
}

void unwind_maps__unload_file(struct unwind_maps *um, uint64_t file_id)
{
	struct loaded_file *lf = u64_map__del(&um->loaded, file_id);
	uint32_t i;

	/* The files entry goes first: eBPF stops using the pages before they disappear. */
	bpf_map_delete_elem(um->files_fd, &file_id);
	if (!lf)
		return;
	delete_pages(um, file_id, lf->pages, lf->page_cnt);
	for (i = 0; i < lf->range_cnt; i++)
		pool_free(um, lf->ranges[i]);
	um->stats.files_unloaded++;
	loaded_file__free(lf);
}

void unwind_maps__unload(struct unwind_maps *um, struct executable *exe)
{
	struct table_status *st = unwind_maps__find_status(um, exe->file_id);

	unwind_maps__unload_file(um, exe->file_id);
	if (st && st->state == UNWIND_TABLE_LOADED)
		um->stats.files_loaded--;
	if (st)
		st->state = UNWIND_TABLE_NONE;
}

/* A file whose own CFI covers almost nothing (built without unwind tables: only the C
 * runtime's few FDEs) may have .debug_frame in a separate debug file (build id, debuglink).
 */
#define FEW_FDES 16

static int build_with_debug_file(struct unwind_maps *um, struct executable *exe,
				 struct unwind_table **out)
{
	struct debuginfo_result res;
	struct elf_file *dbg;
	int err;

	if (exe->kind == EXECUTABLE_VDSO || executable__find_debuginfo(exe, um->di, &res))
		return -ENOENT;
	if (res.source == DEBUGINFO_SELF || res.image) {
		debuginfo_result__release(&res);
		return -ENOENT;
	}
	dbg = elf_file__open_fd(res.fd);
	debuginfo_result__release(&res);
	if (!dbg)
		return -ENOENT;
	err = unwind_table__build(exe->elf, dbg, out);
	if (!err && !(unwind_table__stats(*out)->sources & UNWIND_SRC_DEBUG_FILE)) {
		unwind_table__free(*out);
		*out = NULL;
		err = -ENOENT;
	}
	elf_file__free(dbg);
	return err;
}

/* Count and name, once per build, a file whose table was built around malformed CFI. */
static void note_malformed(struct unwind_maps *um, const char *path, const struct unwind_table *t)
{
	const struct unwind_table_stats *st = unwind_table__stats(t);
	size_t bad = unwind_table_stats__malformed(st);

	if (!bad)
		return;
	um->stats.files_cfi_malformed++;
	um->stats.cfi_malformed += bad;
	pr_warn("%s: malformed CFI skipped: %zu of %zu FDEs (%zu with bad instructions), %zu "
		"CIEs, %zu sections cut short, %zu of %zu Go functions\n",
		path, st->bad_fde_cnt, st->bad_fde_cnt + st->fde_cnt, st->bad_insn_fde_cnt,
		st->bad_cie_cnt, st->truncated_section_cnt, st->bad_go_func_cnt,
		st->bad_go_func_cnt + st->go_func_cnt);
}

int unwind_maps__cached(struct unwind_maps *um, struct executable *exe, struct unwind_table **out)
{
	uint64_t t0 = now_ns();
	int err;

	*out = NULL;
	err = um->cache ? table_cache__load(um->cache, exe->file_id, out) : -ENOENT;
	um->stats.build_ns += now_ns() - t0;
	return err;
}

int unwind_maps__complete(struct unwind_maps *um, struct executable *exe, int err,
			  struct unwind_table **t)
{
	struct file_info fi = { .flags = FILE_NO_CFI };
	uint64_t t0 = now_ns();
	bool few = err == -ENOENT || (!err && unwind_table__stats(*t)->fde_cnt +
							      unwind_table__stats(*t)->go_func_cnt <
						      FEW_FDES);
	bool from_debug_file = false;

	if (few && um->di) {
		struct unwind_table *with_debug = NULL;

		if (!build_with_debug_file(um, exe, &with_debug)) {
			unwind_table__free(*t);
			*t = with_debug;
			err = 0;
			few = false;
			from_debug_file = true;
			um->stats.files_debug_frame++;
		}
	}
	/* A near-empty table may get better once a debug file is installed: not cached. Nor is
	 * one built from a debug file that a container supplied (its root): that file vouches
	 * only for itself (build ids and CRCs can be forged), so it must not outlive this run or
	 * reach other runs through the cache.
	 */
	if (!err && um->cache && !few && !(from_debug_file && exe->root.fd >= 0))
		table_cache__store(um->cache, exe->file_id, *t);
	if (!err)
		note_malformed(um, exe->path, *t);
	um->stats.build_ns += now_ns() - t0;
	if (err == -ENOENT) {
		set_state(um, exe->file_id, UNWIND_TABLE_NO_CFI);
		um->stats.files_no_cfi++;
		bpf_map_update_elem(um->files_fd, &exe->file_id, &fi, BPF_ANY);
	} else if (err) {
		set_state(um, exe->file_id, UNWIND_TABLE_FAILED);
		um->stats.files_failed++;
		pr_warn("%s: no unwind table (%s): frame pointers only\n", exe->path,
			strerror(-err));
	}
	return err;
}

int unwind_maps__install(struct unwind_maps *um, struct executable *exe,
			 const struct unwind_table *t)
{
	uint64_t t0 = now_ns();
	uint32_t first, cnt;
	int err = unwind_maps__load_table(um, exe->file_id, t, &first, &cnt);

	um->stats.load_ns += now_ns() - t0;
	if (err == -ENOSPC)
		return err; /* the caller may make room and retry */
	if (err) {
		struct file_info failed = { .flags = FILE_NO_TABLE };

		/* eBPF must not wait for this table (deferred unwinding): it will not come. */
		bpf_map_update_elem(um->files_fd, &exe->file_id, &failed, BPF_ANY);
		set_state(um, exe->file_id, UNWIND_TABLE_FAILED);
		um->stats.files_failed++;
		pr_warn("%s: no unwind table (%s): frame pointers only\n", exe->path,
			strerror(-err));
		return err;
	}
	set_state(um, exe->file_id, UNWIND_TABLE_LOADED);
	um->stats.files_loaded++;
	pr_debug("%s: unwind table loaded, %u entries\n", exe->path, cnt);
	return 0;
}

int unwind_maps__load(struct unwind_maps *um, struct executable *exe)
{
	struct unwind_table *t = NULL;
	int err = unwind_maps__cached(um, exe, &t);

	if (err) {
		uint64_t t0 = now_ns();

		err = unwind_table__build(exe->elf, NULL, &t);
		um->stats.build_ns += now_ns() - t0;
		err = unwind_maps__complete(um, exe, err, &t);
	}
	if (!err) {
		err = unwind_maps__install(um, exe, t);
		if (err == -ENOSPC) {
			set_state(um, exe->file_id, UNWIND_TABLE_FAILED);
			um->stats.files_failed++;
			um->stats.pool_full++;
			pr_warn("%s: no unwind table (%s): frame pointers only\n", exe->path,
				strerror(-err));
		}
	}
	unwind_table__free(t);
	elf_file__drop_pages(exe->elf);
	return err == -ENOENT ? 0 : err;
}

size_t unwind_maps__pool_free(const struct unwind_maps *um)
{
	return um->entry_cap - um->stats.entries_used;
}

size_t unwind_maps__pool_cap(const struct unwind_maps *um)
{
	return um->entry_cap;
}

void unwind_maps__hold_growth(struct unwind_maps *um, bool hold)
{
	um->hold_growth = hold;
}

void unwind_maps__set_segment_maker(struct unwind_maps *um, struct segment_maker *m)
{
	um->maker = m;
}

int unwind_maps__segment_fd(const struct unwind_maps *um, uint32_t segment)
{
	return segment < UNWIND_SEGMENT_MAX ? um->segments[segment].fd : -1;
}

bool unwind_maps__has_cached(const struct unwind_maps *um, uint64_t file_id)
{
	return um->cache && table_cache__has(um->cache, file_id);
}

size_t unwind_maps__entries_needed(struct unwind_maps *um, const struct unwind_table *t)
{
	uint64_t page_cnt = 0;
	uint32_t need = 0;

	if (load_pages(um, 0, t, NULL, &need, &page_cnt, NULL))
		return SIZE_MAX;
	return need;
}

size_t unwind_maps__hole_without(const struct unwind_maps *um, uint64_t file_id)
{
	const struct loaded_file *lf = u64_map__get(&um->loaded, file_id);

	/* tables are split across free ranges when none holds them whole: all room counts */
	return lf ? pool_room(um) + lf->entries : 0;
}
