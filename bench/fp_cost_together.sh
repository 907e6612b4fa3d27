#!/bin/bash
# A whole frame-pointer sample, this build against the previous one and bpftrace
# `@[kstack, ustack] = count()`, all started together on the same process so that they sample the
# same seconds under the same load (on this shared box, sequential runs moved 2-3x with the load
# between them). Per round: one fresh wl_chain_fp (frame pointers, 8 user frames with libc's),
# each tool with its own perf events at HZ filtered to it; after WARM s from the last tool's
# attach, a window of WINDOW s between two snapshots (bench/sample_window.py: run_time_ns of the
# tool's sampling program, kernel.bpf_stats_enabled, and the samples it took in between:
# stackscope's COUNTER_SAMPLES, bpftrace's summed counts). ns a sample = run time / samples, the
# rejected runs of the other CPU included, as every tool pays them. One row per round, then the
# medians of the figures and of the per-round ratios. ss_in and prev_in: each build's in-program
# clock a recorded sample (its summary's "bpf time ... per recorded sample", the whole recording:
# the rejected runs left out); ss_runs and prev_runs: the program's runs a recorded sample in the
# window (1.0: no rejected run).
# Usage: sudo [PREV=path/to/previous/stackscope] bench/fp_cost_together.sh [ROUNDS (7)]
# [WINDOW_S (4)] [HZ (199)]; SS=path/to/stackscope measures another build than ./stackscope;
# WORKLOAD=wl_recurse (305 frames, CFI) compares the builds per frame the same way.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-7}
WIN=${2:-4}
HZ=${3:-199}
WARM=${WARM:-2}
SS=${SS:-./stackscope}
PREV=${PREV:-}
WINDOW_PY="/usr/bin/python3 $PWD/bench/sample_window.py"

need_root
need_program bpftrace "scripts/setup.sh"
need_program bpftool "scripts/setup.sh"
need_fixture WL "${WORKLOAD:-wl_chain_fp}"
[[ -x $SS && (-z $PREV || -x $PREV) ]] || { echo "bench: SS= and PREV= must be stackscope binaries" >&2; exit 1; }
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
pids=()
bench_out fp-cost-together 'stop_pids; sysctl -q kernel.bpf_stats_enabled="$stats_was"'
sysctl -q kernel.bpf_stats_enabled=1

# attached PID: whether PID's sampling program has run
attached() { $WINDOW_PY "$1" | awk '{ exit !($3 > 0) }'; }

# stop_tool PID: SIGINT, then SIGKILL if it is still there 10 s later
stop_tool()
{
	local i
	kill -INT "$1" 2>/dev/null
	for i in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# in_program LOG: the summary's in-program ns a recorded sample, or "-"
in_program() { record_bpf_ns "$1" | grep . || echo -; }

# one_round R: "R ss_ns prev_ns bt_ns ss_in prev_in ss_runs prev_runs" (prev's "-" without PREV)
one_round()
{
	local wl ss pv=0 bt tools t i
	"$WL" 60 >/dev/null 2>&1 &
	wl=$!
	pids+=($wl)
	sleep 0.3
	"$SS" record -F "$HZ" -d 60 -p "$wl" -o "$out/ss.pb.gz" >"$out/ss.log" 2>&1 &
	ss=$!
	tools=($ss)
	if [[ -n $PREV ]]; then
		"$PREV" record -F "$HZ" -d 60 -p "$wl" -o "$out/prev.pb.gz" >"$out/prev.log" 2>&1 &
		pv=$!
		tools+=($pv)
	fi
	bpftrace -e "profile:hz:$HZ /pid == $wl/ { @[kstack, ustack] = count(); }" >"$out/bt.out" 2>&1 &
	bt=$!
	tools+=($bt)
	pids+=("${tools[@]}")
	for t in "${tools[@]}"; do
		for i in $(seq 300); do attached "$t" && break; sleep 0.1; done
	done
	sleep "$WARM"
	$WINDOW_PY "${tools[@]}" >"$out/before"
	sleep "$WIN"
	$WINDOW_PY "${tools[@]}" >"$out/after"
	# bpftrace's map is read already: it need not print it (and once ignored SIGINT for 14 min)
	for t in "${tools[@]}"; do stop_tool "$t"; done
	kill "$wl" 2>/dev/null
	wait "$wl" 2>/dev/null
	pids=()
	# ns a sample of each tool over the window, in the order ss, prev, bt
	join "$out/before" "$out/after" | awk -v ss="$ss" -v pv="$pv" -v bt="$bt" \
		-v ssin="$(in_program "$out/ss.log")" \
		-v pvin="$([[ -n $PREV ]] && in_program "$out/prev.log" || echo -)" '
		{
			d = $7 - $4
			ns[$1] = d > 0 ? sprintf("%.0f", ($5 - $2) / d) : "-"
			runs[$1] = d > 0 ? sprintf("%.2f", ($6 - $3) / d) : "-"
		}
		END { print ns[ss], (pv ? ns[pv] : "-"), ns[bt], ssin, pvin, runs[ss], (pv ? runs[pv] : "-") }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else printf "-" }'; }

echo "# one ${WL##*/} at $HZ Hz, all tools at once; window ${WIN} s after ${WARM} s; SS=$SS PREV=${PREV:--}"
echo "# $(date -u '+%F %H:%M UTC'), $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %9s %9s %9s %8s %8s %8s %8s %8s %8s %9s\n' round ss_ns prev_ns bt_ns ss/prev ss/bt \
	prev/bt ss_in prev_in ss_runs prev_runs
for r in $(seq "$ROUNDS"); do
	read -r a p b ai pi ar pr < <(one_round)
	printf '%-6s %9s %9s %9s %8s %8s %8s %8s %8s %8s %9s\n' "$r" "$a" "$p" "$b" "$(ratio "$a" "$p")" \
		"$(ratio "$a" "$b")" "$(ratio "$p" "$b")" "$ai" "$pi" "$ar" "$pr"
done | tee "$out/rows"
printf '%-6s' median
for c in 2 3 4 5 6 7 8 9 10 11; do
	printf ' %8s' "$(awk -v c=$c '$1 ~ /^[0-9]+$/ && $c != "-" { print $c }' "$out/rows" | median)"
done
echo
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
