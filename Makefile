# stackscope build. `make` builds ./stackscope; `make test` runs the root-free unit tests;
# `make check` runs everything CI runs (unit + sanitizer build + system tests as root).
# All outputs go to build/ (ignored). V=1 shows full commands.

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
BUILD    := build
ARCH     := x86
# the kernel BTF vmlinux.h is generated from, and what is appended to it (arm64: below)
VMLINUX_BTF   ?= /sys/kernel/btf/vmlinux
VMLINUX_EXTRA :=

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WERROR   ?= $(if $(CI),-Werror,)
CFLAGS   ?= -O2 -g
ALL_CFLAGS := $(CFLAGS) -std=gnu17 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
            $(WERROR) -D_GNU_SOURCE -Isrc -I$(BUILD) -Ibpf -MMD -MP
LDLIBS   := -lbpf -ldw -ldebuginfod -lelf -lcurl -lcrypto -llzma -lz -liberty -lm -lpthread -lstdc++
LDLIBS   += -lsqlite3 -lnghttp2
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Ibpf -Wall -Wno-unused-function \
	      -Wimplicit-fallthrough -Werror=implicit-fallthrough

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

SRCS      := $(sort $(wildcard src/*/*.c src/*/*/*.c))
MAIN_SRC  := src/cli/main.c
LIB_SRCS  := $(filter-out $(MAIN_SRC),$(SRCS))
LIB_OBJS  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
# the web UI's files (src/serve/ui/), compiled in by xxd -i (src/serve/ui_assets.h)
SERVE_UI  := src/serve/ui/index.html src/serve/ui/app.js src/serve/ui/app.css
SERVE_UI  += src/serve/ui/source_view.js src/serve/ui/source_view.css
LIB_OBJS  += $(BUILD)/obj/gen/serve_ui.o
MAIN_OBJ  := $(BUILD)/obj/cli/main.o
LIB       := $(BUILD)/libstackscope.a

TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_DATA_SRCS := $(wildcard tests/data/*.c tests/data/*.cc)

.PHONY: all arm64 test check bench format format-check clean system-test asan-test asan-stackscope fixtures \
	kernel-matrix runtime-matrix layers

all: stackscope

$(BUILD)/vmlinux.h: $(VMLINUX_EXTRA)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && \
		cat $(VMLINUX_EXTRA) /dev/null >> $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(wildcard bpf/*.h bpf/*/*.h bpf/*/*/*.h)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: src/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/gen/serve_ui.c: $(SERVE_UI)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)cd src/serve/ui && for f in $(notdir $(SERVE_UI)); do xxd -i $$f; done > $(abspath $@).tmp
	$(Q)mv $@.tmp $@

$(BUILD)/obj/gen/serve_ui.o: $(BUILD)/gen/serve_ui.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

stackscope $(BUILD)/stackscope: $(MAIN_OBJ) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB) tests/unit/test.h $(wildcard tests/lib/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -Itests/lib $< $(LIB) -o $@ $(LDFLAGS) $(LDLIBS)

# arm64 (issue 19): build/arm64/stackscope, cross-built with Debian's cross toolchain and
# :arm64 libraries (scripts/setup.sh); the BPF object for the arm64 target, its vmlinux.h from
# the BTF inside Debian's arm64 kernel image (scripts/arm64_files.sh) plus the newer types of
# bpf/arch/arm64_vmlinux_extra.h.
ARM64_FILES := build/arm64-debs
arm64:
	$(Q)scripts/arm64_files.sh $(ARM64_FILES) kernel
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/arm64 ARCH=arm64 CC=aarch64-linux-gnu-gcc \
		VMLINUX_BTF=$(ARM64_FILES)/vmlinux.btf VMLINUX_EXTRA=bpf/arch/arm64_vmlinux_extra.h \
		$(BUILD)/arm64/stackscope

# Fixtures: small programs built from sources in tests/data/ with several compilers and flags.
fixtures:
	$(Q)$(MAKE) -s -C tests/data all BUILD=$(abspath $(BUILD))/fixtures

# Each eBPF runtime header (bpf/interp/, bpf/interp/<runtime>/) compiles on its own, as the BPF
# object is built: none may depend on what its includer included before it.
BPF_INTERP_HDRS := $(sort $(wildcard bpf/interp/*.h bpf/interp/*/*.h))

$(BUILD)/bpf_headers.ok: $(BPF_INTERP_HDRS) $(wildcard bpf/*.h bpf/arch/*.h) $(BUILD)/vmlinux.h
	$(call msg,CHECK,bpf/interp headers alone)
	$(Q)for h in $(BPF_INTERP_HDRS); do \
		printf '#include "vmlinux.h"\n#include <bpf/bpf_helpers.h>\n#include "%s"\n' \
			$${h#bpf/} | \
		$(CLANG) $(BPF_CFLAGS) -Werror -Wno-undefined-internal -fsyntax-only -x c - || \
		{ echo "FAIL $$h does not compile on its own"; exit 1; }; \
	done
	$(Q)touch $@

# The folders' layers (scripts/layers.sh, docs/ARCHITECTURE.md "Layers"): every #include of
# src/ and bpf/ against which folder may include which.
layers:
	$(Q)scripts/layers.sh

# script tests run beside the binaries (test_layers.sh: `make layers` itself, on broken copies)
TEST_SCRIPTS := tests/unit/test_layers.sh

test: $(TEST_BINS) fixtures $(BUILD)/bpf_headers.ok
	$(Q)BUILD=$(BUILD) tests/run_unit.sh $(TEST_BINS) $(TEST_SCRIPTS)

# The system tests also run stackscope itself under ASan+UBSan against hostile input
# ($(BUILD)/asan/stackscope, tests/system/test_hostile_*.sh), and the arm64 build in the
# kernel matrix's arm64 row (tests/system/test_kernel_matrix_arm64.sh).
system-test: all fixtures asan-stackscope arm64
	$(Q)BUILD=$(BUILD) tests/run_system.sh

ASAN_MAKE := $(MAKE) --no-print-directory BUILD=$(BUILD)/asan \
	CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	LDFLAGS="-fsanitize=address,undefined"

# Unit tests again under ASan+UBSan, in their own build folder.
asan-test:
	+$(Q)$(ASAN_MAKE) test

asan-stackscope:
	+$(Q)$(ASAN_MAKE) $(BUILD)/asan/stackscope

check: format-check layers test asan-test system-test

# Debian's 5.10 and 6.1 kernels in QEMU (scripts/kernel_matrix.sh; system-test runs it too),
# and Debian 12's arm64 kernel under qemu-system-aarch64 with the arm64 build
kernel-matrix: all fixtures arm64
	$(Q)scripts/kernel_matrix.sh x86_64
	$(Q)KM_NODE_JIT=1 KM_JAVA_TINY=1 KM_STACKSCOPE=$(abspath $(BUILD))/arm64/stackscope scripts/kernel_matrix.sh aarch64

# each runtime's workloads in Debian's bullseye, bookworm, trixie and sid roots, as containers
# (scripts/runtime_matrix.sh; system-test runs it too)
runtime-matrix: all
	$(Q)scripts/runtime_matrix.sh

bench: all fixtures
	$(Q)BUILD=$(BUILD) bench/run.sh

FORMAT_SRCS := $(wildcard src/*/*.[ch] src/*/*/*.[ch] bpf/*.[ch] bpf/*/*.[ch] bpf/*/*/*.[ch] \
	       tests/unit/*.[ch] tests/lib/*.[ch])

format:
	$(Q)clang-format -i $(FORMAT_SRCS)

# Fails on any line .clang-format would change (part of `make check`).
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD) stackscope

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_BINS:=.d)
