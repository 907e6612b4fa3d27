#!/bin/bash
# Unique addresses symbolized per second (function + file:line + inline chain) by stackscope's
# DWARF reader, against eu-addr2line -i -f and addr2line -i -f on the same address lists, in
# the same run; plus the memory of our DWARF indexes. Targets: libc with Debian's libc6-dbg
# debug file, libstdc++ (its debug file if installed, else symbols only), and dwarf_big (a
# large -g program built by the tests). Addresses: N random ones inside function symbols
# (fixed seed). Usage: BUILD=build bench/symbolize.sh [N]
set -euo pipefail

BUILD=${BUILD:-build}
N=${1:-5000}
out=$BUILD/bench
mkdir -p "$out"
gcc -std=gnu17 -O2 -g -D_GNU_SOURCE -Isrc bench/symbolize_bench.c src/formats/dwarf.c \
	src/formats/demangle.c src/formats/elf_symbols.c src/formats/elf_file.c src/formats/symtab_pages.c src/base/*.c \
	-ldw -lelf -lz -lstdc++ -o "$out/symbolize_bench"

# The debug file of a library through its build id (or the library itself).
debug_file() {
	local id
	id=$(readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: //p')
	local f=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	if [[ -n $id && -f $f ]]; then echo "$f"; else echo "$1"; fi
}

# N random addresses inside the function symbols of $1 (fixed seed).
addresses() {
	{ nm -S --defined-only "$1" 2>/dev/null || true; nm -D -S --defined-only "$1" 2>/dev/null || true; } |
		python3 -c '
import random, sys
random.seed(1)
funcs = [(int(f[0], 16), int(f[1], 16)) for f in (l.split() for l in sys.stdin)
	 if len(f) == 4 and f[2] in "tTW" and int(f[1], 16) > 0]
out = set(s + random.randrange(z) for s, z in (random.choice(funcs) for _ in range(int(sys.argv[1])))) if funcs else set()
print("".join("0x%x\n" % a for a in sorted(out)), end="")' "$N"
}

run() {
	local name=$1 file=$2 list=$out/$1.addrs t0 t1
	addresses "$file" > "$list"
	[[ -s $list ]] || { echo "$name: no function symbols in $file, skipped"; return; }
	echo "== $name: $file ($(wc -l < "$list") unique addresses)"
	echo "stackscope:   $("$out/symbolize_bench" "$file" < "$list")"
	for tool in eu-addr2line addr2line; do
		t0=$(date +%s.%N)
		$tool -i -f -a -e "$file" < "$list" > /dev/null 2>&1 || true
		t1=$(date +%s.%N)
		awk -v n="$(wc -l < "$list")" -v a="$t0" -v b="$t1" -v t="$tool" \
			'BEGIN {printf "%-13s secs=%.3f rate=%.0f/s\n", t ":", b - a, n / (b - a)}'
	done
}

run libc "$(debug_file /lib/x86_64-linux-gnu/libc.so.6)"
run libstdc++ "$(debug_file "$(readlink -f /usr/lib/x86_64-linux-gnu/libstdc++.so.6)")"
run dwarf_big "$BUILD/fixtures/dwarf_big"
