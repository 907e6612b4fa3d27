#!/bin/bash
# CFI extraction benchmark: for the largest binaries on this machine, time our unwind-table
# build (open + parse + interpret + merge, bench/cfi_extract.c) against
# `readelf --debug-dump=frames-interp` on the same file, median of 3 runs each, and print
# file, readelf s, ours s, ratio, rows, unique rules, FDEs. Target: ratio <= 0.25.
# Usage: bench/cfi_extract.sh [files...]   (default: libLLVM, libjvm, node, libc)
source "$(dirname "$0")/lib.sh"
set -e
mkdir -p "$BUILD/bench"
DRIVER=$BUILD/bench/cfi_extract
gcc -std=gnu17 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Isrc -Ibpf bench/cfi_extract.c \
	src/formats/eh_frame.c src/unwind/cfi.c src/unwind/cfi_arm64.c src/unwind/unwind_table.c src/formats/elf_file.c \
	src/formats/gopclntab.c src/base/file_map.c src/base/safe_open.c \
	src/base/log.c -lelf -lz -lpthread -o "$DRIVER"

if [[ $# -gt 0 ]]; then
	files=("$@")
else
	files=()
	for f in /usr/lib/*/libLLVM-*.so* /usr/lib/libLLVM-*.so* \
		 $(find /usr/lib/jvm -name libjvm.so 2>/dev/null) "$(command -v node || true)" \
		 /lib/x86_64-linux-gnu/libc.so.6; do
		[[ -f $f ]] && files+=("$(readlink -f "$f")")
	done
	mapfile -t files < <(printf '%s\n' "${files[@]}" | awk '!seen[$0]++')
fi

now() { date +%s.%N; }

printf '%-58s %9s %8s %6s %9s %7s %7s\n' file readelf_s ours_s ratio rows uniq fdes
for f in "${files[@]}"; do
	re=() us=() line=
	for _ in 1 2 3; do
		t0=$(now); readelf --debug-dump=frames-interp "$f" >/dev/null 2>&1 || true; t1=$(now)
		re+=("$(echo "$t1 - $t0" | bc -l)")
		line=$("$DRIVER" "$f")
		us+=("$(echo "$line" | awk '{print $2}')")
	done
	r=$(median <<<"${re[*]}"); o=$(median <<<"${us[*]}")
	read -r _ _ rows uniq fdes _ _ <<<"$line"
	printf '%-58s %9.3f %8.3f %6.3f %9d %7d %7d\n' "$f" "$r" "$o" \
		"$(echo "$o / $r" | bc -l)" "$rows" "$uniq" "$fdes"
done
