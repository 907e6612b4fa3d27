#!/bin/bash
# Builds tests/fuzz/fuzz_gopclntab.c (Go pclntab reader) with clang's libFuzzer + ASan/UBSan
# and runs it for a fixed number of inputs from a fixed seed, starting from the .gopclntab
# sections of the Go fixtures (tests/data/go.mk), after the committed regression inputs.
# Usage: BUILD=build tests/fuzz/run_fuzz_gopclntab.sh [runs]; FUZZ_TIME=3600 for a campaign
# (see tests/fuzz/fuzz_lib.sh).
set -euo pipefail

FUZZ_NAME=gopclntab
# shellcheck source=tests/fuzz/fuzz_lib.sh
source "$(dirname "$0")/fuzz_lib.sh"
fuzz_build src/formats/gopclntab.c src/formats/go_build_id.c src/formats/elf_file.c \
	src/base/*.c -lz
fuzz_seed_sections gopclntab wl_go esbuild esbuild-go116
# The smallest real table is ~360 KB (the Go runtime's functions).
fuzz_run "${1:-20000}" -max_len=4000000
