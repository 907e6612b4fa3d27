# Fixtures for tests/unit/test_cfi.c: the same sources built by gcc and clang at several
# optimisation levels, with and without frame pointers, plus a .debug_frame-only build
# (-fno-asynchronous-unwind-tables), so the interpreter meets the CFI real compilers emit.

CFI_GCC   ?= gcc
CFI_GXX   ?= g++
CFI_CLANG ?= clang
CFI_CLANGXX ?= clang++

CFI_FIXTURES := cfi_gcc_O0 cfi_gcc_O2 cfi_gcc_O2_nofp cfi_gcc_O2_fp cfi_clang_O0 \
		cfi_clang_O2_nofp cfi_gcc_debug_frame cfi_gxx_O2 cfi_gxx_O0 cfi_clangxx_O2

FIXTURES += $(addprefix $(BUILD)/,$(CFI_FIXTURES))

CFI_LIBS := -pthread

$(BUILD)/cfi_gcc_O0: cfi_frames.c | $(BUILD)
	$(CFI_GCC) -O0 -g $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_gcc_O2: cfi_frames.c | $(BUILD)
	$(CFI_GCC) -O2 -g $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_gcc_O2_nofp: cfi_frames.c | $(BUILD)
	$(CFI_GCC) -O2 -fomit-frame-pointer $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_gcc_O2_fp: cfi_frames.c | $(BUILD)
	$(CFI_GCC) -O2 -fno-omit-frame-pointer -fPIC -shared $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_clang_O0: cfi_frames.c | $(BUILD)
	$(CFI_CLANG) -O0 -g $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_clang_O2_nofp: cfi_frames.c | $(BUILD)
	$(CFI_CLANG) -O2 -fomit-frame-pointer $< -o $@ $(CFI_LIBS)

# .debug_frame for the program's own code; crt files still bring some .eh_frame.
$(BUILD)/cfi_gcc_debug_frame: cfi_frames.c | $(BUILD)
	$(CFI_GCC) -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@ $(CFI_LIBS)

$(BUILD)/cfi_gxx_O2: cfi_exceptions.cc | $(BUILD)
	$(CFI_GXX) -O2 $< -o $@

$(BUILD)/cfi_gxx_O0: cfi_exceptions.cc | $(BUILD)
	$(CFI_GXX) -O0 -fno-omit-frame-pointer $< -o $@

$(BUILD)/cfi_clangxx_O2: cfi_exceptions.cc | $(BUILD)
	$(CFI_CLANGXX) -O2 $< -o $@

# The same .debug_frame from a separate debug file, and compressed (SHF_COMPRESSED).
$(BUILD)/cfi_gcc_debug_frame.debug: $(BUILD)/cfi_gcc_debug_frame
	objcopy --only-keep-debug $< $@

$(BUILD)/cfi_gcc_debug_frame_stripped: $(BUILD)/cfi_gcc_debug_frame
	strip --strip-debug $< -o $@

$(BUILD)/cfi_gcc_debug_frame_gz: $(BUILD)/cfi_gcc_debug_frame
	objcopy --compress-debug-sections=zlib $< $@

FIXTURES += $(addprefix $(BUILD)/,cfi_gcc_debug_frame.debug cfi_gcc_debug_frame_stripped \
	    cfi_gcc_debug_frame_gz)

$(BUILD)/cfi_sigtramp: cfi_sigtramp.c | $(BUILD)
	$(CFI_GCC) -O2 $< -o $@

FIXTURES += $(BUILD)/cfi_sigtramp

# A table larger than a segment of the entry pool (tests/unit/test_replay.c huge_table,
# tests/system/test_tables.sh).
$(BUILD)/wl_huge_cfi: wl_huge_cfi.S | $(BUILD)
	$(CFI_GCC) $< -o $@

FIXTURES += $(BUILD)/wl_huge_cfi
