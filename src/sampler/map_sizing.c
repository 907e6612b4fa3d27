/* The BPF maps' sizes from the machine and its load. See map_sizing.h. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "sampler/map_sizing.h"

/* The unwind-entry pool stays at 4M entries (16 MiB) times the scale: a BPF array cannot grow,
 * and one large program needs most of it (clang's libraries did not fit in 1M: "found no
 * room", their samples frame pointers only; a system-wide record of this box under CI loaded
 * 3.99M). Only a small machine gets less: at most 1/256 of its memory.
 */
#define ENTRIES_DEFAULT (1u << 22)
/* (a 1 GiB machine: 4 MiB, 1M entries) */
#define ENTRIES_MEM_SHARE 256

static uint32_t pow2_at_least32(uint64_t v)
{
	uint64_t p = 1;

	while (p < v && p < (1ull << 31))
		p <<= 1;
	return (uint32_t)p;
}

static uint32_t clamp32(uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

/* pow2(per * procs) within [lo, hi], times scale. */
static uint32_t per_proc(const struct map_sizing_input *in, unsigned int scale, uint32_t per,
			 uint32_t lo, uint32_t hi)
{
	return clamp32(pow2_at_least32((uint64_t)per * in->procs), lo, hi) * scale;
}

void map_sizing__compute(const struct map_sizing_input *in, struct map_sizes *out)
{
	unsigned int scale = in->scale ? in->scale : 1;
	uint64_t entries = ENTRIES_DEFAULT;

	if (scale > MAP_SCALE_MAX)
		scale = MAP_SCALE_MAX;
	while (in->mem_bytes && entries > (1u << 16) &&
	       entries * 4 > in->mem_bytes / ENTRIES_MEM_SHARE)
		entries >>= 1;
	out->unwind_entries = (uint32_t)entries * scale;
	/* Pages are 64 KiB of code with a table (1 MiB of buckets at 65536): 16384 held this
	 * box's 127 files under CI; more with the scale.
	 */
	out->unwind_pages = (1u << 14) * scale;
	/* Hashes allocate per entry: their cap costs 16 bytes of bucket per entry (preallocated
	 * before Linux 6.1: the whole value), hence 16 per process seen, 4096-16384.
	 */
	out->proc_hash = per_proc(in, scale, 16, 1u << 12, 1u << 14);
	out->proc_lru = per_proc(in, scale, 8, 1u << 11, 1u << 14);
	out->forked = per_proc(in, scale, 16, 1u << 12, 1u << 15);
	out->files = per_proc(in, scale, 16, 1u << 12, 1u << 14);
	out->threads = clamp32(pow2_at_least32(4ull * in->threads), 1u << 12, 1u << 16) * scale;
	out->mmap_pending =
		clamp32(pow2_at_least32(256ull * (in->cpus ? in->cpus : 1)), 1u << 10, 1u << 12) *
		scale;
}

static uint64_t mem_total(void)
{
	unsigned long long kib = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib << 10;
}

static unsigned int process_count(void)
{
	unsigned int n = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		if (isdigit((unsigned char)d->d_name[0]))
			n++;
	closedir(dir);
	return n;
}

/* The scheduling entities, the 4th field of /proc/loadavg ("running/total"). */
static unsigned int thread_count(void)
{
	unsigned int running, total = 0;
	FILE *f = fopen("/proc/loadavg", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%*s %*s %*s %u/%u", &running, &total) != 2)
		total = 0;
	fclose(f);
	return total;
}

void map_sizing__read_machine(struct map_sizing_input *in)
{
	in->threads = thread_count();
	in->mem_bytes = mem_total();
	in->procs = process_count();
}
