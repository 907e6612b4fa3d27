#!/bin/bash
# Builds tests/fuzz/fuzz_otlp_read.c with clang's libFuzzer + ASan/UBSan and runs it for a
# fixed number of inputs from a fixed seed, starting from a request written by our own OTLP
# encoder, after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_otlp_read.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=otlp_read
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
srcs=(src/export/otlp_read.c src/export/otlp.c src/export/otlp_link.c src/export/protobuf.c
      src/export/protobuf_read.c src/profile/*.c src/base/*.c)
clang "${FUZZ_CFLAGS[@]}" -DFUZZ_OTLP_SEEDS tests/fuzz/fuzz_otlp_read.c "${srcs[@]}" \
	-lcrypto -lpthread -o "$FUZZ_DIR/fuzz_otlp_read_seeds"
"$FUZZ_DIR/fuzz_otlp_read_seeds" "$FUZZ_SEEDS"
fuzz_build "${srcs[@]}" -lcrypto -lpthread
fuzz_run "${1:-200000}" -max_len=65536
