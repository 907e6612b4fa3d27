#!/bin/bash
# Node.js (V8) inlining benchmark (issue 12, BENCHMARKS §15b), on the installed node (20), with
# default flags, every measurement in the same run: tests/data/node_inline.js, whose hot loop
# in outer calls mid, which calls leaf; TurboFan compiles outer with both inlined.
#  1. stackscope: of the samples with an outer frame, the share whose JavaScript chain is
#     exactly top level -> outer -> mid -> leaf, each at its line (the call lines, leaf's hot
#     line), and the share with leaf at all; BPF time per sample (the record summary's clock);
#  2. perf (Debian's linux-perf, -g) on the same script restarted with --perf-basic-prof, the
#     peer's best case: of its samples with an outer frame, the share with a leaf frame.
# Every measurement is taken ROUNDS times in alternation; the table gives medians.
# Usage: sudo bench/node_inline.sh [ROUNDS] [SECS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-3}
HZ=499
NODE=/usr/bin/node
WL=$PWD/tests/data/node_inline.js
bench_start nodeinline
need_program "$NODE" "scripts/setup.sh"
need_program perf "scripts/setup.sh: linux-perf"


# folded stacks on stdin -> "samples-in-outer exact-chain-with-lines with-leaf"
cat >"$out/count.py" <<'EOC'
import sys
want = ["<anonymous>:1:1@node_inline.js:%s" % sys.argv[1], "outer@node_inline.js:%s" % sys.argv[2],
        "mid@node_inline.js:%s" % sys.argv[3], "leaf@node_inline.js:%s" % sys.argv[4]]
hot = exact = leaf = 0
for raw in sys.stdin:
    stack, _, cnt = raw.rstrip("\n").rpartition(" ")
    mine = [f for f in stack.split(";") if "node_inline.js" in f]
    if not any(f.startswith("outer@") for f in mine):
        continue
    hot += int(cnt)
    exact += int(cnt) * (mine == want)
    leaf += int(cnt) * any(f.startswith("leaf@") for f in mine)
print(hot, exact, leaf)
EOC
ARGS="$(line "$WL" CALL_OUTER) $(line "$WL" CALL_MID) $(line "$WL" CALL_LEAF) $(line "$WL" LEAF_HOT)"
declare -A R
for r in $(seq "$ROUNDS"); do
	./stackscope record -F $HZ -o "$out/ss.pb.gz" -- $NODE "$WL" "$SECS" >/dev/null 2>"$out/ss.log"
	# shellcheck disable=SC2086 # ARGS are words
	read -r hot exact leaf < <($STACKS "$out/ss.pb.gz" | python3 "$out/count.py" $ARGS)
	R[ss.exact]+="$(pct "$exact" "$hot") "
	R[ss.leaf]+="$(pct "$leaf" "$hot") "
	R[ss.hot]+="$hot "
	R[ss.ns]+="$(record_bpf_ns "$out/ss.log") "
	(cd "$out" && perf record -q -F $HZ -g -o "$out/perf.data" -- $NODE --perf-basic-prof \
		"$WL" "$SECS" >/dev/null 2>&1)
	perf_stacks "$out/perf.data" |
		sed -E 's/(^|;)(JS:|LazyCompile:|Function:)?[*~^+]?(outer|mid|leaf|<anonymous>) ?[^;]*node_inline\.js[^;]*/\1\3@node_inline.js/g; s/$/ 1/' \
		>"$out/perf.folded"
	# shellcheck disable=SC2086
	read -r phot _ pleaf < <(python3 "$out/count.py" $ARGS <"$out/perf.folded")
	R[perf.leaf]+="$(pct "$pleaf" "$phot") "
	R[perf.hot]+="$phot "
	rm -f /tmp/perf-*.map
	echo "round $r: stackscope $exact/$hot exact, $leaf with leaf, bpf ns/sample $(record_bpf_ns "$out/ss.log"); perf $pleaf/$phot with leaf" >&2
done

echo "method: $(date -u +%Y-%m-%d), $ROUNDS rounds in alternation, medians; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| tool | samples in outer | outer -> mid -> leaf at their lines | with a leaf frame | BPF ns/sample |"
echo "|---|---|---|---|---|"
echo "| stackscope (no flag, no restart) | $(median <<<"${R[ss.hot]}") | $(median <<<"${R[ss.exact]}") % | $(median <<<"${R[ss.leaf]}") % | $(median <<<"${R[ss.ns]}") |"
echo "| perf --perf-basic-prof (restart) | $(median <<<"${R[perf.hot]}") | - (no lines) | $(median <<<"${R[perf.leaf]}") % | - |"
