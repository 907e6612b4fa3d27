/* Unit tests for the BPF maps' sizes from the machine and its load (sampler/map_sizing.h). */
#include "sampler/map_sizing.h"
#include "test.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

/* This box: 2 CPUs, 24 GiB, ~120 processes: the whole pool (16 MiB), the small caps. */
TEST(small_quiet_box)
{
	struct map_sizing_input in = {
		.cpus = 2, .mem_bytes = 24 * GIB, .procs = 120, .threads = 160
	};
	struct map_sizes z;

	map_sizing__compute(&in, &z);
	CHECK_EQ_INT(z.unwind_entries, 1 << 22);
	CHECK_EQ_INT(z.unwind_pages, 1 << 14);
	CHECK_EQ_INT(z.proc_hash, 4096);
	CHECK_EQ_INT(z.proc_lru, 2048);
	CHECK_EQ_INT(z.forked, 4096);
	CHECK_EQ_INT(z.threads, 4096);
	CHECK_EQ_INT(z.mmap_pending, 1024);
}

/* 64 CPUs and 5000 processes: the old defaults (16384 per process). */
TEST(large_host_reaches_the_old_defaults)
{
	struct map_sizing_input in = {
		.cpus = 64, .mem_bytes = 256 * GIB, .procs = 5000, .threads = 40000
	};
	struct map_sizes z;

	map_sizing__compute(&in, &z);
	CHECK_EQ_INT(z.unwind_entries, 1 << 22);
	CHECK_EQ_INT(z.proc_hash, 1 << 14);
	CHECK_EQ_INT(z.forked, 1 << 15);
	CHECK_EQ_INT(z.threads, 1 << 16);
}

/* A 512 MiB machine keeps the pool within 1/256 of its memory (2 MiB: 512K entries). */
TEST(small_memory_caps_the_pool)
{
	struct map_sizing_input in = { .cpus = 4, .mem_bytes = 512 * MIB, .procs = 50 };
	struct map_sizes z;

	map_sizing__compute(&in, &z);
	CHECK_EQ_INT(z.unwind_entries, 1 << 19);
	CHECK(z.unwind_entries * 4ull <= in.mem_bytes / 256);
}

/* --map-scale multiplies every size; 0 counts as 1, beyond the maximum is the maximum. */
TEST(scale_multiplies)
{
	struct map_sizing_input in = {
		.cpus = 2, .mem_bytes = 24 * GIB, .procs = 120, .threads = 160
	};
	struct map_sizes one, four, big;

	map_sizing__compute(&in, &one);
	in.scale = 4;
	map_sizing__compute(&in, &four);
	in.scale = 1000;
	map_sizing__compute(&in, &big);
	CHECK_EQ_INT(four.unwind_entries, 4 * one.unwind_entries);
	CHECK_EQ_INT(four.proc_hash, 4 * one.proc_hash);
	CHECK_EQ_INT(four.forked, 4 * one.forked);
	CHECK_EQ_INT(four.files, 4 * one.files);
	CHECK_EQ_INT(four.threads, 4 * one.threads);
	CHECK_EQ_INT(big.proc_hash, MAP_SCALE_MAX * one.proc_hash);
}

/* What /proc says of this machine is plausible: some memory, this process among the rest. */
TEST(reads_the_machine)
{
	struct map_sizing_input in = { 0 };

	map_sizing__read_machine(&in);
	CHECK(in.mem_bytes > 16 * MIB);
	CHECK(in.procs >= 1);
	CHECK(in.threads >= 1);
}

int main(void)
{
	RUN(small_quiet_box);
	RUN(large_host_reaches_the_old_defaults);
	RUN(small_memory_caps_the_pool);
	RUN(scale_multiplies);
	RUN(reads_the_machine);
	return test_summary();
}
