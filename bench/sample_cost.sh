#!/bin/bash
# The sampling program's cost per sample (run_time_ns / run_cnt, kernel.bpf_stats_enabled) of
# this build against PEER's, alternating on the same load: every CPU busy with a workload of a
# known depth (wl_chain_nofp: 8 user frames; wl_recurse: 305), recorded with `record -p` at HZ.
# At 19 Hz nearly every cache line and branch the program touches is cold (what the agent pays
# at its default rate); at 999 Hz it is warm (what its instructions cost). One row per round
# and workload, then the medians and the median of the per-round ratios SS / PEER.
# Usage: sudo PEER=path/to/stackscope bench/sample_cost.sh [ROUNDS (5)] [DURATION_S (10)]
# [HZ list ("19 999")]; SS=path/to/stackscope measures another build than ./stackscope.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
DUR=${2:-10}
HZS=${3:-19 999}
SS=${SS:-./stackscope}
F=$BUILD/fixtures

need_root
[[ -n ${PEER:-} && -x $PEER && -x $SS ]] || { echo "bench: PEER= and SS= must be stackscope binaries" >&2; exit 1; }
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
bench_out sample-cost 'sysctl -q kernel.bpf_stats_enabled="$stats_was"'
sysctl -q kernel.bpf_stats_enabled=1

# cost TOOL WORKLOAD HZ: ns per run of TOOL's sampling program over every CPU running WORKLOAD
cost()
{
	local tool=$1 wl=$2 hz=$3 pids=() p
	for _ in $(seq "$(nproc)"); do
		"$F/$wl" $((DUR + 3)) >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	"$tool" record -F "$hz" -d "$DUR" -o "$out/p" -p "$(
		IFS=,
		echo "${pids[*]}"
	)" >"$out/log" 2>&1
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	awk '/^bpf run time/ { print $4 }' "$out/log"
}

echo "# sampling program, ns per sample: SS=$SS vs PEER=$PEER, $(nproc) CPUs busy, ${DUR} s a run"
echo "# $(date -u '+%F %H:%M UTC'), $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-14s %5s %10s %10s %7s\n' round workload hz ss_ns peer_ns ratio
for r in $(seq "$ROUNDS"); do
	for wl in wl_chain_nofp wl_recurse; do
		[[ -x $F/$wl ]] || continue
		for hz in $HZS; do
			# the order alternates between rounds
			if ((r % 2)); then
				a=$(cost "$SS" $wl "$hz")
				b=$(cost "$PEER" $wl "$hz")
			else
				b=$(cost "$PEER" $wl "$hz")
				a=$(cost "$SS" $wl "$hz")
			fi
			printf '%-6s %-14s %5s %10s %10s %7s\n' "$r" $wl "$hz" "$a" "$b" \
				"$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.3f", a / b }')"
		done
	done
done | tee "$out/rows"
echo "# medians over the rounds"
awk 'NR > 0 && $1 ~ /^[0-9]+$/ { k = $2 " " $3; ss[k] = ss[k] " " $4; pe[k] = pe[k] " " $5; ra[k] = ra[k] " " $6 }
	function med(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END { for (k in ss) printf "%-20s ss %8.0f ns  peer %8.0f ns  ratio %.3f\n", k, med(ss[k]), med(pe[k]), med(ra[k]) }' \
	"$out/rows" | sort
