#!/bin/bash
# Exec'd children of a binary the profiler already knows (a build system running its compiler
# again and again), side by side in the same run: stackscope with mappings entered by eBPF at
# exec, the same binary with them turned off (STACKSCOPE_NO_NEW_MAPPINGS=1: userspace enters
# a child's mappings after its exec record, as before), and `perf record --call-graph dwarf`
# (synchronous mmap records: the reference). tests/data/wl_short.c runs N children one after
# another, each burning MS ms in main -> short_work -> short_leaf right after its exec;
# "complete" = a sample of a child in short_work/short_leaf whose stack reaches main and _start.
# Three rounds, 499 Hz. Usage: sudo bench/exec.sh [N] [MS]
source "$(dirname "$0")/lib.sh"
N=${1:-40}
MS=${2:-10}
bench_start exec
need_fixture W wl_short

perf_complete() { # perf.data -> complete/total among the children's samples in short_*
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk '
		function done() { if (n && hot) { t++; if (m && s) c++ } }
		/^[^ \t]/ { done(); n = ($1 == "wl_short"); hot = m = s = 0; next }
		n && $2 ~ /^short_(work|leaf)/ { hot = 1 }
		n && ($2 == "main" || $2 ~ /^main[+]/) { m = 1 }
		n && $2 ~ /^_start/ { s = 1 }
		END { done(); printf "%d/%d", c, t }'
}

ss_complete() { # folded -> complete/total among samples in short_*
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
	       if (s !~ /^wl_short;/ || s !~ /;short_(work|leaf)(;|$)/) next
	       t += n
	       if (s ~ /^wl_short;_start;__libc_start_main(_impl)?;([^;]*;)?main;short_work/) c += n }
	     END { printf "%d/%d", c, t }' "$1"
}

echo "exec'd children of a known binary: $N x ${MS} ms, 499 Hz"
printf '%-6s %-16s %-22s %-22s\n' round stackscope "userspace-only maps" "perf --call-graph dwarf"
for r in 1 2 3; do
	./stackscope record -F 499 -q -o "$out/s.folded" -- "$W" "$N" "$MS" 2>/dev/null
	STACKSCOPE_NO_NEW_MAPPINGS=1 ./stackscope record -F 499 -q -o "$out/o.folded" -- \
		"$W" "$N" "$MS" 2>/dev/null
	perf record -q -F 499 --call-graph dwarf -o "$out/p.data" -- "$W" "$N" "$MS" \
		>/dev/null 2>&1
	printf '%-6s %-16s %-22s %-22s\n' "$r" "$(ss_complete "$out/s.folded")" \
		"$(ss_complete "$out/o.folded")" "$(perf_complete "$out/p.data")"
done
