# Workloads for the root-only system tests (tests/system/): programs with known call chains
# that burn CPU for the number of seconds given as argv[1]. The tests assert on these names,
# so every function on a chain is noinline and not a tail call.
#
# wl_rust is built only when rustc is found (PATH or ~/.cargo/bin), wl_chain_lld only when
# ld.lld is; test_lang.sh prints SKIP when one is missing (for lld, which scripts/setup.sh
# installs, a failure under CI). wl_chain_lld is the C chain linked by lld, whose text segment
# has p_vaddr != p_offset (as in rustc's default output).

WL_CC       ?= gcc
WL_CXX      ?= g++
WL_CFLAGS   := -O2 -g -Wall
WL_NOFP     := -fomit-frame-pointer
WL_FP       := -fno-omit-frame-pointer
RUSTC       ?= $(firstword $(shell command -v rustc 2>/dev/null) \
			$(wildcard $(HOME)/.cargo/bin/rustc /root/.cargo/bin/rustc))

WL_FIXTURES := wl_chain_fp wl_chain_nofp wl_qsort wl_recurse wl_signal wl_kernel \
	       wl_dlopen wl_plugin.so wl_cxx wl_short wl_truncate wl_prefork \
	       wl_reload wl_reload_a.so wl_reload_b.so wl_leader_exit wl_spawn_late \
	       wl_many_threads

FIXTURES += $(addprefix $(BUILD)/,$(WL_FIXTURES))
WL_LLD      ?= $(shell command -v ld.lld 2>/dev/null)
ifneq ($(RUSTC),)
FIXTURES += $(BUILD)/wl_rust
endif
ifneq ($(WL_LLD),)
FIXTURES += $(BUILD)/wl_chain_lld
endif

$(BUILD)/wl_chain_fp: wl_chain.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_FP) $< -o $@

$(BUILD)/wl_chain_nofp: wl_chain.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

$(BUILD)/wl_chain_lld: wl_chain.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) -fuse-ld=lld $< -o $@

$(BUILD)/wl_qsort $(BUILD)/wl_recurse $(BUILD)/wl_signal $(BUILD)/wl_kernel \
$(BUILD)/wl_short $(BUILD)/wl_prefork: $(BUILD)/%: %.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

$(BUILD)/wl_leader_exit $(BUILD)/wl_spawn_late $(BUILD)/wl_many_threads: $(BUILD)/%: %.c wl_common.h \
		| $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@ -lpthread

$(BUILD)/wl_dlopen: wl_dlopen.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@ -ldl

$(BUILD)/wl_truncate: wl_truncate.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@ -ldl

$(BUILD)/wl_reload: wl_reload.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) $< -o $@ -ldl

$(BUILD)/wl_reload_%.so: wl_reload_lib.c wl_common.h | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) -DSIDE=$* -fPIC -shared $< -o $@

$(BUILD)/wl_plugin.so: wl_plugin.c | $(BUILD)
	$(WL_CC) $(WL_CFLAGS) $(WL_NOFP) -fPIC -shared $< -o $@

$(BUILD)/wl_cxx: wl_cxx.cc | $(BUILD)
	$(WL_CXX) $(WL_CFLAGS) $(WL_NOFP) $< -o $@

$(BUILD)/wl_rust: wl_rust.rs | $(BUILD)
	$(RUSTC) -O -g -o $@ $<

# The chain without unwind tables: only .debug_frame (-g), moved into a separate debug file
# found through .gnu_debuglink next to the binary; the binary keeps only the C runtime's FDEs.
$(BUILD)/wl_debugframe: wl_chain.c wl_common.h | $(BUILD)
	$(WL_CC) -O2 -g -Wall $(WL_NOFP) -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@.full
	objcopy --only-keep-debug $@.full $@.debug
	objcopy --strip-debug --add-gnu-debuglink=$@.debug $@.full $@
	rm -f $@.full

FIXTURES += $(BUILD)/wl_debugframe
