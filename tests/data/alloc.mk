# The allocation workload (tests/system/test_alloc.sh): known bytes from known chains, a leak.

$(BUILD)/wl_alloc: wl_alloc.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

FIXTURES += $(BUILD)/wl_alloc

# The command's process tree (test_alloc_tree.sh): exec, fork, exit with live allocations.
# Frame pointers: they allocate in their first milliseconds, before a loaded box has built a
# new file's unwind table (a walk without one stopped at "[unwind: unmapped pc]"); the test
# is about what stays in use, not about unwinding.
$(BUILD)/wl_alloc_tree: wl_alloc_tree.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_FP) $< -o $@

# An allocator of the executable's own whose free accepts anything: double frees, foreign ones.
$(BUILD)/wl_alloc_odd: wl_alloc_odd.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_FP) $< -o $@

FIXTURES += $(BUILD)/wl_alloc_tree $(BUILD)/wl_alloc_odd
