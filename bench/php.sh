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
bench_start phpbench
need_program "$PHP" "scripts/setup.sh installs php8.2-cli"

deep_workload php_deep.php

# complete DEPTH < stacks: "samples complete in_vm" over pprof_stacks.py lines (in_vm: samples
# with execute_ex, i.e. not in PHP's start-up or exit). With the JIT ($JIT set) the leaf may
# also come without a line: JIT code saves its opline only before calls out (bpf/interp/php/walk.h).
complete()
{
	local chain
	chain=$(deep_chain "{main}@php_deep.php:$L_MAIN" "down@php_deep.php:$L_REC" "$1" down@php_deep.php)
	deep_complete execute_ex "$chain:$L_HOT" ${JIT:+"$chain"}
}

# run NAME DEPTH SECS: one recording; prints "samples complete in_vm bpf_ns" ($JIT: PHP's
# options turning opcache's JIT on)
# shellcheck disable=SC2086 # $JIT: words
run() { deep_run "$@" $PHP $JIT; }

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
