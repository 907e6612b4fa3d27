#!/bin/bash
# make bench: stackscope's cost for a system-wide recording while both cores are busy, side by
# side with its peers measured in the same run: `perf record -g` and bpftrace
# `profile:hz:99 { @[kstack, ustack] = count(); }`. Each tool records the same DURATION at
# 99 Hz, three times in alternation; we report medians of CPU time (user+sys, from
# /usr/bin/time), peak RSS, and stackscope's BPF run time per sample
# (kernel.bpf_stats_enabled). Then every other bench/*.sh (a frame-pointer sample against bpftrace, all at once; CFI extraction, unwinding, Python, Ruby, PHP, Node.js,
# symbolization, agent, the store, the web UI, top, off-CPU).
# Usage: sudo bench/run.sh [DURATION_S] [ROUNDS]
source "$(dirname "$0")/lib.sh"
DUR=${1:-30}
ROUNDS=${2:-3}
bench_out bench 'kill $(jobs -p) 2>/dev/null'

need_root
need_program perf "scripts/setup.sh"
need_program bpftrace "scripts/setup.sh"

# Load: one CPU-bound process per core with a deep-ish native stack (no frame pointers).
load=$BUILD/fixtures/wl_chain_nofp
[[ -x $load ]] || load=""
start_load() {
	for _ in $(seq "$(nproc)"); do
		if [[ -n $load ]]; then "$load" $((DUR + 5)) >/dev/null & else timeout $((DUR + 5)) sh -c 'while :; do :; done' & fi
	done
}

measure() { # name cmd... -> "cpu_s rss_kb"
	local name=$1; shift
	/usr/bin/time -f '%U %S %M' -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1
	tail -1 "$out/$name.time" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }'
}


sysctl -q kernel.bpf_stats_enabled=1
declare -A cpu rss
bpf_ns=()
for r in $(seq "$ROUNDS"); do
	start_load
	sleep 1
	read -r c m < <(measure stackscope ./stackscope record -F 99 -d "$DUR" -o "$out/s.pb.gz")
	cpu[stackscope]+="$c "; rss[stackscope]+="$m "
	bpf_ns+=("$(record_bpf_ns "$out/stackscope.log")")
	read -r c m < <(measure perf perf record -a -g -F 99 -o "$out/perf.data" -- sleep "$DUR")
	cpu[perf]+="$c "; rss[perf]+="$m "
	read -r c m < <(measure bpftrace timeout -s INT "$DUR" bpftrace -e 'profile:hz:99 { @[kstack, ustack] = count(); }')
	cpu[bpftrace]+="$c "; rss[bpftrace]+="$m "
	wait
done
sysctl -q kernel.bpf_stats_enabled=0

echo "# system-wide recording, ${DUR}s at 99 Hz, $(nproc) busy CPUs, median of $ROUNDS ($(date -u +%F))"
printf '%-12s %12s %12s %14s\n' tool "cpu_s" "cpu_%core" "peak_rss_MiB"
for t in stackscope perf bpftrace; do
	c=$(tr ' ' '\n' <<<"${cpu[$t]}" | grep . | median)
	m=$(tr ' ' '\n' <<<"${rss[$t]}" | grep . | median)
	printf '%-12s %12.3f %12.3f %14.1f\n' "$t" "$c" "$(echo "$c * 100 / $DUR" | bc -l)" "$(echo "$m / 1024" | bc -l)"
done
echo "stackscope BPF time per sample (ns, median): $(printf '%s\n' "${bpf_ns[@]}" | grep . | median)"
grep -E '^(samples|user stacks|processes)' "$out/stackscope.log" | sed 's/^/stackscope last run: /'

# The other benchmarks (each prints its own method and table).
for b in fp_cost_together cfi_extract unwind fork fork_storm deferred clang_cold python ruby php jvm perl node node_inline node_columns symbolize go_symbolize agent agent_startup store serve top offcpu; do
	if [[ -x bench/$b.sh ]]; then
		echo
		echo "## bench/$b.sh"
		BUILD=$BUILD bench/$b.sh
	fi
done
