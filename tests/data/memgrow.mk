# The memory-growth workload (tests/system/test_memgrow.sh): two chains growing memory 3:1.

$(BUILD)/wl_memgrow: wl_memgrow.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

FIXTURES += $(BUILD)/wl_memgrow
