#!/bin/bash
# The six-compile clang loop from a cold table cache (issue 13): `clang-14 -O2 -c` of a real C
# file (this repository's src/unwind/unwind_table.c), six compiles one after another under
# `record -F 199 -- bash -c 'loop'`, with an empty --cache-dir (cold: libLLVM, libclang-cpp and
# clang itself have no table when their first sample arrives), then again with the cache that
# run filled (warm), and `perf record -F 199 --call-graph dwarf` of the same loop as the
# reference, in alternation, ROUNDS rounds.
#
# Counted: the samples of the clang-14 processes; complete = the stack reaches a thread root
# (its outermost frame is `_start`, `start_thread` or `clone`/`clone3`: perf names them the
# same). The incomplete ones are listed by how they end (the `[unwind: ...]` marker or the
# outermost frame), with record's "deferred" line (stack copies sent, completed, over budget).
# Usage: sudo bench/clang_cold.sh [ROUNDS (3)]; SS=path/to/stackscope for another build.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROUNDS=${1:-3}
SS=${SS:-./stackscope}
SRC=src/unwind/unwind_table.c
[[ $(id -u) -eq 0 ]] || { echo "bench: run as root" >&2; exit 1; }
command -v clang-14 >/dev/null || { echo "bench: clang-14 missing (scripts/setup.sh)" >&2; exit 1; }
[[ -x $SS ]] || { echo "bench: no $SS (make)" >&2; exit 1; }
out=$(mktemp -d /tmp/stackscope-clang-cold.XXXXXX)
trap 'rm -rf "$out"' EXIT
LOOP="for i in 1 2 3 4 5 6; do clang-14 -O2 -D_GNU_SOURCE -Isrc -Ibpf -Ibuild -c $SRC -o $out/x.o; done"

root='^(_start|start_thread|clone|clone3|__clone|__clone3)$'

# folded -> "complete/total" of clang-14's samples, and the ends of the others into $2
ss_count() {
	awk -v root="$root" -v ends="$2" '$1 ~ /^clang-14;/ {
		n = $NF; s = $0; sub(/ [0-9]+$/, "", s); k = split(s, f, ";"); t += n
		if (k >= 2 && f[2] ~ root && s !~ /\[unwind|\[truncated/) { c += n; next }
		e = f[2]
		if (match(s, /\[unwind: [^]]*\]|\[truncated\]/)) e = substr(s, RSTART, RLENGTH)
		else if (e ~ /^[0-9a-f]*$/ || e == "") e = "(other outermost frame)"
		miss[e] += n
	} END { for (e in miss) printf "%6d  %s\n", miss[e], e > ends; printf "%d/%d", c, t }' "$1"
}

# perf script -> the same count: the outermost frame of each clang-14 sample
perf_count() {
	perf script -i "$1" -F comm,ip,sym,dso 2>/dev/null | awk -v root="$root" -v ends="$2" '
		function flush() { if (!n) return; t++; if (last ~ root) c++; else miss[ld]++ }
		/^[^ \t]/ { flush(); n = ($1 == "clang-14"); last = ""; ld = ""; next }
		n && NF >= 2 { last = $2; sub(/\+0x[0-9a-f]+$/, "", last); ld = $2 " " $NF }
		END { flush(); for (e in miss) printf "%6d  %s\n", miss[e], e > ends; printf "%d/%d", c, t }' |
		tail -1
}

pct() { awk -F/ '{ printf "%s = %.1f %%", $0, $2 ? 100 * $1 / $2 : 0 }' <<<"$1"; }

echo "# clang-14 -O2 -c $SRC x 6, 199 Hz, $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-26s %-26s %-26s %s\n' round "stackscope cold" "stackscope warm" "perf --call-graph dwarf" \
	"deferred (cold)"
for r in $(seq "$ROUNDS"); do
	rm -rf "$out/cache"
	mkdir -p "$out/cache"
	"$SS" record -F 199 --cache-dir "$out/cache" -o "$out/cold.folded" -- bash -c "$LOOP" \
		2>"$out/cold.err" >/dev/null
	cold=$(ss_count "$out/cold.folded" "$out/ends.cold.$r")
	"$SS" record -F 199 --cache-dir "$out/cache" -o "$out/warm.folded" -- bash -c "$LOOP" \
		2>"$out/warm.err" >/dev/null
	warm=$(ss_count "$out/warm.folded" "$out/ends.warm.$r")
	perf record -q -F 199 --call-graph dwarf -o "$out/perf.data" -- bash -c "$LOOP" \
		>/dev/null 2>&1
	ref=$(perf_count "$out/perf.data" "$out/ends.perf.$r")
	printf '%-6s %-26s %-26s %-26s %s\n' "$r" "$(pct "$cold")" "$(pct "$warm")" "$(pct "$ref")" \
		"$(sed -n 's/^deferred *//p' "$out/cold.err" | cut -c1-90)"
done
for r in $(seq "$ROUNDS"); do
	for k in cold warm perf; do
		[[ -s $out/ends.$k.$r ]] || continue
		echo "# round $r, $k: incomplete samples by how they end"
		sort -rn "$out/ends.$k.$r" | head -8
	done
done
