# glibc's TSD offsets (src/interp/common/glibc_tsd.h) checked by tests/unit/test_glibc_tsd.c; the
# arm64 build of the same program is in arm64.mk.
FIXTURES += $(BUILD)/glibc_tsd

$(BUILD)/glibc_tsd: glibc_tsd.c | $(BUILD)
	$(CC) -O2 -g -Wall $< -o $@ -pthread
