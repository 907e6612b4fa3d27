#!/bin/bash
# PHP frames benchmark (issue 16): PHP 8.2 (Debian php8.2-cli) recorded at 499 Hz.
#  1. completeness: the share of samples whose PHP chain is exactly {main} -> down x DEPTH with
#     the leaf at the hot line (bench/php_deep.php), DEPTH 30, for a 1 s run and for 0.15 s
#     runs (a process whose start-up is a larger share);
#  2. the same with opcache's JIT on (tracing): the leaf at its hot line or without a line;
#  3. BPF time per sample (the sampler's own clock, `bpf time` of the record summary) with 2,
#     31 and 201 PHP frames on the same workload: the cost of the PHP walk per frame; next to
#     a native stack of ~300 frames (build/fixtures/wl_recurse, `make fixtures`) in the same run.
# phpspy, the peer PHP users reach for, is neither a Debian package nor on npm:
# no peer column. Every measurement is taken ROUNDS times in alternation; medians.
# Usage: sudo bench/php.sh [ROUNDS]
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
HZ=499
PHP=/usr/bin/php8.2
WL=$PWD/bench/php_deep.php
bench_out phpbench

need_root
need_stackscope
need_program "$PHP" "scripts/setup.sh installs php8.2-cli"

deep_lines "$WL"

# complete DEPTH < stacks: "samples complete in_vm" over pprof_stacks.py lines (in_vm: samples
# with execute_ex, i.e. not in PHP's start-up or exit). With the JIT ($JIT set) the leaf may
# also come without a line: JIT code saves its opline only before calls out (bpf/interp/php/walk.h).
complete()
{
	local depth=$1 chain="{main}@php_deep.php:$L_MAIN" i
	for ((i = 1; i < depth; i++)); do chain+=";down@php_deep.php:$L_REC"; done
	chain+=";down@php_deep.php"
	awk -v chain="$chain" -v hot=":$L_HOT" -v jit="${JIT:+1}" '
		function has(c) { return index($0, ";execute_ex;" c " ") || index($0, ";execute_ex;" c ";") }
		{ n = $NF; total += n; if (index($0, ";execute_ex;")) vm += n
		  if (has(chain hot) || (jit && has(chain))) ok += n }
		END { print total + 0, ok + 0, vm + 0 }'
}

# run NAME DEPTH SECS: one recording; prints "samples complete in_vm bpf_ns" ($JIT: PHP's
# options turning opcache's JIT on)
run()
{
	local name=$1 depth=$2 secs=$3 ns
	./stackscope record -F $HZ -o "$out/$name.pb.gz" -- $PHP $JIT "$WL" "$depth" "$secs" \
		>/dev/null 2>"$out/$name.err"
	ns=$(record_bpf_ns "$out/$name.err")
	echo "$($STACKS "$out/$name.pb.gz" | complete "$depth") ${ns:-0}"
}

JIT_ON="-d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=32M"
JIT=
declare -a c30 v30 ns30 ns1 ns200 nsnat cshort vshort cjit vjit nsjit
for ((r = 0; r < ROUNDS; r++)); do
	JIT=$JIT_ON
	read -r t c v ns < <(run jit30 30 1)
	cjit+=("$(pct "$c" "$t")") vjit+=("$(pct "$c" "$v")") nsjit+=("$ns")
	JIT=
	deep_round
done
echo "method: $(date -u +%F' '%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, medians; $($PHP -r 'echo PHP_VERSION;')"
echo "| PHP | complete (1 s): all samples / in execute_ex | 0.15 s processes: all / in execute_ex | BPF µs/sample: 2 / 31 / 201 PHP frames | BPF µs/sample: 305 native frames |"
echo "|---|---|---|---|---|"
deep_row "$($PHP -r 'echo PHP_VERSION;')"
echo
echo "| PHP, opcache.jit=tracing | complete (1 s): all samples / in execute_ex | BPF µs/sample: 31 PHP frames |"
echo "|---|---|---|"
printf '| %s | %s %% / %s %% | %.1f |\n' "$($PHP -r 'echo PHP_VERSION;')" \
	"$(echo "${cjit[*]}" | median)" "$(echo "${vjit[*]}" | median)" \
	"$(echo "$(echo "${nsjit[*]}" | median) / 1000" | bc -l)"
