#!/bin/bash
# Builds tests/fuzz/fuzz_pprof_read.c with clang's libFuzzer + ASan/UBSan and runs it for a
# fixed number of inputs from a fixed seed, starting from profiles written by our own
# pprof writer (raw and gzipped). Usage: BUILD=build tests/fuzz/run_fuzz_pprof_read.sh [runs]
set -euo pipefail

BUILD=${BUILD:-build}
runs=${1:-200000}
out=$BUILD/fuzz
srcs="src/export/pprof_read.c src/export/protobuf.c src/export/protobuf_read.c src/export/pprof.c
      src/profile/profile.c src/base/*.c"
mkdir -p "$out/corpus_pprof"
# shellcheck disable=SC2086
clang -std=gnu17 -O1 -g -D_GNU_SOURCE -Isrc -DFUZZ_PPROF_SEEDS tests/fuzz/fuzz_pprof_read.c \
	$srcs -lz -o "$out/fuzz_pprof_read_seeds"
"$out/fuzz_pprof_read_seeds" "$out/corpus_pprof"
# shellcheck disable=SC2086
clang -std=gnu17 -O1 -g -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all tests/fuzz/fuzz_pprof_read.c $srcs -lz \
	-o "$out/fuzz_pprof_read"
"$out/fuzz_pprof_read" -runs="$runs" -seed=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
	"$out/corpus_pprof"
