#!/bin/bash
# Shared by the benchmarks (bench/*.sh), each of which starts with
#     source "$(dirname "$0")/lib.sh"
# which sets the shell's strict mode (set -uo pipefail; a benchmark that wants -e adds it) and
# makes the repository's root the working folder. Then: the checks a benchmark starts with (root, what it runs), its scratch
# folder, medians and percentages, the marked lines of a workload's source, the rounds and table
# row the Perl and PHP benchmarks share, and the native workload the runtime benchmarks set
# their stacks beside (bench/native30.c).

set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD=${BUILD:-build}

# STACKS FILE: a pprof file's stacks as folded lines, root first (tests/system/pprof_stacks.py:
# interpreter frames "func@file:line", native frames "func"); a benchmark may add options.
STACKS="/usr/bin/python3 $PWD/tests/system/pprof_stacks.py"

# need_root [NAME]: ends the benchmark, saying "NAME: run as root" (NAME: bench), unless it
# runs as root (eBPF, perf).
need_root() { [[ $(id -u) -eq 0 ]] || { echo "${1:-bench}: run as root" >&2; exit 1; }; }

# need_stackscope: ends the benchmark unless ./stackscope is built.
need_stackscope() { [[ -x ./stackscope ]] || { echo "bench: build stackscope first (make)" >&2; exit 1; }; }

# need_program PROGRAM HINT: ends the benchmark, saying "bench: PROGRAM missing (HINT)", unless
# PROGRAM (a path, or a command on PATH) can be run.
need_program() { command -v "$1" >/dev/null || { echo "bench: $1 missing ($2)" >&2; exit 1; }; }

# need_fixture VAR NAME: VAR, the path of the built fixture $BUILD/fixtures/NAME (tests/data/);
# ends the benchmark unless it is built (make fixtures).
need_fixture()
{
	printf -v "$1" '%s' "$BUILD/fixtures/$2"
	need_program "${!1}" "make fixtures"
}

# bench_out NAME [COMMANDS]: out, a new folder /tmp/stackscope-NAME.XXXXXX for the benchmark's
# files, removed at exit after COMMANDS (the benchmark's own clean-up, e.g. stopping its
# background jobs); KEEP=1 keeps it.
bench_out()
{
	out=$(mktemp -d "/tmp/stackscope-$1.XXXXXX") || exit 1
	# shellcheck disable=SC2064 # COMMANDS and the folder's name are fixed here, on purpose
	trap "${2:+$2; }[[ -n \${KEEP:-} ]] || rm -rf '$out'" EXIT
}

# bench_start NAME [COMMANDS]: the start of a benchmark that runs ./stackscope: ends it unless
# it runs as root with ./stackscope built, then bench_out NAME [COMMANDS].
bench_start()
{
	need_root
	need_stackscope
	bench_out "$@"
}

# stop_pids: kills the background processes whose pids the benchmark put in the array pids,
# and waits for them (for bench_out's COMMANDS).
stop_pids() { ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }

# store_day_sources SECS: what bench/store.sh and bench/serve.sh build a day from: $out/store_fill
# (bench/store_fill.c) and, in $out/real, the pprof files of the agent's default data (5 s
# intervals) recording the box for SECS s with build/fixtures/wl_chain_nofp on one core;
# n_real, their count. Under set -e, fails as gcc does.
store_day_sources()
{
	mkdir -p "$out/real"
	chmod 700 "$out/real"
	gcc -std=gnu17 -O2 -g -D_GNU_SOURCE -Isrc -I"$BUILD" bench/store_fill.c \
		"$BUILD/libstackscope.a" -lsqlite3 -lbpf -ldw -ldebuginfod -lelf -lcurl -lcrypto \
		-llzma -lz -liberty -lm -lpthread -lstdc++ -o "$out/store_fill"
	"$BUILD/fixtures/wl_chain_nofp" "$(($1 + 8))" >/dev/null &
	timeout -s INT "$1" ./stackscope agent --interval 5 --output-dir "$out/real" \
		--cache-dir "" 2>"$out/agent.err" || true
	n_real=$(ls "$out/real" | wc -l)
}

# store_day_heading TITLE [DETAIL]: the first lines of store.sh's and serve.sh's report: TITLE,
# when, the CPUs and n_real; the day in $out/day.db (its samples and sample rows, then DETAIL);
# the load average now.
store_day_heading()
{
	local samples rows
	samples=$(sqlite3 "$out/day.db" 'SELECT sum(total) FROM intervals')
	rows=$(sqlite3 "$out/day.db" 'SELECT count(*) FROM samples')
	echo "# $1, $(date -u '+%F %H:%M') UTC, $(nproc) CPUs; $n_real real 5 s intervals replayed"
	echo "day: 17280 intervals, $samples samples, $rows sample rows${2:+; $2}"
	echo "load average at the end: $(cut -d' ' -f1 /proc/loadavg)"
}

# timed_runs N COMMAND...: runs COMMAND N times, its output thrown away; prints the wall,
# user and system seconds of each run, a line each.
timed_runs()
{
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		/usr/bin/time -f '%e %U %S' -o "$out/time" "$@" >/dev/null 2>&1
		tail -1 "$out/time"
	done
}

# perf_stacks PERF_DATA: the samples of a `perf record -g` file as stacks, one a line, root
# first, frames "symbol+offset" separated by ";" (a ";" in a symbol becomes ":").
perf_stacks()
{
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk '
		/^[^ \t]/ { if (st != "") print st; st = ""; next }
		NF >= 2 { $1 = ""; sub(/^ /, ""); f = $0; gsub(/;/, ":", f); st = (st == "") ? f : f ";" st }
		END { if (st != "") print st }'
}

# median: the median of the numbers on stdin, separated by spaces or newlines (empty ones are
# passed over); of an even count the lower middle one; "-" when there is none.
median() { tr ' ' '\n' | awk 'NF { print $1 }' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }

# line FILE MARK: the numbers of the lines of FILE (a workload's source) that end in the
# comment "// MARK" or "# MARK", joined by ",".
line() { grep -nE "(//|#) $2\$" "$1" | cut -d: -f1 | paste -sd,; }

# pct PART WHOLE: PART as a percentage of WHOLE, one decimal; "-" when WHOLE is not above 0.
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else printf "-" }'; }

# record_bpf_ns ERRFILE: the BPF time per sample (ns) in the summary `stackscope record` wrote
# to ERRFILE (its "bpf time" line); nothing when there is none.
record_bpf_ns() { awk '/^bpf time/ { print $3 + 0 }' "$1"; }

# deep_workload NAME: WL, the path of the deep workload bench/NAME (bench/*_deep*), and L_MAIN,
# L_REC and L_HOT, its marked lines: its first call into the recursion (CALL_MAIN), the
# recursive call (RECURSE), the hot loop (HOT).
deep_workload()
{
	WL=$PWD/bench/$1
	L_MAIN=$(line "$WL" CALL_MAIN)
	L_REC=$(line "$WL" RECURSE)
	L_HOT=$(line "$WL" HOT)
}

# deep_chain FIRST FRAME DEPTH LEAF: FIRST, DEPTH - 1 times FRAME, then LEAF, joined by ";" (the
# call chain of a deep workload, in pprof_stacks.py's frames).
deep_chain()
{
	local chain=$1 i
	for ((i = 1; i < $3; i++)); do chain+=";$2"; done
	echo "$chain;$4"
}

# deep_complete VM_FRAME CHAIN...: "samples complete in_vm" over pprof_stacks.py lines on stdin:
# in_vm, the samples with VM_FRAME (the interpreter's loop) on their stack; complete, those where
# VM_FRAME is followed by one of the CHAINs, whole, down to the leaf.
deep_complete()
{
	local vm=$1
	shift
	awk -v vm=";$vm;" -v chains="$(printf '%s\n' "$@")" '
		BEGIN { k = split(chains, chain, "\n") }
		{ n = $NF; total += n }
		index($0, vm) { in_vm += n
			for (i = 1; i <= k; i++)
				if (index($0, vm chain[i] " ") || index($0, vm chain[i] ";")) { ok += n; break } }
		END { print total + 0, ok + 0, in_vm + 0 }'
}

# deep_run NAME DEPTH SECS COMMAND...: one recording at $HZ of `COMMAND $WL DEPTH SECS` into
# $out/NAME.pb.gz; prints the benchmark's `complete DEPTH` of its stacks and the BPF ns per
# sample (0 when the summary has none): "samples complete in_vm bpf_ns" for deep_round.
deep_run()
{
	local name=$1 depth=$2 secs=$3 ns
	shift 3
	./stackscope record -F $HZ -o "$out/$name.pb.gz" -- "$@" "$WL" "$depth" "$secs" \
		>/dev/null 2>"$out/$name.err"
	ns=$(record_bpf_ns "$out/$name.err")
	echo "$($STACKS "$out/$name.pb.gz" | complete "$depth") ${ns:-0}"
}

# deep_round: one round of perl.sh's and php.sh's measurements, with their `run NAME DEPTH SECS`
# (deep_run with their interpreter; one recording: "samples complete in_vm bpf_ns"); appends to their arrays c30, v30, ns30
# (DEPTH 30 for 1 s: complete of all samples, of those in the VM, BPF ns/sample), ns1, ns200
# (DEPTH 1 and 200), nsnat (build/fixtures/wl_recurse's ~300 native frames, when built) and
# cshort, vshort (five runs of 0.15 s, summed).
deep_round()
{
	local t c v ns tt=0 cc=0 vv=0 k native=${BUILD:-build}/fixtures/wl_recurse
	read -r t c v ns < <(run deep30 30 1)
	c30+=("$(pct "$c" "$t")") v30+=("$(pct "$c" "$v")") ns30+=("$ns")
	read -r t c v ns < <(run deep1 1 1)
	ns1+=("$ns")
	read -r t c v ns < <(run deep200 200 1)
	ns200+=("$ns")
	if [[ -x $native ]]; then
		./stackscope record -F $HZ -o "$out/native.pb.gz" -- "$native" 1 >/dev/null 2>"$out/native.err"
		nsnat+=("$(record_bpf_ns "$out/native.err")")
	fi
	for ((k = 0; k < 5; k++)); do
		read -r t c v ns < <(run short 30 0.15)
		tt=$((tt + t)) cc=$((cc + c)) vv=$((vv + v))
	done
	cshort+=("$(pct "$cc" "$tt")") vshort+=("$(pct "$cc" "$vv")")
}

# median_us NS...: the median of the nanoseconds NS in microseconds, one decimal
median_us() { printf '%.1f' "$(echo "$(median <<<"$*") / 1000" | bc -l)"; }

# deep_row LABEL: the table row of what deep_round gathered over the rounds (medians)
deep_row()
{
	printf '| %s | %s %% / %s %% | %s %% / %s %% | %s / %s / %s | %s |\n' "$1" \
		"$(median <<<"${c30[*]}")" "$(median <<<"${v30[*]}")" \
		"$(median <<<"${cshort[*]}")" "$(median <<<"${vshort[*]}")" \
		"$(median_us "${ns1[@]}")" "$(median_us "${ns30[@]}")" "$(median_us "${ns200[@]}")" \
		"$( ((${#nsnat[@]})) && median_us "${nsnat[@]}" || echo "- (make fixtures)")"
}

# build_native30 DIR: DIR/native30 from bench/native30.c, built -O2 -fomit-frame-pointer
# (main -> rec30() 30 noinline frames -> a hot loop; argv[1]: the loop's iterations). Fails
# as gcc does.
build_native30() { gcc -O2 -fomit-frame-pointer -o "$1/native30" bench/native30.c; }
