#!/bin/bash
# Allocation profiling overhead (issue 33): the slowdown of a workload under
#   stackscope   stackscope record --alloc -p PID (uprobes on the allocator files the process
#                maps, in that process only; sampled by bytes, mean 512 KiB)
#   heaptrack    Debian's heaptrack (LD_PRELOAD: every call, its own backtrace)
#   memleak      bcc's memleak's user-mode method in bpftrace: uprobes + uretprobes on libc's
#                malloc/calloc/realloc/free in the process (-p), a live map by address and
#                every allocation's stack. (bpfcc-tools' memleak-bpfcc itself cannot run
#                here: bcc compiles at run time and needs kernel headers this kernel lacks;
#                kprobes are absent too, uprobes work.)
# against the workload alone, on:
#   storm    bench/alloc_storm.c: STORM_N malloc/free pairs of 16-255 bytes (~25M pairs/s alone)
#   python   bench/alloc_loop.py: PY_N small dicts and strings (pymalloc; heaptrack and memleak
#            see libc's malloc only, stackscope pymalloc too)
#   sqlite3  sqlite3 :memory: inserting SQL_N rows, indexing and grouping them (a real program)
#   xz       xz -6 -T1 on XZ_MIB MiB of generated text (few, large allocations)
# Each workload writes its pid, waits for a go file (the tool is attached by then: stackscope
# says "recording", the bpftrace script "Attaching", heaptrack is preloaded), then runs; its
# time is its CPU time (user + system) from the go file to its end: the uprobe traps and
# heaptrack's in-process work are in it, the tools' own processes are not (stackscope's is
# given apart), and the load of a shared machine does not inflate it as it does wall time.
# Tools alternate within each round; medians of ROUNDS.
# Then:
#   - the per-call cost of the uprobe path: (storm under stackscope - storm alone) / STORM_N,
#     per malloc+free pair (3 traps: malloc's entry and return, free's entry);
#   - a bystander: the storm run outside the recording while `record --alloc -- sleep` (the
#     probes bound to the command's processes) and `record --alloc -p` (only that process
#     traps) run; with BEFORE=path/to/stackscope also under that build's `-- sleep` (a build
#     whose command probes were on the whole libc file, every process mapping it trapping),
#     the rounds alternating;
#   - --faults: a program touching FAULT_MIB MiB once (one write per page), alone and under
#     record --faults -p PID.
# A round took ~15 min on the shared 2-core VM (load ~20): the tools' start-up, the uprobe
# traps of the storm and the Python loop.
# Usage: sudo bench/alloc.sh [ROUNDS] [bystander]  (bystander: that part only)
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
ONLY=${2:-}
STORM_N=${STORM_N:-200000}
PY_N=${PY_N:-50000}
SQL_N=${SQL_N:-20000}
XZ_MIB=${XZ_MIB:-4}
FAULT_MIB=${FAULT_MIB:-2048}
bench_start alloc 'kill $(jobs -p) 2>/dev/null'
need_program heaptrack "apt-get install heaptrack"
need_program bpftrace "apt-get install bpftrace"
need_program sqlite3 "apt-get install sqlite3"
gcc -O2 -Wall -o "$out/storm" bench/alloc_storm.c || exit 1
LIBC=$(ldd "$out/storm" | awk '/libc\.so/ { print $3 }')
cat >"$out/sql" <<EOF
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $SQL_N)
INSERT INTO t SELECT x, hex(randomblob(16)) FROM c;
CREATE INDEX i ON t(b);
SELECT count(*), sum(length(b)) FROM t GROUP BY a % 100 ORDER BY 1 LIMIT 1;
EOF
python3 -c "
import random
r = random.Random(1)
w = ['alpha', 'beta', 'gamma', 'delta', 'stack', 'scope', 'heap', 'page', 'fault', 'arena']
with open('$out/xz.in', 'w') as f:
    while f.tell() < $XZ_MIB << 20:
        f.write(' '.join(r.choice(w) for _ in range(16)) + ' %d\n' % r.randrange(1 << 30))
"
cat >"$out/memleak.bt" <<EOF
uprobe:$LIBC:malloc { @size[tid] = arg0; }
uprobe:$LIBC:calloc { @size[tid] = arg0 * arg1; }
uprobe:$LIBC:realloc { delete(@live[arg1]); @size[tid] = arg1; }
uretprobe:$LIBC:malloc, uretprobe:$LIBC:calloc, uretprobe:$LIBC:realloc /@size[tid]/ {
	@live[retval] = @size[tid]; @bytes[ustack] = sum(@size[tid]); delete(@size[tid]);
}
uprobe:$LIBC:free { delete(@live[arg0]); }
BEGIN { printf("Attaching\n"); }
EOF

# workload NAME GO: the workload's command line (it writes GO.pid and waits for GO)
workload()
{
	case $1 in
	storm) echo "$out/storm storm $STORM_N $2" ;;
	python) echo "python3 $PWD/bench/alloc_loop.py $PY_N $2" ;;
	sqlite3) echo "$out/storm gate $2 sqlite3 :memory: .read\ $out/sql" ;;
	xz) echo "$out/storm gate $2 xz -6 -T1 -c $out/xz.in" ;;
	touch) echo "$out/storm touch $FAULT_MIB $2" ;;
	esac
}

# run WORKLOAD TOOL -> the workload's CPU seconds from go to its end
run()
{
	local wl=$1 tool=$2 go="$out/go.$1.$2" wpid tpid="" ready="" cmd
	rm -f "$go" "$go.pid"
	cmd=$(workload "$wl" "$go")
	case $tool in
	heaptrack) eval "heaptrack -o $out/ht.$wl $cmd" >"$out/$tool.out" 2>&1 & tpid=$! ;;
	*) eval "$cmd" >"$out/$wl.out" 2>&1 & ;;
	esac
	for _ in $(seq 600); do [[ -s $go.pid ]] && break; sleep 0.05; done
	wpid=$(cat "$go.pid")
	case $tool in
	stackscope) ./stackscope record --alloc -p "$wpid" -o "$out/ss.$wl.pb.gz" 2>"$out/$tool.err" &
		tpid=$! ready=recording ;;
	faults) ./stackscope record --faults -p "$wpid" -o "$out/f.$wl.pb.gz" 2>"$out/$tool.err" &
		tpid=$! ready=recording ;;
	memleak) bpftrace -p "$wpid" "$out/memleak.bt" >"$out/$tool.err" 2>&1 & tpid=$! ready=Attaching ;;
	esac
	if [[ -n $ready ]]; then
		for _ in $(seq 600); do grep -q "$ready" "$out/$tool.err" 2>/dev/null && break; sleep 0.1; done
	fi
	sleep 1
	touch "$go"
	while kill -0 "$wpid" 2>/dev/null; do sleep 0.02; done
	if [[ -n $tpid ]]; then
		[[ $tool != heaptrack ]] && kill -INT "$tpid" 2>/dev/null
		wait "$tpid" 2>/dev/null
	fi
	wait 2>/dev/null
	cat "$go.time"
}

declare -A secs
tools="none stackscope heaptrack memleak"
for r in $(seq "$ROUNDS"); do
	[[ $ONLY == bystander ]] && break
	for wl in storm python sqlite3 xz; do
		for t in $tools; do
			secs[$wl.$t]+="$(run "$wl" "$t") "
		done
	done
	for t in none faults; do
		secs[touch.$t]+="$(run touch "$t") "
	done
done

# bystander: the storm outside any recording, under a `-- sleep` recording, under a -p one
bystander()
{
	local mode=$1 rpid="" spid
	case $mode in
	command) ./stackscope record --alloc -o "$out/by.pb.gz" -- sleep 600 2>"$out/by.err" &
		rpid=$! ;;
	before) "$BEFORE" record --alloc -o "$out/by.pb.gz" -- sleep 600 2>"$out/by.err" &
		rpid=$! ;;
	pid) sleep 600 & spid=$!
		./stackscope record --alloc -p "$spid" -o "$out/by.pb.gz" 2>"$out/by.err" & rpid=$! ;;
	esac
	if [[ -n $rpid ]]; then
		for _ in $(seq 600); do grep -q recording "$out/by.err" 2>/dev/null && break; sleep 0.1; done
		sleep 1
	fi
	rm -f "$out/go.by"
	(sleep 0.5; touch "$out/go.by") &
	"$out/storm" storm "$STORM_N" "$out/go.by"
	cat "$out/go.by.time"
	if [[ -n $rpid ]]; then
		kill -INT "$rpid"
		wait "$rpid" 2>/dev/null
		pkill -P "$rpid" sleep 2>/dev/null
		[[ $mode == pid ]] && kill "$spid" 2>/dev/null
	fi
	wait 2>/dev/null
}
declare -A by
modes="none command pid"
[[ -n ${BEFORE:-} ]] && modes+=" before"
for r in $(seq "$ROUNDS"); do
	for m in $modes; do
		by[$m]+="$(bystander "$m") "
	done
done
if [[ $ONLY == bystander ]]; then
	echo "# bystander storm (N=$STORM_N, not recorded), CPU s, median of $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%F))"
	for m in $modes; do
		echo "$m: $(median <<<"${by[$m]}") (${by[$m]% })"
	done
	exit 0
fi

med() { median <<<"${secs[$1]}"; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
echo "# record --alloc vs heaptrack vs memleak's method (bpftrace), median of $ROUNDS rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%F))"
echo "# the workload's CPU seconds (user + system) from the go file to its end; x = that / alone"
printf '| %-8s | %10s | %18s | %18s | %18s |\n' workload "alone (s)" "stackscope (s, x)" \
	"heaptrack (s, x)" "memleak-bt (s, x)"
for wl in storm python sqlite3 xz; do
	base=$(med "$wl.none")
	printf '| %-8s | %10s |' "$wl" "$base"
	for t in stackscope heaptrack memleak; do
		printf ' %9s %7sx |' "$(med "$wl.$t")" "$(ratio "$(med "$wl.$t")" "$base")"
	done
	echo
done
per=$(echo "scale=3; ($(med storm.stackscope) - $(med storm.none)) * 1000000 / $STORM_N" | bc -l)
echo "per malloc+free pair under stackscope: $per us (3 uprobe traps: $(echo "scale=2; $per / 3" | bc -l) us per trap); storm N=$STORM_N"
echo "bystander storm (not recorded), CPU s: alone $(median <<<"${by[none]}"), while record --alloc -- sleep $(median <<<"${by[command]}"), while record --alloc -p SLEEP $(median <<<"${by[pid]}")"
[[ -n ${BEFORE:-} ]] && echo "bystander storm while the BEFORE build's record --alloc -- sleep: $(median <<<"${by[before]}") CPU s"
echo "--faults: touching $FAULT_MIB MiB once: alone $(med touch.none) s, under record --faults -p $(med touch.faults) s (x$(ratio "$(med touch.faults)" "$(med touch.none)"))"
grep -E '^allocations' "$out/stackscope.err" | sed 's/^/stackscope last run (xz): /'
