#!/bin/bash
# Unwind completeness and cost per workload, side by side in the same run with
# `perf record --call-graph dwarf` and `perf record -g` (frame pointers).
# For each workload (built -O2 -fomit-frame-pointer from tests/data), each tool records the
# workload's own process for DUR seconds at 499 Hz; "complete" = the sample's stack reaches
# main (the workloads' chains all start there). stackscope's BPF time per sample comes from
# kernel.bpf_stats_enabled; perf's data volume is the size of perf.data.
# Usage: sudo bench/unwind.sh [DURATION_S]
source "$(dirname "$0")/lib.sh"
DUR=${1:-4}
F=$BUILD/fixtures
bench_out unwind
need_root

# perf script -> fraction of samples of the workload whose stack contains main
perf_complete() { # perf.data comm
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk -v comm="$2" '
		/^[^ \t]/ { if (n) { t++; if (ok) c++ } n = ($1 == comm); ok = 0; next }
		n && ($2 == "main" || $2 ~ /^main[+]/) { ok = 1 }
		END { if (n) { t++; if (ok) c++ } printf "%d/%d", c, t }'
}

sysctl -q kernel.bpf_stats_enabled=1
printf '%-14s %-22s %-22s %-22s %10s %12s\n' workload stackscope "perf --call-graph dwarf" "perf -g" \
	"bpf_ns" "dwarf_MB"
for wl in wl_chain_nofp wl_qsort wl_recurse wl_cxx wl_signal wl_rust; do
	[[ -x $F/$wl ]] || continue
	./stackscope record -F 499 -o "$out/s.folded" -- "$F/$wl" "$DUR" 2>"$out/s.log" >/dev/null
	s=$(awk -v wl="$wl" '{ n = $NF; t += n; if ($0 ~ /(^|;)main;/ && $0 !~ /\[unwind|\[truncated/) c += n }
		END { printf "%d/%d", c, t }' "$out/s.folded")
	bpf=$(record_bpf_ns "$out/s.log")
	perf record -q -F 499 --call-graph dwarf -o "$out/d.data" -- "$F/$wl" "$DUR" >/dev/null 2>&1
	d=$(perf_complete "$out/d.data" "$wl")
	dmb=$(du -m "$out/d.data" | cut -f1)
	perf record -q -F 499 -g -o "$out/g.data" -- "$F/$wl" "$DUR" >/dev/null 2>&1
	g=$(perf_complete "$out/g.data" "$wl")
	frac_pct() { awk -F/ '{ printf "%s (%.1f%%)", $0, $2 ? 100 * $1 / $2 : 0 }' <<<"$1"; }
	printf '%-14s %-22s %-22s %-22s %10s %12s\n' "$wl" "$(frac_pct "$s")" "$(frac_pct "$d")" "$(frac_pct "$g")" \
		"${bpf:-?}" "$dmb"
done
sysctl -q kernel.bpf_stats_enabled=0

# Short-lived processes of a binary never seen before: 30 runs of 120 ms, each a fresh copy
# of wl_chain_nofp (new inode, new file), recorded system-wide at 199 Hz.
tmp=$out/short
mkdir -p "$tmp"
./stackscope record -q -F 199 -d 8 -o "$out/short.folded" 2>/dev/null &
rec=$!
sleep 1.5
for i in $(seq 30); do
	cp "$F/wl_chain_nofp" "$tmp/wlshort_$i"
	"$tmp/wlshort_$i" 0.12
done
wait $rec
awk '$1 ~ /^wlshort_/ { n = $NF; t += n; if ($0 ~ /main;chain_a;chain_b;chain_c;hot_leaf/ && $0 !~ /\[unwind|\[truncated/) c += n }
	END { printf "short-lived (30 new binaries x 120 ms): %d/%d samples complete (%.1f%%)\n", c, t, t ? 100 * c / t : 0 }' "$out/short.folded"
