#!/bin/bash
# Builds tests/fuzz/fuzz_cfi.c (.eh_frame/.debug_frame/.eh_frame_hdr reader, CFA interpreter,
# unwind table builder) with clang's libFuzzer + ASan/UBSan and runs it for a fixed number of
# inputs from a fixed seed, starting from cfi_* fixtures (whole ELF files) and the raw CFI
# sections cut out of them, after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_cfi.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=cfi
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
FUZZ_CFLAGS+=(-Ibpf)
fuzz_build src/formats/eh_frame.c src/unwind/cfi.c src/unwind/cfi_arm64.c src/unwind/unwind_table.c src/formats/gopclntab.c \
	src/formats/elf_file.c src/base/*.c -lz
fixtures=(cfi_gcc_O2 cfi_clang_O2_nofp cfi_gxx_O2 cfi_sigtramp cfi_gcc_debug_frame
	  cfi_gcc_debug_frame_stripped replay_signal)
fuzz_seed_fixtures "${fixtures[@]}"
for s in eh_frame eh_frame_hdr debug_frame; do
	fuzz_seed_sections "$s" "${fixtures[@]}"
done
fuzz_run "${1:-20000}" -max_len=65536 -dict=tests/fuzz/cfi.dict
