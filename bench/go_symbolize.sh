#!/bin/bash
# Addresses symbolized per second from a Go executable's .gopclntab (function, file, line,
# inlined calls: src/formats/gopclntab.c) against `go tool addr2line` (function, file, line of the
# innermost position; no inline chain) on the same address list, in the same run.
# Targets: the stripped wl_go fixture (Go 1.19, every instruction `go tool objdump` lists)
# and esbuild from npm (Go 1.26: stackscope only; Debian's go tool cannot read its table).
# Usage: BUILD=build bench/go_symbolize.sh
set -euo pipefail

BUILD=${BUILD:-build}
out=$BUILD/bench
mkdir -p "$out"
gcc -std=gnu17 -O2 -g -D_GNU_SOURCE -Isrc bench/go_symbolize_bench.c src/formats/gopclntab.c \
	src/formats/elf_file.c src/base/*.c -lz -o "$out/go_symbolize_bench"
fix=$BUILD/fixtures
[[ -f $fix/wl_go.objdump ]] || { echo "go_symbolize: no Go fixtures (make fixtures)" >&2; exit 0; }
awk 'NF >= 3 && $2 ~ /^0x/ { print $2 }' "$fix/wl_go.objdump" | sort -u >"$out/go_addrs"
n=$(wc -l <"$out/go_addrs")
echo "wl_go (stripped, Go 1.19), $n addresses (every instruction):"
for r in 1 2 3; do "$out/go_symbolize_bench" "$fix/wl_go" <"$out/go_addrs"; done | sed 's/^/  stackscope: /'
for r in 1 2 3; do
	s=$(date +%s.%N)
	GOCACHE=$BUILD/fixtures/go/cache go tool addr2line "$fix/wl_go" <"$out/go_addrs" >/dev/null
	e=$(date +%s.%N)
	echo "  go tool addr2line: secs=$(echo "$e - $s" | bc) rate=$(echo "$n / ($e - $s)" | bc)/s"
done
if [[ -x $fix/esbuild ]]; then
	"$out/go_symbolize_bench" "$fix/esbuild" </dev/null >/dev/null
	python3 -c '
import random
random.seed(1)
for _ in range(200000):
    print(hex(random.randrange(0x401000, 0x9a61a0)))' >"$out/go_addrs_esbuild"
	echo "esbuild (Go 1.26), 200000 random text addresses:"
	for r in 1 2 3; do "$out/go_symbolize_bench" "$fix/esbuild" <"$out/go_addrs_esbuild"; done |
		sed 's/^/  stackscope: /'
fi
