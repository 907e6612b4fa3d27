#!/bin/bash
# Node.js (V8) unwinding benchmark (issue 12), on the installed node (20), every measurement in
# the same run:
#  1. completeness: the share of samples in the hot loop (a stack holding a down() frame)
#     whose JavaScript chain is exactly the top-level code -> down x30, every frame at its
#     line, per tier: Ignition, baseline, default flags (down() called again and again,
#     TurboFan code), OSR (default flags, one call whose loop runs until the end: the loop
#     in the code compiled for it on the stack);
#  2. BPF time per sample (the record summary's in-program clock) for that 31-frame JS stack
#     against a 30-frame native stack (C, -O2 -fomit-frame-pointer);
#  3. perf (Debian's linux-perf) on the same script restarted with --perf-basic-prof, the
#     peer's best case: its frame-pointer walk names JIT frames from /tmp/perf-PID.map, while
#     interpreted frames show as V8's trampoline (no function names without
#     --interpreted-frames-native-stack) and no frame has a line.
# Every measurement is taken ROUNDS times in alternation; the table gives medians.
# Usage: sudo bench/node.sh [ROUNDS] [SECS]   ("n/a": no sample had a down frame at all)
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
SECS=${2:-2}
HZ=499
NODE=/usr/bin/node
bench_start nodebench
need_program "$NODE" "scripts/setup.sh"
need_program perf "scripts/setup.sh: linux-perf"

deep_workload node_deep30.js
L_LOOP=$(line "$WL" LOOP)

build_native30 "$out" || exit 1

# stacks (pprof_stacks.py lines, or perf's folded) on stdin -> "hot complete"; LINES=1: every
# frame must carry its line (the deepest: the loop's or its body's). A stack is in the hot
# loop when it holds a down frame.
cat >"$out/complete.py" <<'EOC'
import re, sys
l_main, l_rec, l_hot, l_loop, lines = (int(a) for a in sys.argv[1:6])
hot = complete = 0
for raw in sys.stdin:
    stack, _, cnt = raw.rstrip("\n").rpartition(" ")
    cnt = int(cnt)
    frames = stack.split(";")
    mine = [f for f in frames if "@node_deep30.js" in f or "node_deep30.js" in f]
    downs = [f for f in mine if "down" in f]
    if not downs:
        continue
    hot += cnt
    if lines:
        want = ["<anonymous>:1:1@node_deep30.js:%d" % l_main] + \
               ["down@node_deep30.js:%d" % l_rec] * 29
        leaf = ["down@node_deep30.js:%d" % l for l in (l_hot, l_loop)]
        complete += cnt * (mine[:-1] == want and mine[-1:] and mine[-1] in leaf)
    else:
        complete += cnt * (len(downs) == 30)
print(hot, complete)
EOC

# tier: name, node flags, iterations per call, lines required
tiers=("int|--no-opt --no-sparkplug|300000|1" "base|--always-sparkplug --no-opt|3000000|1"
	"opt||30000000|1" "osr||0|1")
declare -A R
for r in $(seq "$ROUNDS"); do
	./stackscope record -F $HZ -o "$out/native.pb.gz" -- "$out/native30" 1.2e9 >/dev/null 2>"$out/native.log"
	R[native.ns]+="$(record_bpf_ns "$out/native.log") "
	for t in "${tiers[@]}"; do
		IFS='|' read -r name flags iters need <<<"$t"
		# shellcheck disable=SC2086 # flags are words
		./stackscope record -F $HZ -o "$out/$name.pb.gz" -- $NODE $flags "$WL" "$iters" "$SECS" \
			>/dev/null 2>"$out/$name.log"
		R[$name.ns]+="$(record_bpf_ns "$out/$name.log") "
		read -r hot complete < <($STACKS "$out/$name.pb.gz" | python3 "$out/complete.py" "$L_MAIN" "$L_REC" "$L_HOT" "$L_LOOP" "$need")
		R[$name.complete]+="$(pct "$complete" "$hot") "
		read -r _ frames30 < <($STACKS "$out/$name.pb.gz" | python3 "$out/complete.py" "$L_MAIN" "$L_REC" "$L_HOT" "$L_LOOP" 0)
		R[$name.frames]+="$(pct "$frames30" "$hot") "
		R[$name.samples]+="$hot "
		# perf, restarted with --perf-basic-prof: the frame-pointer walk, JIT names from the map
		# shellcheck disable=SC2086
		# (in $out: node writes its isolate logs to the working directory)
		(cd "$out" && perf record -q -F $HZ -g -o "$out/perf.data" -- $NODE --perf-basic-prof \
			$flags "$WL" "$iters" "$SECS" >/dev/null 2>&1)
		perf_stacks "$out/perf.data" |
			sed -E 's/(^|;)(JS:|LazyCompile:|Function:)?[*~^+]?(down|<anonymous>)? ?[^;]*node_deep30\.js[^;]*/\1\3@node_deep30.js/g; s/$/ 1/' \
			>"$out/perf.folded"
		read -r phot pcomplete < <(python3 "$out/complete.py" "$L_MAIN" "$L_REC" "$L_HOT" "$L_LOOP" 0 <"$out/perf.folded")
		R[$name.perf]+="$(pct "$pcomplete" "$phot") "
		rm -f /tmp/perf-*.map
		echo "round $r: $name $complete/$hot complete, bpf ns/sample $(record_bpf_ns "$out/$name.log"); perf (--perf-basic-prof) $pcomplete/$phot" >&2
	done
done

echo "method: $(date -u +%Y-%m-%d), $ROUNDS rounds in alternation, medians; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| workload | stackscope: complete (of hot samples) | stackscope: 30 down frames | samples | BPF ns/sample | perf --perf-basic-prof: 30 down frames |"
echo "|---|---|---|---|---|---|"
for t in "${tiers[@]}"; do
	IFS='|' read -r name flags _ need <<<"$t"
	echo "| node ${flags:-(default flags)}$([[ $name == osr ]] && echo ', one call (OSR)'), top -> down x30$([[ $need == 1 ]] && echo ', every line') | $(median <<<"${R[$name.complete]}") % | $(median <<<"${R[$name.frames]}") % | $(median <<<"${R[$name.samples]}") | $(median <<<"${R[$name.ns]}") | $(median <<<"${R[$name.perf]}") % |"
done
echo "| native, main -> rec30 x30 | - | - | - | $(median <<<"${R[native.ns]}") | - |"
