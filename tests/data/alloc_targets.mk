# tests/unit/test_alloc_targets.c: allocator symbols found, aliases and hidden ones
ALLOC_TARGETS_CFLAGS := -O1 -shared -fPIC -fno-builtin -Wall -Wno-builtin-declaration-mismatch

$(BUILD)/liballoc_own.so: alloc_targets.c | $(BUILD)
	$(CC) $(ALLOC_TARGETS_CFLAGS) -o $@ $<
$(BUILD)/liballoc_nomalloc.so: alloc_targets.c | $(BUILD)
	$(CC) $(ALLOC_TARGETS_CFLAGS) -DNO_MALLOC -o $@ $<
$(BUILD)/liballoc_hidden.so: alloc_targets.c | $(BUILD)
	$(CC) $(ALLOC_TARGETS_CFLAGS) -DHIDDEN -fvisibility=hidden -o $@ $< && strip $@

FIXTURES += $(BUILD)/liballoc_own.so $(BUILD)/liballoc_nomalloc.so $(BUILD)/liballoc_hidden.so
