#!/bin/bash
# Node.js (V8) lines, columns and stub frames (issue 12), this build against PEER (a stackscope
# built at another commit: the column's cost and the fixes' effect), every measurement in the
# same run, ROUNDS rounds in alternation, medians:
#  1. lines under a moving GC: PROCS node processes, two at a time, each PROC_SECS s of
#     bench/node_gc_chain.js with a 1 MiB young generation (scavenges from the start, while
#     the script's source is still young): the share of samples in gamma whose three JS
#     frames (alpha, beta, gamma) all have a line, and the samples with none;
#  2. the pprof file of that recording: size, Locations, Lines with a column;
#  3. bench/node_regexp.js (a backtracking regular expression, compiled by V8): the share of
#     the samples in code of no JS function named [v8] RegExp code (not [v8: stub]).
# Usage: sudo [PEER=path/to/another/stackscope] [PROCS=12] [PROC_SECS=1.5] \
#            bench/node_columns.sh [ROUNDS]        (without PEER: this build's column alone)
source "$(dirname "$0")/lib.sh"
PEER=${PEER:-}
ROUNDS=${1:-3}
PROCS=${PROCS:-12}
PROC_SECS=${PROC_SECS:-1.5}
HZ=999
NODE=/usr/bin/node
bench_start colbench
[[ -z $PEER || -x $PEER ]] || { echo "bench: PEER $PEER is not executable" >&2; exit 1; }
need_program "$NODE" "scripts/setup.sh"

for k in $(seq 1 $PROCS); do
	cp bench/node_gc_chain.js "$out/gc$k.js"
done
cp bench/node_regexp.js "$out/re.js"
gc_run="for k in \$(seq 1 2 $PROCS); do $NODE --max-semi-space-size=1 $out/gc\$k.js $PROC_SECS & "
gc_run+="$NODE --max-semi-space-size=1 $out/gc\$((k + 1)).js $PROC_SECS; wait; done"
gc_secs=$(awk -v p=$PROCS -v s=$PROC_SECS 'BEGIN { print int(p / 2 * (s + 0.5)) + 2 }')

# pprof facts: size, Locations, Lines with a column (field 3 of Line)
pprof_facts()
{
	python3 - "$1" <<'EOP'
import gzip, os, sys
sys.path.insert(0, "tests/system")
from pprof_stacks import fields
data = open(sys.argv[1], "rb").read()
raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
locs = cols = 0
for num, wt, v in fields(raw):
    if num == 4:
        locs += 1
        for n2, w2, v2 in fields(v):
            if n2 == 4 and any(n3 == 3 for n3, w3, v3 in fields(v2)):
                cols += 1
print(os.path.getsize(sys.argv[1]), locs, cols)
EOP
}

declare -A lined nolines size locs cols named
for r in $(seq 1 "$ROUNDS"); do
	for who in ${PEER:+peer} this; do
		bin=./stackscope
		[[ $who == peer ]] && bin=$PEER
		"$bin" record -F $HZ -d "$gc_secs" -o "$out/gc.pb.gz" -- /bin/bash -c "$gc_run" \
			>/dev/null 2>"$out/gc.err"
		$STACKS "$out/gc.pb.gz" >"$out/gc.stacks"
		read -r all good none < <(awk '/;gamma@gc[0-9]+\.js/ {
				n = $NF; all += n
				if ($0 ~ /;alpha@gc[0-9]+\.js:[0-9]+;beta@gc[0-9]+\.js:[0-9]+;gamma@gc[0-9]+\.js:[0-9]+/) good += n
				if ($0 ~ /;alpha@gc[0-9]+\.js;beta@gc[0-9]+\.js;gamma@gc[0-9]+\.js(;| )/) none += n
			} END { print all + 0, good + 0, none + 0 }' "$out/gc.stacks")
		lined[$who]+=" $(awk -v g="$good" -v a="$all" 'BEGIN { printf "%.2f", a ? 100 * g / a : 0 }')"
		nolines[$who]+=" $none"
		read -r s l c < <(pprof_facts "$out/gc.pb.gz")
		size[$who]+=" $s"
		locs[$who]+=" $l"
		cols[$who]+=" $c"
		"$bin" record -F 499 -d 4 -o "$out/re.pb.gz" -- $NODE "$out/re.js" 5 >/dev/null 2>&1
		$STACKS "$out/re.pb.gz" >"$out/re.stacks"
		read -r jit ok < <(awk '/;matchAll@re\.js/ && /(\[v8\] RegExp code|\[v8: stub\])/ {
				n = $NF; jit += n; if ($0 ~ /\[v8\] RegExp code/) ok += n
			} END { print jit + 0, ok + 0 }' "$out/re.stacks")
		named[$who]+=" $(awk -v g="$ok" -v a="$jit" 'BEGIN { printf "%.1f", a ? 100 * g / a : 0 }')"
		echo "round $r $who: gc lines $good/$all (none $none), pprof $s B $l locations $c with a column; regexp named $ok/$jit" >&2
	done
done
printf '%-44s %12s %12s\n' "median of $ROUNDS rounds" "peer" "this"
for m in "lined:gamma samples with all 3 JS lines (%)" "nolines:samples with no JS line at all" \
	"size:pprof bytes (moving-GC recording)" "locs:pprof Locations" \
	"cols:pprof Lines with a column" "named:regexp JIT frames named (%)"; do
	key=${m%%:*}
	declare -n arr=$key
	printf '%-44s %12s %12s\n' "${m#*:}" "$(median <<<"${arr[peer]:-}")" "$(median <<<"${arr[this]}")"
	unset -n arr
done
