#!/bin/bash
# Cost of `stackscope top` against `perf top`, in the same run on the same load (one
# wl_chain_nofp per CPU): each tool alone in a 160x45 tmux terminal (perf top needs one), both
# at 99 Hz, refreshing every second; ROUNDS rounds, the tools in alternation.
#
# Rows:
#   top            stackscope top (functions by self share, 5 s window)
#   top-callers    stackscope top -e hot_leaf (the caller tree of hot_leaf drawn every frame)
#   record         stackscope record (the same sampling session, no view): what the view adds
#                  is top's CPU minus this
#   perf-top       perf top -d 1 (flat functions)
#   perf-top-g     perf top -d 1 -g (call chains: children and self, like top's total and self)
# Method: for each tool's process, utime+stime of /proc/PID/stat (all threads), delta over a
# window of DUR seconds that starts WARM seconds after the tool started (start-up excluded);
# reported as ms of CPU per second, i.e. per refresh. Also stackscope top -b's own medians
# (its last stderr line): CPU of one frame (function table, caller tree, text) and of taking
# one profile into the window.
# Usage: sudo bench/top.sh [DUR_S (15)] [ROUNDS (3)] [WARM_S (6)]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
DUR=${1:-15}
ROUNDS=${2:-3}
WARM=${3:-6}
SS=$PWD/stackscope
LOAD=$BUILD/fixtures/wl_chain_nofp
SOCK=stackscope-top-bench-$$

[[ $(id -u) -eq 0 ]] || { echo "bench: run as root" >&2; exit 1; }
for t in perf tmux; do
	command -v $t >/dev/null || { echo "bench: $t missing (scripts/setup.sh)" >&2; exit 1; }
done
[[ -x $SS && -x $LOAD ]] || { echo "bench: make && make fixtures first" >&2; exit 1; }
out=$(mktemp -d /tmp/stackscope-top-bench.XXXXXX)
trap 'tmux -L $SOCK kill-server 2>/dev/null; kill $(jobs -p) 2>/dev/null; wait; rm -rf "$out"' EXIT

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
HZ_TICKS=$(getconf CLK_TCK)

# run NAME COMMAND: the command in a terminal; prints ms of CPU per second over the window
run()
{
	local name=$1 cmd=$2 pid t0 t1 i
	for i in $(seq "$(nproc)"); do
		"$LOAD" $((WARM + DUR + 3)) >/dev/null &
	done
	tmux -L "$SOCK" new-session -d -x 160 -y 45 -s "$name" "exec $cmd"
	pid=$(tmux -L "$SOCK" display-message -p -t "$name" '#{pane_pid}')
	sleep "$WARM"
	t0=$(ticks "$pid")
	sleep "$DUR"
	t1=$(ticks "$pid")
	tmux -L "$SOCK" send-keys -t "$name" q
	sleep 1
	tmux -L "$SOCK" kill-session -t "$name" 2>/dev/null
	kill "$pid" 2>/dev/null
	wait
	echo "$(((t1 - t0) * 1000 / HZ_TICKS)) $DUR" | awk '{ printf "%.1f\n", $1 / $2 }'
}

declare -A ms
tools=(top top-callers record perf-top perf-top-g)
for r in $(seq "$ROUNDS"); do
	ms[top]+="$(run top "$SS top -F 99 -d 1") "
	ms[top-callers]+="$(run top-callers "$SS top -F 99 -d 1 -e hot_leaf") "
	ms[record]+="$(run record "$SS record -F 99 -q -f folded -o $out/r.folded") "
	ms[perf-top]+="$(run perf-top "perf top -F 99 -d 1") "
	ms[perf-top-g]+="$(run perf-top-g "perf top -F 99 -d 1 -g") "
done

# top's own timings, batch mode (same load)
for i in $(seq "$(nproc)"); do "$LOAD" $((DUR + 10)) >/dev/null & done
"$SS" top -b -F 99 -d 1 -n "$DUR" -e hot_leaf -r 40 >/dev/null 2>"$out/batch.err"
wait

echo "# stackscope top vs perf top, $(nproc) busy CPUs, 99 Hz, 1 s refresh, ${DUR}s windows after ${WARM}s, median of $ROUNDS ($(date -u +%F))"
printf '%-12s %14s %s\n' tool "cpu_ms_per_s" "(rounds)"
for t in "${tools[@]}"; do
	printf '%-12s %14.1f (%s)\n' "$t" "$(tr ' ' '\n' <<<"${ms[$t]}" | grep . | median)" "${ms[$t]% }"
done
echo "top -b: $(tail -1 "$out/batch.err")"
