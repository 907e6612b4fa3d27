# arm64 fixtures (issue 19): built by Debian's cross compiler, run under qemu-aarch64 by
# tests/unit/test_replay_arm64.c. Static (qemu-user needs no arm64 loader) and with return
# addresses signed by pointer authentication. Skipped where the cross compiler is missing
# (the test then says so; setup.sh installs it).
ARM64_CC ?= aarch64-linux-gnu-gcc

ifneq ($(shell command -v $(ARM64_CC)),)
FIXTURES += $(BUILD)/arm64_chain $(BUILD)/arm64_wl_chain_nofp $(BUILD)/arm64_glibc_tsd
FIXTURES += $(BUILD)/hotspot_arm64_shapes.bin
endif

$(BUILD)/arm64_chain: arm64_chain.c | $(BUILD)
	$(ARM64_CC) -O2 -g -static -fomit-frame-pointer -mbranch-protection=pac-ret $< -o $@

# the known chain of the kernel matrix's arm64 row (scripts/kernel_matrix.sh aarch64): wl_chain.c
# as wl_chain_nofp is on x86-64, dynamic (the root carries Debian's arm64 libc), no frame pointer
$(BUILD)/arm64_wl_chain_nofp: wl_chain.c wl_common.h | $(BUILD)
	$(ARM64_CC) -O2 -g -Wall -fomit-frame-pointer $< -o $@

# glibc's arm64 TSD offsets (tests/unit/test_glibc_tsd.c), run with Debian's arm64 libc
$(BUILD)/arm64_glibc_tsd: glibc_tsd.c | $(BUILD)
	$(ARM64_CC) -O2 -g -Wall $< -o $@ -pthread

# HotSpot's arm64 frame shapes (tests/unit/test_hotspot_arm64.c): the code bytes alone
$(BUILD)/hotspot_arm64_shapes.bin: hotspot_arm64_shapes.S | $(BUILD)
	$(ARM64_CC) -c $< -o $@.o
	$(ARM64_CC:gcc=objcopy) -O binary -j .text $@.o $@
	rm -f $@.o
