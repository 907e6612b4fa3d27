#!/bin/bash
# Builds tests/fuzz/fuzz_dwarf.c with clang's libFuzzer + ASan/UBSan and runs it for a fixed
# number of inputs from a fixed seed, starting from the dwarf_* fixtures (deterministic, about
# a minute at the default), after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_dwarf.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=dwarf
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_build src/formats/dwarf.c src/formats/demangle.c \
	src/formats/elf_symbols.c src/formats/elf_file.c src/formats/symtab_pages.c src/base/*.c -ldw -lelf -lz -liberty -lstdc++
fuzz_seed_fixtures dwarf_inline dwarf_inline_clang dwarf_inline_dwarf4 \
	dwarf_inline_trunc dwarf_cxx dwarf_mini
# libdw's own leaks on corrupt input are not ours (see tests/unit/test_dwarf.c).
printf 'leak:libdw.so\n' > "$FUZZ_DIR/lsan.supp"
supp=$(realpath "$FUZZ_DIR/lsan.supp")
export LSAN_OPTIONS=suppressions=$supp:print_suppressions=0
fuzz_run "${1:-20000}" -max_len=65536
