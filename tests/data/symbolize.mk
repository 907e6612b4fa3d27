# Fixtures for tests/system/test_symbolize.sh (`stackscope symbolize`): a CPU-burning -O2 -g
# workload whose hot loop sits in a forced inline chain, and its stripped copy whose debug
# file is only in a .build-id tree:
#  sym_inline             -O2 -g, PIE, build id
#  sym_inline_stripped    strip --strip-all of it; its debug file is
#                         sym_debugroot/.build-id/xx/yyyy.debug

SYM_CC     ?= gcc
SYM_CFLAGS := -O2 -g -Wall -fomit-frame-pointer -Wl,--build-id=sha1

FIXTURES += $(BUILD)/sym_inline $(BUILD)/sym_inline_stripped

$(BUILD)/sym_inline: sym_inline.c sym_inline.h wl_common.h | $(BUILD)
	$(SYM_CC) $(SYM_CFLAGS) $< -o $@

$(BUILD)/sym_inline_stripped: $(BUILD)/sym_inline
	id=$$(readelf -n $< | sed -n 's/.*Build ID: //p') && \
		d=$(BUILD)/sym_debugroot/.build-id/$$(echo $$id | cut -c1-2) && mkdir -p $$d && \
		objcopy --only-keep-debug $< $$d/$$(echo $$id | cut -c3-).debug
	strip --strip-all $< -o $@
