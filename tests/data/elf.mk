# Fixtures for tests/unit/test_elf_file.c and test_elf_symbols.c, all built from symbols.c.
# Corrupt variants are made from the good ones with head/dd so they stay reproducible.

ELF_FIX_CFLAGS := -O1 -g -Wl,--build-id=sha1

ELF_FIXTURES := elf_pie elf_nopie libelf_fixture.so libelf_fixture_stripped.so \
		elf_debuglink elf_debuglink.debug elf_gz elf_gz_plain elf_gz.debug_info \
		elf_zdebug elf_pie.debug_info elf_trunc_hdr elf_trunc_half elf_bad_magic elf_bad_phoff elf_bad_shoff

FIXTURES += $(addprefix $(BUILD)/,$(ELF_FIXTURES))

$(BUILD)/elf_pie: symbols.c | $(BUILD)
	$(CC) $(ELF_FIX_CFLAGS) -fPIE -pie $< -o $@

$(BUILD)/elf_nopie: symbols.c | $(BUILD)
	$(CC) $(ELF_FIX_CFLAGS) -fno-pie -no-pie $< -o $@

$(BUILD)/libelf_fixture.so: symbols.c | $(BUILD)
	$(CC) $(ELF_FIX_CFLAGS) -DSS_LIB -fPIC -shared $< -o $@

# Only .dynsym is left.
$(BUILD)/libelf_fixture_stripped.so: $(BUILD)/libelf_fixture.so
	strip --strip-all $< -o $@

# Split debug info: the stripped binary carries a .gnu_debuglink to the .debug file.
$(BUILD)/elf_debuglink.debug: $(BUILD)/elf_pie
	objcopy --only-keep-debug $< $@

$(BUILD)/elf_debuglink: $(BUILD)/elf_pie $(BUILD)/elf_debuglink.debug
	cd $(BUILD) && objcopy --strip-all --add-gnu-debuglink=elf_debuglink.debug elf_pie elf_debuglink

# SHF_COMPRESSED debug sections, their decompression by binutils, and the raw .debug_info.
$(BUILD)/elf_gz: symbols.c | $(BUILD)
	$(CC) $(ELF_FIX_CFLAGS) -gz=zlib -fPIE -pie $< -o $@

$(BUILD)/elf_gz_plain: $(BUILD)/elf_gz
	objcopy --decompress-debug-sections $< $@

$(BUILD)/elf_gz.debug_info: $(BUILD)/elf_gz_plain
	objcopy --dump-section .debug_info=$@ $< $@.tmp && rm -f $@.tmp

# Legacy GNU compression: .zdebug_* sections, and the uncompressed original to compare with.
$(BUILD)/elf_zdebug: $(BUILD)/elf_pie
	objcopy --compress-debug-sections=zlib-gnu $< $@

$(BUILD)/elf_pie.debug_info: $(BUILD)/elf_pie
	objcopy --dump-section .debug_info=$@ $< $@.tmp && rm -f $@.tmp

# Corrupt copies of elf_pie.
$(BUILD)/elf_trunc_hdr: $(BUILD)/elf_pie
	head -c 40 $< > $@

$(BUILD)/elf_trunc_half: $(BUILD)/elf_pie
	head -c $$(( $$(stat -c %s $<) / 2 )) $< > $@

$(BUILD)/elf_bad_magic: $(BUILD)/elf_pie
	cp $< $@ && printf 'X' | dd of=$@ bs=1 seek=1 conv=notrunc status=none

# e_phoff (offset 32) and e_shoff (offset 40) pointed far outside the file.
$(BUILD)/elf_bad_phoff: $(BUILD)/elf_pie
	cp $< $@ && printf '\377\377\377\377\377\377\377\177' | \
		dd of=$@ bs=1 seek=32 conv=notrunc status=none

$(BUILD)/elf_bad_shoff: $(BUILD)/elf_pie
	cp $< $@ && printf '\377\377\377\377\377\377\377\177' | \
		dd of=$@ bs=1 seek=40 conv=notrunc status=none
