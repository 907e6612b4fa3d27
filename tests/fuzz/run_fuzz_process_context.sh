#!/bin/bash
# Builds tests/fuzz/fuzz_process_context.c with clang's libFuzzer + ASan/UBSan and runs it for
# a fixed number of inputs from a fixed seed, starting from ProcessContext payloads written by
# our own protobuf encoder, after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_process_context.sh [runs]; FUZZ_TIME=3600 for a
# campaign (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=process_context
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
srcs=(src/export/process_context_pb.c src/export/protobuf.c src/export/protobuf_read.c
      src/base/utf8.c)
clang "${FUZZ_CFLAGS[@]}" -DFUZZ_PCTX_SEEDS tests/fuzz/fuzz_process_context.c "${srcs[@]}" \
	-o "$FUZZ_DIR/fuzz_process_context_seeds"
"$FUZZ_DIR/fuzz_process_context_seeds" "$FUZZ_SEEDS"
fuzz_build "${srcs[@]}"
fuzz_run "${1:-200000}" -max_len=70000
