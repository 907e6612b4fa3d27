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
runs=${1:-20000}
out=$BUILD/fuzz
seeds=$out/corpus_cfi
mkdir -p "$seeds"
FUZZ_CFLAGS+=(-Ibpf)
fuzz_build "$out/fuzz_cfi" src/formats/eh_frame.c src/unwind/cfi.c src/unwind/cfi_arm64.c src/unwind/unwind_table.c src/formats/gopclntab.c \
	src/formats/elf_file.c src/base/*.c -lz
for f in cfi_gcc_O2 cfi_clang_O2_nofp cfi_gxx_O2 cfi_sigtramp cfi_gcc_debug_frame \
	 cfi_gcc_debug_frame_stripped replay_signal; do
	[[ -f $BUILD/fixtures/$f ]] || continue
	cp "$BUILD/fixtures/$f" "$seeds/"
	for s in eh_frame eh_frame_hdr debug_frame; do
		objcopy --dump-section ".$s=$seeds/$f.$s" "$BUILD/fixtures/$f" "$seeds/.tmp" \
			2>/dev/null || true
	done
done
rm -f "$seeds/.tmp"
fuzz_run "$out/fuzz_cfi" "$seeds" "$runs" -max_len=65536 -dict=tests/fuzz/cfi.dict
