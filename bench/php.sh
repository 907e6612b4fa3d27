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
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
HZ=499
PHP=/usr/bin/php8.2
WL=$PWD/bench/php_deep.php
STACKS="/usr/bin/python3 $PWD/tests/system/pprof_stacks.py"
out=$(mktemp -d /tmp/stackscope-phpbench.XXXXXX)
trap 'rm -rf "$out"' EXIT

[[ $(id -u) -eq 0 ]] || { echo "bench: run as root" >&2; exit 1; }
[[ -x ./stackscope ]] || { echo "bench: build stackscope first (make)" >&2; exit 1; }
[[ -x $PHP ]] || { echo "bench: $PHP missing (scripts/setup.sh installs php8.2-cli)" >&2; exit 1; }

line() { grep -n "// $2\$" "$1" | cut -d: -f1; }
L_MAIN=$(line "$WL" CALL_MAIN)
L_REC=$(line "$WL" RECURSE)
L_HOT=$(line "$WL" HOT)
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }

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
	ns=$(awk '/^bpf time/ { print $3 }' "$out/$name.err")
	echo "$($STACKS "$out/$name.pb.gz" | complete "$depth") ${ns:-0}"
}

pct() { awk -v c="$1" -v t="$2" 'BEGIN { printf "%.1f", t ? 100 * c / t : 0 }'; }
NATIVE=${BUILD:-build}/fixtures/wl_recurse
JIT_ON="-d opcache.enable_cli=1 -d opcache.jit=tracing -d opcache.jit_buffer_size=32M"
JIT=
declare -a c30 v30 ns30 ns1 ns200 nsnat cshort vshort cjit vjit nsjit
for ((r = 0; r < ROUNDS; r++)); do
	JIT=$JIT_ON
	read -r t c v ns < <(run jit30 30 1)
	cjit+=("$(pct "$c" "$t")") vjit+=("$(pct "$c" "$v")") nsjit+=("$ns")
	JIT=
	read -r t c v ns < <(run deep30 30 1)
	c30+=("$(pct "$c" "$t")") v30+=("$(pct "$c" "$v")") ns30+=("$ns")
	read -r t c v ns < <(run deep1 1 1)
	ns1+=("$ns")
	read -r t c v ns < <(run deep200 200 1)
	ns200+=("$ns")
	if [[ -x $NATIVE ]]; then
		./stackscope record -F $HZ -o "$out/native.pb.gz" -- "$NATIVE" 1 >/dev/null 2>"$out/native.err"
		nsnat+=("$(awk '/^bpf time/ { print $3 }' "$out/native.err")")
	fi
	tt=0 cc=0 vv=0
	for ((k = 0; k < 5; k++)); do
		read -r t c v ns < <(run short 30 0.15)
		tt=$((tt + t)) cc=$((cc + c)) vv=$((vv + v))
	done
	cshort+=("$(pct "$cc" "$tt")") vshort+=("$(pct "$cc" "$vv")")
done
echo "method: $(date -u +%F' '%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, medians; $($PHP -r 'echo PHP_VERSION;')"
echo "| PHP | complete (1 s): all samples / in execute_ex | 0.15 s processes: all / in execute_ex | BPF µs/sample: 2 / 31 / 201 PHP frames | BPF µs/sample: 305 native frames |"
echo "|---|---|---|---|---|"
printf '| %s | %s %% / %s %% | %s %% / %s %% | %.1f / %.1f / %.1f | %s |\n' "$($PHP -r 'echo PHP_VERSION;')" \
	"$(echo "${c30[*]}" | median)" "$(echo "${v30[*]}" | median)" \
	"$(echo "${cshort[*]}" | median)" "$(echo "${vshort[*]}" | median)" \
	"$(echo "$(echo "${ns1[*]}" | median) / 1000" | bc -l)" \
	"$(echo "$(echo "${ns30[*]}" | median) / 1000" | bc -l)" \
	"$(echo "$(echo "${ns200[*]}" | median) / 1000" | bc -l)" \
	"$( ((${#nsnat[@]})) && printf '%.1f' "$(echo "$(echo "${nsnat[*]}" | median) / 1000" | bc -l)" || echo "- (make fixtures)")"
echo
echo "| PHP, opcache.jit=tracing | complete (1 s): all samples / in execute_ex | BPF µs/sample: 31 PHP frames |"
echo "|---|---|---|"
printf '| %s | %s %% / %s %% | %.1f |\n' "$($PHP -r 'echo PHP_VERSION;')" \
	"$(echo "${cjit[*]}" | median)" "$(echo "${vjit[*]}" | median)" \
	"$(echo "$(echo "${nsjit[*]}" | median) / 1000" | bc -l)"
