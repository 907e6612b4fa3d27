# arm64 fixtures (issue 19): built by Debian's cross compiler, run under qemu-aarch64 by
# tests/unit/test_replay_arm64.c. Static (qemu-user needs no arm64 loader) and with return
# addresses signed by pointer authentication. Skipped where the cross compiler is missing
# (the test then says so; setup.sh installs it).
ARM64_CC ?= aarch64-linux-gnu-gcc

ifneq ($(shell command -v $(ARM64_CC)),)
FIXTURES += $(BUILD)/arm64_chain
endif

$(BUILD)/arm64_chain: arm64_chain.c | $(BUILD)
	$(ARM64_CC) -O2 -g -static -fomit-frame-pointer -mbranch-protection=pac-ret $< -o $@
