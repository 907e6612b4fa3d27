#!/bin/bash
# Builds tests/fuzz/fuzz_pprof_read.c with clang's libFuzzer + ASan/UBSan and runs it for a
# fixed number of inputs from a fixed seed, starting from profiles written by our own
# pprof writer (raw and gzipped), after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_pprof_read.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=pprof_read
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
srcs=(src/export/pprof_read.c src/export/protobuf.c src/export/protobuf_read.c src/export/pprof.c src/profile/profile.c
      src/base/*.c)
clang "${FUZZ_CFLAGS[@]}" -DFUZZ_PPROF_SEEDS tests/fuzz/fuzz_pprof_read.c "${srcs[@]}" -lz \
	-o "$FUZZ_DIR/fuzz_pprof_read_seeds"
"$FUZZ_DIR/fuzz_pprof_read_seeds" "$FUZZ_SEEDS"
fuzz_build "${srcs[@]}" -lz
fuzz_run "${1:-200000}" -max_len=65536
