#!/bin/bash
# A whole frame-pointer sample, stackscope against bpftrace `@[kstack, ustack] = count()`, in
# the same run: one wl_chain_fp (frame pointers, 8 user frames with libc's), both tools
# filtered to it at HZ, alternating tool order each round. Cost a sample = the kernel's
# run_time_ns of the tool's perf_event program (kernel.bpf_stats_enabled, filtered runs
# included, as both pay them) over the samples it took of the process: stackscope's
# `bpf run time` x runs over its recorded samples; bpftrace's program read from its fdinfo
# just before SIGINT, over the sum of its map's counts.
# Usage: sudo bench/fp_sample_cost.sh [ROUNDS (5)] [DURATION_S (8), at most 20] [HZ (199)];
# SS=path/to/stackscope measures another build than ./stackscope.
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
DUR=${2:-8}
HZ=${3:-199}
SS=${SS:-./stackscope}
WL=$BUILD/fixtures/wl_chain_fp

need_root
need_program bpftrace "scripts/setup.sh"
need_program "$WL" "make"
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
pids=()
bench_out fp-sample-cost 'stop_pids; sysctl -q kernel.bpf_stats_enabled="$stats_was"'
sysctl -q kernel.bpf_stats_enabled=1

# ss PID: ns a recorded sample
ss()
{
	"$SS" record -F "$HZ" -d "$DUR" -p "$1" -o "$out/p.pb.gz" >"$out/ss.log" 2>&1
	awk '/^samples/ { n = $2 } /^bpf run time/ { ns = $4; runs = $9 }
		END { if (n > 0) printf "%.0f\n", ns * runs / n }' "$out/ss.log"
}

# bt PID: ns a counted sample
bt()
{
	local b id ns=0
	bpftrace -e "profile:hz:$HZ /pid == $1/ { @[kstack, ustack] = count(); }" >"$out/bt.out" 2>&1 &
	b=$!
	for _ in $(seq 100); do grep -q '^Attaching' "$out/bt.out" && break; sleep 0.1; done
	sleep "$DUR"
	for fd in /proc/$b/fdinfo/*; do
		id=$(awk '/^prog_id/ { print $2 }' "$fd" 2>/dev/null)
		[[ -n $id ]] || continue
		bpftool prog show id "$id" 2>/dev/null | grep -q perf_event || continue
		ns=$(bpftool -j prog show id "$id" |
			python3 -c 'import json, sys; print(json.load(sys.stdin).get("run_time_ns", 0))')
	done
	kill -INT "$b"
	wait "$b"
	awk -v ns="$ns" '/\]: [0-9]+$/ { n += $NF } END { if (n > 0) printf "%.0f\n", ns / n }' "$out/bt.out"
}

echo "# one wl_chain_fp at $HZ Hz, ${DUR} s a run; $(date -u '+%F %H:%M UTC'), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %10s %10s %7s\n' round ss_ns bt_ns ratio
for r in $(seq "$ROUNDS"); do
	# a fresh workload each round (wl_common.h bounds a run to 60 s)
	"$WL" 60 >/dev/null 2>&1 &
	wl=$!
	pids+=($wl)
	sleep 0.5
	if ((r % 2)); then a=$(ss $wl); b=$(bt $wl); else b=$(bt $wl); a=$(ss $wl); fi
	kill "$wl" 2>/dev/null
	wait "$wl" 2>/dev/null
	printf '%-6s %10s %10s %7s\n' "$r" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.3f", a / b }')"
done | tee "$out/rows"
awk 'function med(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$1 ~ /^[0-9]+$/ { s = s " " $2; b = b " " $3; q = q " " $4 }
	END { printf "# medians: stackscope %.0f ns, bpftrace %.0f ns a sample, ratio %.2f; load %s\n", med(s), med(b), med(q), "'"$(cut -d' ' -f1-3 /proc/loadavg)"'" }' "$out/rows"
