#!/bin/bash
# Off-CPU profiling under a context-switch storm: bench/pingpong.c bounces a byte between two
# processes over pipes, both pinned to the last CPU (~50k round trips/s on an idle box here:
# ~100k switches a second) for DUR seconds while each tool records the whole system; rounds
# alternate the tools:
#   none         the workload alone
#   cpu          stackscope record -F 99 (CPU samples only: the baseline of the machinery)
#   offcpu       stackscope record --off-cpu (default: stays >= 1 ms, 2000 walks/s)
#   offcpu-all   stackscope record --off-cpu --off-cpu-min 0 (every stay; walk budget)
#   offcputime   bcc's libbpf-tools offcputime -m 1000 (Debian libbpf-tools: kernel stacks +
#                frame-pointer user stacks; bpfcc-tools' Python offcputime needs kernel headers,
#                which this kernel lacks)
#   offcputime-all  offcputime (default -m 1: every stay)
# Reported (medians): the workload's round trips/s and slowdown against "none"; the tool's
# own CPU over the workload's run (user+sys of its process, from /proc); the BPF run time of
# its sched_switch program per second (kernel.bpf_stats_enabled: time spent in the switching
# threads, which the workload pays); and stackscope's off-CPU summary of the last round.
# Usage: sudo bench/offcpu.sh [DUR_S] [ROUNDS]
source "$(dirname "$0")/lib.sh"
DUR=${1:-5}
ROUNDS=${2:-3}
OFFCPUTIME=${OFFCPUTIME:-/usr/sbin/offcputime}
bench_out offcpu 'kill $(jobs -p) 2>/dev/null'
need_root
need_program "$OFFCPUTIME" "apt-get install libbpf-tools"
gcc -O2 -Wall -o "$out/pingpong" bench/pingpong.c || exit 1
TCK=$(getconf CLK_TCK)
PIN=$(($(nproc) - 1)) # both ping-pong processes on the last CPU: every round trip is two
		      # switches there, whatever the tools and the box's idle states do

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# bpf_ns NAME: run_time_ns of the loaded programs called NAME (bpftool), summed
bpf_ns() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p.get("name") == sys.argv[1]))' "$1"
}


run() { # tool -> "round_trips_per_s tool_cpu_pct bpf_ms_per_s"
	local tool=$1 pid="" prog="" t0=0 t1=0 b0=0 b1=0 rt
	case $tool in
	cpu) ./stackscope record -F 99 -o "$out/$tool.pb.gz" 2>"$out/$tool.err" & pid=$! ;;
	offcpu) ./stackscope record --off-cpu -o "$out/$tool.pb.gz" 2>"$out/$tool.err" &
		pid=$! prog=on_switch ;;
	offcpu-all) ./stackscope record --off-cpu --off-cpu-min 0 -o "$out/$tool.pb.gz" \
		2>"$out/$tool.err" & pid=$! prog=on_switch ;;
	offcputime) "$OFFCPUTIME" -m 1000 >"$out/$tool.txt" 2>"$out/$tool.err" &
		pid=$! prog=sched_switch ;;
	offcputime-all) "$OFFCPUTIME" >"$out/$tool.txt" 2>"$out/$tool.err" & pid=$! prog=sched_switch ;;
	esac
	if [[ -n $pid ]]; then # ready: stackscope says so; offcputime gets 3 s
		for _ in $(seq 300); do grep -q recording "$out/$tool.err" 2>/dev/null && break; sleep 0.1; done
		sleep 1
		t0=$(cpu_ticks "$pid")
		[[ -n $prog ]] && b0=$(bpf_ns "$prog")
	fi
	rt=$(taskset -c "$PIN" "$out/pingpong" "$DUR" | awk '{ print $2 }')
	if [[ -n $pid ]]; then
		t1=$(cpu_ticks "$pid")
		[[ -n $prog ]] && b1=$(bpf_ns "$prog")
		kill -INT "$pid"
		wait "$pid"
	fi
	echo "$rt $(echo "($t1 - $t0) * 100 / $TCK / $DUR" | bc -l) $(echo "($b1 - $b0) / 1000000 / $DUR" | bc -l)"
}

tools="none cpu offcpu offcpu-all offcputime offcputime-all"
sysctl -q kernel.bpf_stats_enabled=1
declare -A rts cpus bpfs
for r in $(seq "$ROUNDS"); do
	for t in $tools; do
		read -r a b c < <(run "$t")
		rts[$t]+="$a " cpus[$t]+="$b " bpfs[$t]+="$c "
	done
done
sysctl -q kernel.bpf_stats_enabled=0

echo "# off-CPU under a pipe ping-pong, ${DUR}s per run, median of $ROUNDS, $(nproc) CPUs ($(date -u +%F))"
printf '%-15s %12s %9s %14s %18s\n' tool round_trips/s slowdown tool_cpu_%core bpf_ms_per_s
base=$(tr ' ' '\n' <<<"${rts[none]}" | grep . | median)
for t in $tools; do
	a=$(tr ' ' '\n' <<<"${rts[$t]}" | grep . | median)
	b=$(tr ' ' '\n' <<<"${cpus[$t]}" | grep . | median)
	c=$(tr ' ' '\n' <<<"${bpfs[$t]}" | grep . | median)
	printf '%-15s %12.0f %8.1f%% %14.1f %18.1f\n' "$t" "$a" "$(echo "(1 - $a / $base) * 100" | bc -l)" "$b" "$c"
done
grep -E '^off-CPU' "$out/offcpu.err" | sed 's/^/offcpu last run: /'
grep -E '^off-CPU' "$out/offcpu-all.err" | sed 's/^/offcpu-all last run: /'
