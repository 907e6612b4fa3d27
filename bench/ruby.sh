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
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
ITERS=${2:-30000000}     # iterations of the Ruby hot loop (~0.5-1 s)
NITERS=${NITERS:-1.2e9}  # iterations of the native hot loop (~0.7 s)
HZ=499
RUBY=/usr/bin/ruby3.1
bench_start rbbench
need_program "$RUBY" "scripts/setup.sh"

deep_workload rb_deep30.rb

build_native30 "$out" || exit 1

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

declare -A R
for r in $(seq "$ROUNDS"); do
	./stackscope record -F $HZ -o "$out/native.pb.gz" -- "$out/native30" "$NITERS" >/dev/null 2>"$out/native.log"
	R[native.ns]+="$(record_bpf_ns "$out/native.log") "
	./stackscope record -F $HZ -o "$out/ruby.pb.gz" -- "$RUBY" --disable-gems "$WL" "$ITERS" >/dev/null 2>"$out/ruby.log"
	R[ruby.ns]+="$(record_bpf_ns "$out/ruby.log") "
	read -r total inruby complete < <($STACKS "$out/ruby.pb.gz" | python3 "$out/complete.py" "$L_MAIN" "$L_REC" "$L_HOT")
	R[ruby.complete]+="$(pct "$complete" "$inruby") "
	R[ruby.all]+="$(pct "$complete" "$total") "
	R[ruby.samples]+="$total "
	echo "round $r: ruby $complete/$inruby complete ($total samples), bpf ns/sample ruby $(record_bpf_ns "$out/ruby.log") native $(record_bpf_ns "$out/native.log")" >&2
done

echo "method: $(date -u +%Y-%m-%d), $ROUNDS rounds in alternation, medians; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| workload | complete (of samples in Ruby code) | complete (of all samples) | samples | BPF ns/sample |"
echo "|---|---|---|---|---|"
echo "| Ruby 3.1 (Debian), <main> -> down x30 | $(median <<<"${R[ruby.complete]}") % | $(median <<<"${R[ruby.all]}") % | $(median <<<"${R[ruby.samples]}") | $(median <<<"${R[ruby.ns]}") |"
echo "| native, main -> rec30 x30 | - | - | - | $(median <<<"${R[native.ns]}") |"
