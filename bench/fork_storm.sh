#!/bin/bash
# A fork storm next to a busy workload: can 2,000 short processes in 10 s (each one new to
# stackscope: new pid, mappings to read, samples that want a deferred unwind) flood the ring
# buffer or the deferral budget at the expense of a long-running workload? System-wide
# `stackscope record -F 199 -d 12` while tests/data/wl_chain_nofp burns one core in main ->
# chain_a -> chain_b -> chain_c -> hot_leaf (no frame pointers) and, in the "storm" runs, a
# launcher starts /bin/true 2,000 times over 10 s (20 batches of 100, one batch every 0.5 s).
# Reported per run: the workload's samples in hot_leaf and the share complete back to _start;
# samples lost (ring buffer full) and the deferral counters from record's summary. Rounds
# alternate quiet / storm / storm with deferred unwinding off (STACKSCOPE_DEFER=0).
# Usage: sudo bench/fork_storm.sh [ROUNDS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
bench_out storm 'kill $(jobs -p) 2>/dev/null'
need_root
need_fixture W wl_chain_nofp

storm() { # 2,000 short processes in 10 s
	for _ in $(seq 20); do
		for _ in $(seq 100); do /bin/true; done
		sleep 0.5
	done
}

complete() { # folded -> "complete/total" of the workload's samples in hot_leaf
	awk '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
	       if (s !~ /^wl_chain_nofp;/ || s !~ /;hot_leaf$/) next
	       t += n
	       if (s ~ /^wl_chain_nofp;_start;__libc_start_main(_impl)?;([^;]*;)?main;chain_a;chain_b;chain_c;hot_leaf$/) c += n }
	     END { printf "%d/%d", c, t }' "$1"
}

run() { # name storm(0/1) [STACKSCOPE_DEFER value]
	local name=$1 f=$out/$1.folded
	"$W" 16 >/dev/null &
	sleep 1
	STACKSCOPE_DEFER=${3:-1} ./stackscope record -F 199 -d 12 -o "$f" 2>"$out/$name.err" &
	local rec=$!
	sleep 1.5 # the start-up scan
	if [[ $2 == 1 ]]; then storm; else sleep 10; fi
	wait $rec
	wait
	local lost deferred
	lost=$(sed -n 's/^lost samples *\([0-9]\+\).*/\1/p' "$out/$name.err")
	deferred=$(sed -n 's/^deferred *//p' "$out/$name.err")
	printf '%-8s %-14s %-6s %s\n' "$name" "$(complete "$f")" "${lost:-?}" "${deferred:-no deferral}"
}

echo "fork storm: 2,000 x /bin/true in 10 s next to wl_chain_nofp, 199 Hz, $(date -u +%F)"
printf '%-8s %-14s %-6s %s\n' run "workload" lost "deferred (record's summary)"
for r in $(seq "$ROUNDS"); do
	run "quiet$r" 0
	run "storm$r" 1
	run "nodefer$r" 1 0
done
