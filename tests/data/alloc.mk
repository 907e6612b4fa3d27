# The allocation workload (tests/system/test_alloc.sh): known bytes from known chains, a leak.

$(BUILD)/wl_alloc: wl_alloc.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

FIXTURES += $(BUILD)/wl_alloc
