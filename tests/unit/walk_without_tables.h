/* The native walk's hooks for the unit tests that run one runtime's eBPF walk (bpf/interp/) as
 * C on its own, over memory they lay out or a process they start (test_perl.c, test_php.c,
 * test_hotspot_stub.c): no mapping, file, table page, entry or rule is ever found, and a
 * switch to Go's g0 ends the walk (the runtime's g is not modelled), as eBPF's does for a
 * process it has no Go entry for. Then native_unwind.h itself.
 *
 * Include after the test's ss_read_user() and before its runtime hooks (ss_interp_file,
 * ss_interp_proc, ss_interp_count) and interp/interp_walk.h.
 */
#ifndef STACKSCOPE_WALK_WITHOUT_TABLES_H
#define STACKSCOPE_WALK_WITHOUT_TABLES_H

#include "abi.h"

static struct mapping_info *ss_lookup_mapping(__u32 pid, __u64 pc)
{
	(void)pid, (void)pc;
	return NULL;
}

static struct file_info *ss_lookup_file(__u64 file_id)
{
	(void)file_id;
	return NULL;
}

static struct unwind_page *ss_lookup_page(__u64 file_id, __u64 page)
{
	(void)file_id, (void)page;
	return NULL;
}

static struct unwind_entry *ss_lookup_entry(__u32 index)
{
	(void)index;
	return NULL;
}

static struct unwind_rule *ss_lookup_rule(__u32 index)
{
	(void)index;
	return NULL;
}

struct unwind_cursor;
static int ss_go_goroutine(struct unwind_cursor *st, __u32 which, struct go_sched *ctx)
{
	(void)st, (void)which, (void)ctx;
	return -1;
}

#include "native_unwind.h"

#endif
