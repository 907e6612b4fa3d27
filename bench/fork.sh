#!/bin/bash
# Forked children that never exec (pre-fork servers), side by side in the same run with
# `perf record --call-graph dwarf` (perf's mmap records are synchronous and a forked child
# inherits them, so it is the reference). tests/data/wl_prefork.c forks CHILDREN children one
# after another, each burning MS milliseconds in main -> spawn_workers -> worker_main ->
# chain_a -> chain_b -> chain_c -> hot_leaf; "complete" = a sample of a child in hot_leaf whose
# stack holds worker_main and main (stackscope: the whole chain back to _start). Three rounds.
# Usage: sudo bench/fork.sh [CHILDREN] [MS]
source "$(dirname "$0")/lib.sh"
N=${1:-25}
MS=${2:-150}
bench_start fork
need_fixture W wl_prefork

perf_complete() { # perf.data -> complete/total among samples in hot_leaf
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk '
		function done() { if (n && leaf) { t++; if (w && m) c++ } }
		/^[^ \t]/ { done(); n = ($1 == "wl_prefork"); first = 1; leaf = w = m = 0; next }
		n && first { leaf = ($2 ~ /^hot_leaf/); first = 0 }
		n && $2 ~ /^worker_main/ { w = 1 }
		n && ($2 == "main" || $2 ~ /^main[+]/) { m = 1 }
		END { done(); printf "%d/%d", c, t }'
}

ss_complete() { # folded -> complete/total among samples in hot_leaf
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
	       if (s !~ /^wl_prefork;/ || s !~ /;hot_leaf$/) next
	       t += n
	       if (s ~ /^wl_prefork;_start;__libc_start_main(_impl)?;([^;]*;)?main;spawn_workers;worker_main;chain_a;chain_b;chain_c;hot_leaf$/) c += n }
	     END { printf "%d/%d", c, t }' "$1"
}

echo "forked children: $N x ${MS} ms, no exec, 199 Hz"
printf '%-8s %-22s %-22s\n' round stackscope "perf --call-graph dwarf"
for r in 1 2 3; do
	./stackscope record -F 199 -q -o "$out/s.folded" -- "$W" "$N" "$MS" 2>/dev/null
	perf record -q -F 199 --call-graph dwarf -o "$out/p.data" -- "$W" "$N" "$MS" >/dev/null 2>&1
	printf '%-8s %-22s %-22s\n' "$r" "$(ss_complete "$out/s.folded")" "$(perf_complete "$out/p.data")"
done
