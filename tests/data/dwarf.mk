# Fixtures for tests/unit/test_dwarf.c, test_debuginfo.c, test_demangle.c and
# bench/symbolize.sh: -O2 -g programs with forced inlining (gcc, clang, g++, rustc), and the
# ways their debug info gets separated from them:
#  dwarf_stripped        stripped; its debug file in dwarf_debugroot/.build-id/xx/yyyy.debug
#  dwarf_linked          stripped; .gnu_debuglink to dwarf_linked.debug in the same folder
#  dwarf_linked_sub      stripped; .gnu_debuglink to .debug/dwarf_linked_sub.debug
#  dwarf_badcrc          stripped; .gnu_debuglink whose file has the build id but another CRC
#  dwarf_wrongid         stripped; dwarf_wrongroot/.build-id/<its id>.debug is another build
#  dwarf_mini            stripped; only MiniDebugInfo (.gnu_debugdata: xz ELF with .symtab)
#  dwarf_debuginfod/     a folder for a local debuginfod server (test_debuginfod.sh)
#  dwarf_big             a large generated -g program for the benchmark

DW_CC      ?= gcc
DW_CLANG   ?= clang
DW_CXX     ?= g++
DW_CFLAGS  := -O2 -g -Wl,--build-id=sha1
DW_RUSTC   := $(firstword $(shell command -v rustc 2>/dev/null) \
		$(wildcard $(HOME)/.cargo/bin/rustc /root/.cargo/bin/rustc))
DW_BIG_FUNCS ?= 4000

# Build id of an ELF file as lowercase hex.
dw_build_id = $$(readelf -n $(1) | sed -n 's/.*Build ID: //p')

DW_FIXTURES := dwarf_inline dwarf_inline_nopie dwarf_inline_clang dwarf_inline_noaranges \
	       dwarf_inline_dwarf4 \
	       dwarf_inline_trunc dwarf_cxx dwarf_stripped dwarf_stripped.stamp dwarf_linked \
	       dwarf_linked_sub dwarf_badcrc dwarf_wrongid dwarf_mini dwarf_big
ifneq ($(DW_RUSTC),)
DW_FIXTURES += dwarf_rust_legacy dwarf_rust_v0
endif

FIXTURES += $(addprefix $(BUILD)/,$(DW_FIXTURES))

$(BUILD)/dwarf_inline: dwarf_inline.c dwarf_inline.h | $(BUILD)
	$(DW_CC) $(DW_CFLAGS) -fPIE -pie $< -o $@

$(BUILD)/dwarf_inline_nopie: dwarf_inline.c dwarf_inline.h | $(BUILD)
	$(DW_CC) $(DW_CFLAGS) -fno-pie -no-pie $< -o $@

# clang emits no .debug_aranges unless asked (eu-addr2line needs them); the copy without them
# checks that the unit index comes from the units' own ranges.
$(BUILD)/dwarf_inline_clang: dwarf_inline.c dwarf_inline.h | $(BUILD)
	$(DW_CLANG) $(DW_CFLAGS) -gdwarf-aranges -fPIE -pie $< -o $@

$(BUILD)/dwarf_inline_noaranges: $(BUILD)/dwarf_inline_clang
	objcopy --remove-section .debug_aranges $< $@

$(BUILD)/dwarf_inline_dwarf4: dwarf_inline.c dwarf_inline.h | $(BUILD)
	$(DW_CC) $(DW_CFLAGS) -gdwarf-4 -fPIE -pie $< -o $@

# .debug_info cut in half (bad input: lookups fail, nothing crashes).
$(BUILD)/dwarf_inline_trunc: $(BUILD)/dwarf_inline
	objcopy --dump-section .debug_info=$@.info $< $@.tmp && \
		head -c $$(( $$(stat -c %s $@.info) / 2 )) $@.info > $@.half && \
		objcopy --update-section .debug_info=$@.half $< $@ && rm -f $@.tmp $@.info $@.half

$(BUILD)/dwarf_cxx: dwarf_cxx.cc | $(BUILD)
	$(DW_CXX) $(DW_CFLAGS) $< -o $@

$(BUILD)/dwarf_rust_legacy: dwarf_rust.rs | $(BUILD)
	$(DW_RUSTC) -C opt-level=2 -g $< -o $@

$(BUILD)/dwarf_rust_v0: dwarf_rust.rs | $(BUILD)
	$(DW_RUSTC) -C opt-level=2 -g -C symbol-mangling-version=v0 $< -o $@

# Stripped binary + its debug file under a .build-id tree, as Debian's -dbg packages lay them.
$(BUILD)/dwarf_stripped: $(BUILD)/dwarf_inline
	strip --strip-all $< -o $@

$(BUILD)/dwarf_stripped.stamp: $(BUILD)/dwarf_inline $(BUILD)/dwarf_stripped
	id=$(call dw_build_id,$<) && d=$(BUILD)/dwarf_debugroot/.build-id/$$(echo $$id | cut -c1-2) && \
		mkdir -p $$d && objcopy --only-keep-debug $< $$d/$$(echo $$id | cut -c3-).debug && \
		mkdir -p $(BUILD)/dwarf_debuginfod && cp $< $(BUILD)/dwarf_debuginfod/dwarf_inline && \
		cp $$d/$$(echo $$id | cut -c3-).debug $(BUILD)/dwarf_debuginfod/dwarf_inline.debug && touch $@

$(BUILD)/dwarf_linked: $(BUILD)/dwarf_inline
	objcopy --only-keep-debug $< $@.debug
	cd $(BUILD) && objcopy --strip-all --add-gnu-debuglink=dwarf_linked.debug dwarf_inline $@

$(BUILD)/dwarf_linked_sub: $(BUILD)/dwarf_inline
	mkdir -p $(BUILD)/.debug && objcopy --only-keep-debug $< $(BUILD)/.debug/dwarf_linked_sub.debug
	cd $(BUILD)/.debug && objcopy --strip-all --add-gnu-debuglink=dwarf_linked_sub.debug \
		../dwarf_inline $@

# The link names dwarf_badcrc.debug, which then gets one more byte: same build id, other CRC.
$(BUILD)/dwarf_badcrc: $(BUILD)/dwarf_inline
	objcopy --only-keep-debug $< $@.debug
	cd $(BUILD) && objcopy --strip-all --add-gnu-debuglink=dwarf_badcrc.debug dwarf_inline $@
	printf 'x' >> $@.debug

# The .build-id path of dwarf_inline holds dwarf_inline_nopie's debug file (another build id).
$(BUILD)/dwarf_wrongid: $(BUILD)/dwarf_inline $(BUILD)/dwarf_inline_nopie
	id=$(call dw_build_id,$<) && d=$(BUILD)/dwarf_wrongroot/.build-id/$$(echo $$id | cut -c1-2) && \
		mkdir -p $$d && objcopy --only-keep-debug $(BUILD)/dwarf_inline_nopie $$d/$$(echo $$id | cut -c3-).debug
	strip --strip-all $< -o $@

# MiniDebugInfo as Fedora builds it: function symbols only, xz-compressed, in .gnu_debugdata.
$(BUILD)/dwarf_mini: $(BUILD)/dwarf_inline
	nm $< --format=posix --defined-only | awk '$$2 ~ /[Tt]/ {print $$1}' | sort > $@.funcs
	objcopy --only-keep-debug $< $@.dbg
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.funcs $@.dbg $@.mini
	xz --force --keep $@.mini
	strip --strip-all $< -o $@.tmp
	objcopy --add-section .gnu_debugdata=$@.mini.xz $@.tmp $@
	rm -f $@.funcs $@.dbg $@.mini $@.mini.xz $@.tmp

# A large program with full DWARF: DW_BIG_FUNCS functions, each inlining two helpers.
$(BUILD)/dwarf_big.c: dwarf.mk | $(BUILD)
	{ echo '#include <stdio.h>'; \
	  echo 'static inline __attribute__((always_inline)) unsigned f0(unsigned x) { return x * 2654435761u ^ (x >> 7); }'; \
	  echo 'static inline __attribute__((always_inline)) unsigned f1(unsigned x) { for (int i = 0; i < 3; i++) x = f0(x + i); return x; }'; \
	  for i in $$(seq 1 $(DW_BIG_FUNCS)); do \
		echo "__attribute__((noinline)) unsigned big_$$i(unsigned x) { if (x & $$i) x = f1(x); return f0(x + $$i); }"; \
	  done; \
	  echo 'unsigned (*const big_table[])(unsigned) = {'; \
	  for i in $$(seq 1 $(DW_BIG_FUNCS)); do echo "big_$$i,"; done; \
	  echo '};'; \
	  echo 'int main(void) { unsigned s = 1;'; \
	  echo 'for (unsigned i = 0; i < sizeof(big_table) / sizeof(big_table[0]); i++) s = big_table[i](s);'; \
	  printf '%s\n' 'printf("%u\n", s); return 0; }'; } > $@

$(BUILD)/dwarf_big: $(BUILD)/dwarf_big.c
	$(DW_CC) $(DW_CFLAGS) $< -o $@
