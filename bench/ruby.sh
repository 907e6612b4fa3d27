#!/bin/bash
# Ruby unwinding benchmark (issue 15), on Debian's ruby3.1, every measurement in the same run:
#  1. completeness: the share of samples running Ruby code (rb_vm_exec on the stack) whose Ruby
#     chain is exactly <main> -> down x30 with every line exact (bench/rb_deep30.rb), and the
#     share of all the process's samples (start-up and exit included);
#  2. BPF time per sample (the record summary's in-program clock) for that 31-frame Ruby stack
#     against a 30-frame native stack (a C program built here -O2 -fomit-frame-pointer).
# rbspy, the peer Ruby users reach for, is neither in Debian nor on npm: no peer column.
# Every measurement is taken ROUNDS times in alternation; the table gives medians.
# Usage: sudo bench/ruby.sh [ROUNDS] [RB_ITERS]
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
ITERS=${2:-30000000}     # iterations of the Ruby hot loop (~0.5-1 s)
NITERS=${NITERS:-1.2e9}  # iterations of the native hot loop (~0.7 s)
HZ=499
RUBY=/usr/bin/ruby3.1
WL=$PWD/bench/rb_deep30.rb
STACKS="/usr/bin/python3 $PWD/tests/system/pprof_stacks.py"
out=$(mktemp -d /tmp/stackscope-rbbench.XXXXXX)
trap 'rm -rf "$out"' EXIT

[[ $(id -u) -eq 0 ]] || { echo "bench: run as root" >&2; exit 1; }
[[ -x ./stackscope ]] || { echo "bench: build stackscope first (make)" >&2; exit 1; }
[[ -x $RUBY ]] || { echo "bench: $RUBY missing (scripts/setup.sh)" >&2; exit 1; }

line() { grep -n "# $2\$" "$1" | cut -d: -f1; }
L_MAIN=$(line "$WL" CALL_MAIN)
L_REC=$(line "$WL" RECURSE)
L_HOT=$(line "$WL" HOT)
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }

cat >"$out/native30.c" <<'EOF'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long rec30(int n, unsigned long iters)
{
	volatile int pad = n; /* a frame of its own, and no tail call */
	unsigned long r = 0;
	if (n > 1)
		r = rec30(n - 1, iters);
	else
		for (unsigned long i = 0; i < iters; i++)
			sink += i * i;
	return r + pad;
}
int main(int argc, char **argv)
{
	return (int)(rec30(30, argc > 1 ? (unsigned long)strtod(argv[1], 0) : 1000000000UL) & 1);
}
EOF
gcc -O2 -fomit-frame-pointer -o "$out/native30" "$out/native30.c" || exit 1

# pprof_stacks.py lines on stdin -> "total inruby complete"
cat >"$out/complete.py" <<'EOF'
import sys
l_main, l_rec, l_hot = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
want = ["<main>@rb_deep30.rb:%d" % l_main] + ["Object#down@rb_deep30.rb:%d" % l_rec] * 29 + \
       ["Object#down@rb_deep30.rb:%d" % l_hot]
total = inruby = complete = 0
for raw in sys.stdin:
    stack, _, cnt = raw.rstrip("\n").rpartition(" ")
    cnt = int(cnt)
    frames = stack.split(";")
    total += cnt
    if "rb_vm_exec" not in frames:
        continue
    inruby += cnt
    ruby = [f for f in frames if "@" in f]
    complete += cnt * (ruby == want)
print(total, inruby, complete)
EOF
bpf_ns() { awk '/^bpf time/ { print $3 + 0 }' "$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else printf "-" }'; }

declare -A R
for r in $(seq "$ROUNDS"); do
	./stackscope record -F $HZ -o "$out/native.pb.gz" -- "$out/native30" "$NITERS" >/dev/null 2>"$out/native.log"
	R[native.ns]+="$(bpf_ns "$out/native.log") "
	./stackscope record -F $HZ -o "$out/ruby.pb.gz" -- "$RUBY" --disable-gems "$WL" "$ITERS" >/dev/null 2>"$out/ruby.log"
	R[ruby.ns]+="$(bpf_ns "$out/ruby.log") "
	read -r total inruby complete < <($STACKS "$out/ruby.pb.gz" | python3 "$out/complete.py" "$L_MAIN" "$L_REC" "$L_HOT")
	R[ruby.complete]+="$(pct "$complete" "$inruby") "
	R[ruby.all]+="$(pct "$complete" "$total") "
	R[ruby.samples]+="$total "
	echo "round $r: ruby $complete/$inruby complete ($total samples), bpf ns/sample ruby $(bpf_ns "$out/ruby.log") native $(bpf_ns "$out/native.log")" >&2
done

echo "method: $(date -u +%Y-%m-%d), $ROUNDS rounds in alternation, medians; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| workload | complete (of samples in Ruby code) | complete (of all samples) | samples | BPF ns/sample |"
echo "|---|---|---|---|---|"
echo "| Ruby 3.1 (Debian), <main> -> down x30 | $(median <<<"${R[ruby.complete]}") % | $(median <<<"${R[ruby.all]}") % | $(median <<<"${R[ruby.samples]}") | $(median <<<"${R[ruby.ns]}") |"
echo "| native, main -> rec30 x30 | - | - | - | $(median <<<"${R[native.ns]}") |"
