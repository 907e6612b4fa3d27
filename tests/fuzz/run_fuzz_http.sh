#!/bin/bash
# Builds tests/fuzz/fuzz_http.c (the HTTP server's request parser, its Host and Origin checks,
# and the web UI's API handler: query parameters, POST /api/diff uploads) with clang's
# libFuzzer + ASan/UBSan and runs it for a fixed number of inputs from a fixed seed, starting
# from requests of every route and a two-file upload, after the committed regression inputs.
# Needs the generated UI files ($BUILD/gen/serve_ui.c: `make` first).
# Usage: BUILD=build tests/fuzz/run_fuzz_http.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=http
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
[[ -f $BUILD/gen/serve_ui.c ]] || { echo "$BUILD/gen/serve_ui.c missing: run make first" >&2; exit 1; }
# serve/ and what it stands on (store/, whole: a file added there is linked, not forgotten)
srcs=(src/base/*.c src/serve/*.c src/store/*.c src/export/pprof.c src/export/pprof_read.c
      src/export/pprof_dir.c src/export/otlp_read.c
      src/export/protobuf.c src/export/protobuf_read.c src/profile/profile.c
      src/profile/runtime_fold.c src/profile/mem_types.c src/profile/trace_label.c
      "$BUILD/gen/serve_ui.c")
# the seed writer and the fuzzer are two builds of the same sources: built side by side (the
# second core; test_serve.sh's run took 37 s at load 5.6 with them one after the other)
clang "${FUZZ_CFLAGS[@]}" -DFUZZ_HTTP_SEEDS tests/fuzz/fuzz_http.c "${srcs[@]}" -lz -lsqlite3 -lnghttp2 \
	-lpthread -o "$FUZZ_DIR/fuzz_http_seeds" &
seeds_build=$!
fuzz_build "${srcs[@]}" -lz -lsqlite3 -lnghttp2 -lpthread
wait "$seeds_build"
"$FUZZ_DIR/fuzz_http_seeds" "$FUZZ_SEEDS"
fuzz_run "${1:-20000}" -max_len=65536 -dict=tests/fuzz/http.dict
