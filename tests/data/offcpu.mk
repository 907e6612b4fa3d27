# The off-CPU workload (tests/system/test_offcpu.sh): threads blocking in known chains.

$(BUILD)/wl_offcpu: wl_offcpu.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) -pthread $< -o $@

FIXTURES += $(BUILD)/wl_offcpu
