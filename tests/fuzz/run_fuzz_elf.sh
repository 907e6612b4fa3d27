#!/bin/bash
# Builds tests/fuzz/fuzz_elf.c (the ELF reader and ELF function symbols) with clang's libFuzzer
# + ASan/UBSan and runs it for a fixed number of inputs from a fixed seed, starting from small
# elf_* and cfi_* fixtures (plain, stripped, split debug, compressed sections, corrupt headers),
# after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_elf.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=elf
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_build src/formats/elf_file.c src/formats/symtab_pages.c src/formats/elf_symbols.c src/base/*.c -lz
fuzz_seed_fixtures elf_pie elf_nopie libelf_fixture_stripped.so elf_debuglink \
	elf_debuglink.debug elf_gz elf_zdebug elf_bad_phoff elf_bad_shoff elf_trunc_half \
	elf_trunc_hdr cfi_gcc_debug_frame_gz
fuzz_run "${1:-20000}" -max_len=65536 \
	-dict=tests/fuzz/elf.dict
