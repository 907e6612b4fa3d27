#!/bin/bash
# Builds tests/fuzz/fuzz_dwarf.c with clang's libFuzzer + ASan/UBSan and runs it for a fixed
# number of inputs from a fixed seed, starting from the dwarf_* fixtures (deterministic, about
# a minute at the default). Usage: BUILD=build tests/fuzz/run_fuzz_dwarf.sh [runs]
set -euo pipefail

BUILD=${BUILD:-build}
runs=${1:-20000}
out=$BUILD/fuzz
mkdir -p "$out/corpus"
clang -std=gnu17 -O1 -g -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all tests/fuzz/fuzz_dwarf.c src/symbolize/dwarf.c \
	src/symbolize/demangle.c src/symbolize/elf_symbols.c src/elf/elf_file.c src/base/*.c \
	-ldw -lelf -lz -liberty -lstdc++ -o "$out/fuzz_dwarf"
for f in dwarf_inline dwarf_inline_clang dwarf_inline_dwarf4 dwarf_inline_trunc dwarf_cxx \
	 dwarf_mini; do
	[[ -f $BUILD/fixtures/$f ]] && cp "$BUILD/fixtures/$f" "$out/corpus/"
done
# libdw's own leaks on corrupt input are not ours (see tests/unit/test_dwarf.c).
printf 'leak:libdw.so\n' > "$out/lsan.supp"
LSAN_OPTIONS=suppressions=$out/lsan.supp "$out/fuzz_dwarf" -runs="$runs" -seed=1 \
	-max_len=65536 -timeout=10 -rss_limit_mb=2048 "$out/corpus"
