#!/bin/bash
# Cost of `stackscope top` against `perf top`, in the same run on the same load (one
# wl_chain_nofp per CPU): every tool in a 160x45 tmux terminal of its own (perf top needs
# one), all at 99 Hz, refreshing every second, all running at the same time (this box is
# shared: tools measured side by side see the same load; each also samples the others).
#
# Rows:
#   top            stackscope top (functions by self share, 5 s window)
#   top-callers    stackscope top -e hot_leaf (the caller tree of hot_leaf drawn every frame)
#   record         stackscope record (the same sampling session, no view): what the view adds
#                  is top's CPU minus this
#   perf-top       perf top -d 1 (flat functions)
#   perf-top-g     perf top -d 1 -g (call chains: children and self, like top's total and self)
# Method: for each tool's process, utime+stime of /proc/PID/stat (all threads), delta over a
# window of DUR seconds that starts WARM seconds after the tools started (start-up excluded);
# reported as ms of CPU per second, i.e. per refresh; median over ROUNDS rounds, and the
# median of the per-round ratios to top. Then stackscope top -b's own medians (its last stderr
# line) with a 5 s and a 30 s window, side by side: CPU of one frame (function table, caller
# tree of hot_leaf, text) and of taking one profile into the window.
# Usage: sudo bench/top.sh [DUR_S (20)] [ROUNDS (5)] [WARM_S (6)]
source "$(dirname "$0")/lib.sh"
DUR=${1:-20}
ROUNDS=${2:-5}
WARM=${3:-6}
SS=$PWD/stackscope
SOCK=stackscope-top-bench-$$

need_root
for t in perf tmux; do
	need_program "$t" "scripts/setup.sh"
done
need_program "$SS" "make"
need_fixture LOAD wl_chain_nofp
bench_out top-bench 'tmux -L $SOCK kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; kill $(jobs -p) 2>/dev/null; wait'

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
HZ_TICKS=$(getconf CLK_TCK)

tools=(top top-callers record perf-top perf-top-g)
declare -A cmd=(
	[top]="$SS top -F 99 -d 1"
	[top-callers]="$SS top -F 99 -d 1 -e hot_leaf"
	[record]="$SS record -F 99 -q -f folded -o $out/r.folded"
	[perf-top]="perf top -F 99 -d 1"
	[perf-top-g]="perf top -F 99 -d 1 -g"
)
declare -A ms ratio
for r in $(seq "$ROUNDS"); do
	declare -A pid=() t0=()
	for i in $(seq "$(nproc)"); do
		"$LOAD" $((WARM + DUR + 3)) >/dev/null &
	done
	for t in "${tools[@]}"; do
		tmux -L "$SOCK" new-session -d -x 160 -y 45 -s "$t" "exec ${cmd[$t]}"
		pid[$t]=$(tmux -L "$SOCK" display-message -p -t "$t" '#{pane_pid}')
	done
	sleep "$WARM"
	for t in "${tools[@]}"; do t0[$t]=$(ticks "${pid[$t]}"); done
	sleep "$DUR"
	for t in "${tools[@]}"; do
		v=$(echo "$(($(ticks "${pid[$t]}") - ${t0[$t]})) $DUR $HZ_TICKS" | awk '{ printf "%.1f", $1 * 1000 / $3 / $2 }')
		ms[$t]+="$v "
	done
	for t in "${tools[@]}"; do
		tmux -L "$SOCK" send-keys -t "$t" q
	done
	sleep 1
	for t in "${tools[@]}"; do
		tmux -L "$SOCK" kill-session -t "$t" 2>/dev/null
		kill "${pid[$t]}" 2>/dev/null
	done
	wait
	top_ms=$(awk '{ print $NF }' <<<"${ms[top]}")
	for t in "${tools[@]}"; do
		ratio[$t]+="$(awk -v a="$(awk '{ print $NF }' <<<"${ms[$t]}")" -v b="$top_ms" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') "
	done
done

# top's own timings, batch mode (same load), 5 s and 30 s windows side by side
for i in $(seq "$(nproc)"); do "$LOAD" $((DUR + 15)) >/dev/null & done
"$SS" top -b -F 99 -d 1 -w 5 -n "$DUR" -e hot_leaf -r 40 >/dev/null 2>"$out/batch5.err" &
"$SS" top -b -F 99 -d 1 -w 30 -n "$DUR" -e hot_leaf -r 40 >/dev/null 2>"$out/batch30.err" &
wait

echo "# stackscope top vs perf top, side by side, $(nproc) busy CPUs, 99 Hz, 1 s refresh, ${DUR}s windows after ${WARM}s, median of $ROUNDS ($(date -u +%F))"
printf '%-12s %14s %12s  %s\n' tool "cpu_ms_per_s" "x_top" "(rounds)"
for t in "${tools[@]}"; do
	printf '%-12s %14.1f %12.2f  (%s)\n' "$t" "$(tr ' ' '\n' <<<"${ms[$t]}" | grep . | median)" \
		"$(tr ' ' '\n' <<<"${ratio[$t]}" | grep . | median)" "${ms[$t]% }"
done
echo "top -b -w 5:  $(tail -1 "$out/batch5.err")"
echo "top -b -w 30: $(tail -1 "$out/batch30.err")"
